//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// reportActions writes, as the work agent would, the lifecycle-action
// report of subset's SubsetPlacement into the work of cluster (replacing
// its other manifest reports).
func reportActions(t *testing.T, cluster, ns, name, subset, left, leaveFailed string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		str := func(n, v string) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
		}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Group: fleetv1.GroupVersion.Group, Version: "v1alpha1", Kind: "SubsetPlacement", Resource: "subsetplacements",
				Name: manifestwork.StatefulSetName(name, subset), Namespace: ns},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				str(manifestwork.FeedbackActionsLeft, left), str(manifestwork.FeedbackActionsLeaveFailed, leaveFailed),
			}},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: metav1.Now()}},
		}}
		return k8sClient.Status().Update(context.Background(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deliveredObjects returns the StatefulSet and SubsetPlacement db-<subset> in the
// work of cluster.
func deliveredObjects(t *testing.T, ns, cluster, subset string) (*appsv1.StatefulSet, *fleetv1.SubsetPlacement) {
	t.Helper()
	w := works(t, ns, "db")[cluster]
	if w == nil {
		t.Fatalf("no work in %s", cluster)
	}
	var sts appsv1.StatefulSet
	var sp fleetv1.SubsetPlacement
	manifest(t, w, "StatefulSet", "db-"+subset, &sts)
	manifest(t, w, "SubsetPlacement", "db-"+subset, &sp)
	return &sts, &sp
}

// TestLifecycleScaleDown: a FleetSet with memberJoin and memberLeave
// delivers the readiness gate fleetset.io/member-joined, spec.actions (the
// actions, the members, the Service) and a feedback rule for status.actions.
// Scaled from 4 to 2, each subset's StatefulSet keeps 2 replicas and its
// placement lists the leaving ordinal, until its member reports it left:
// east's is then lowered to 1 while west, whose leave fails, stays held with
// Degraded MemberLeaveFailed naming it, until it too reports the leave done.
func TestLifecycleScaleDown(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "lc-east", true)
	createCluster(t, "lc-west", true)
	createNamespace(t, "lifecycle")
	startHub(t, time.Minute)
	fs := sampleFleetSet("lifecycle", "db")
	fs.Spec.Replicas = 4
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "lc-east", "lc-west"
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{
		MemberJoin:  &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"/join.sh"}}},
		MemberLeave: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"/leave.sh"}}, Target: fleetv1.TargetAnyLive},
	}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works in both clusters", func() (bool, error) { return len(works(t, "lifecycle", "db")) == 2, nil })
	sts, sp := deliveredObjects(t, "lifecycle", "lc-east", "east")
	if gates := sts.Spec.Template.Spec.ReadinessGates; len(gates) != 1 || gates[0].ConditionType != fleetv1.ConditionMemberJoined {
		t.Errorf("readiness gates %v, want %s", gates, fleetv1.ConditionMemberJoined)
	}
	if pa := sp.Spec.Actions; pa == nil || pa.Actions.MemberLeave == nil || pa.ServiceName != "db" ||
		strings.Join(pa.Members, ",") != "db-east-0,db-east-1,db-west-1000,db-west-1001" || len(pa.Leave) != 0 {
		t.Fatalf("spec.actions %+v", sp.Spec.Actions)
	}
	found := false
	for _, c := range works(t, "lifecycle", "db")["lc-east"].Spec.ManifestConfigs {
		for _, r := range c.FeedbackRules {
			for _, p := range r.JsonPaths {
				found = found || (c.ResourceIdentifier.Resource == "subsetplacements" && p.Path == ".status.actions.left")
			}
		}
	}
	if !found {
		t.Error("no feedback rule for the SubsetPlacement's status.actions.left")
	}

	// Scale to 2: both subsets hold their replicas and list the leaver.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getFleetSet(t, "lifecycle", "db")
		cur.Spec.Replicas = 2
		return k8sClient.Update(ctx, cur)
	}); err != nil {
		t.Fatal(err)
	}
	held := func(cluster, subset string, replicas int32, leave string) func() (bool, error) {
		return func() (bool, error) {
			sts, sp := deliveredObjects(t, "lifecycle", cluster, subset)
			var got []string
			if sp.Spec.Actions != nil {
				for _, l := range sp.Spec.Actions.Leave {
					got = append(got, fmt.Sprintf("%d/%s", l.Ordinal, l.Reason))
				}
			}
			ok := *sts.Spec.Replicas == replicas && strings.Join(got, ",") == leave
			if !ok {
				return false, fmt.Errorf("%s: replicas %d, leave %v; want %d, %s", cluster, *sts.Spec.Replicas, got, replicas, leave)
			}
			return true, nil
		}
	}
	eventually(t, 20*time.Second, "east holds 2 replicas, 1 leaves", held("lc-east", "east", 2, "1/ScaledDown"))
	eventually(t, 20*time.Second, "west holds 2 replicas, 1001 leaves", held("lc-west", "west", 2, "1001/ScaledDown"))
	_, sp = deliveredObjects(t, "lifecycle", "lc-east", "east")
	if m := strings.Join(sp.Spec.Actions.Members, ","); m != "db-east-0,db-east-1,db-west-1000,db-west-1001" {
		t.Errorf("members while held: %s (the member leaves out the leavers itself)", m)
	}

	// East's member reports the leave done; west's fails.
	reportActions(t, "lc-east", "lifecycle", "db", "east", "1", "")
	reportActions(t, "lc-west", "lifecycle", "db", "west", "", "db-west-1001: command terminated with exit code 1")
	eventually(t, 20*time.Second, "east lowered to 1", held("lc-east", "east", 1, ""))
	eventually(t, 20*time.Second, "Degraded MemberLeaveFailed naming west", func() (bool, error) {
		c := condition(getFleetSet(t, "lifecycle", "db"), fleetv1.ConditionDegraded)
		if c.Reason == fleetv1.ReasonMemberLeaveFailed && strings.Contains(c.Message, "subset west") && strings.Contains(c.Message, "exit code 1") {
			return true, nil
		}
		return false, fmt.Errorf("Degraded %s: %s", c.Reason, c.Message)
	})
	if err := func() error { _, err := held("lc-west", "west", 2, "1001/ScaledDown")(); return err }(); err != nil {
		t.Errorf("west while its leave fails: %v", err)
	}
	if !hasEvent(t, "lifecycle", "db", fleetv1.ReasonMemberLeaveFailed) {
		t.Errorf("no %s event", fleetv1.ReasonMemberLeaveFailed)
	}
	reportActions(t, "lc-west", "lifecycle", "db", "west", "1001", "")
	eventually(t, 20*time.Second, "west lowered to 1", held("lc-west", "west", 1, ""))
	eventually(t, 20*time.Second, "Degraded cleared", func() (bool, error) {
		c := condition(getFleetSet(t, "lifecycle", "db"), fleetv1.ConditionDegraded)
		if c.Reason != fleetv1.ReasonMemberLeaveFailed {
			return true, nil
		}
		return false, fmt.Errorf("Degraded %s: %s", c.Reason, c.Message)
	})
}

// TestAdmissionLifecycleActions: the lifecycle action rules are enforced at
// admission, each with a message naming the rule.
func TestAdmissionLifecycleActions(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "admission-actions")
	exec := func(cmd ...string) *fleetv1.LifecycleAction {
		return &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: cmd}}
	}
	roles := []fleetv1.Role{{Name: "leader", IsLeader: true}, {Name: "follower"}}
	cases := []struct {
		name   string
		la     fleetv1.LifecycleActions
		roles  bool
		probe  bool
		msg    string
		accept bool
	}{
		{name: "exec and httpGet", la: fleetv1.LifecycleActions{MemberJoin: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}, HTTPGet: &fleetv1.HTTPAction{Port: 80}}},
			msg: "set exactly one of exec and httpGet"},
		{name: "neither", la: fleetv1.LifecycleActions{MemberLeave: &fleetv1.LifecycleAction{}}, msg: "set exactly one of exec and httpGet"},
		{name: "empty command", la: fleetv1.LifecycleActions{MemberJoin: exec()}, msg: "spec.lifecycleActions.memberJoin.exec.command"},
		{name: "periodSeconds on memberJoin", la: fleetv1.LifecycleActions{MemberJoin: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}, PeriodSeconds: 3}},
			msg: "periodSeconds is for roleProbe only"},
		{name: "roleProbe AnyLive", roles: true, la: fleetv1.LifecycleActions{RoleProbe: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}, Target: fleetv1.TargetAnyLive}},
			msg: "target must be Self"},
		{name: "roleProbe without roles", la: fleetv1.LifecycleActions{RoleProbe: exec("x")}, msg: "lifecycleActions.roleProbe needs roles and excludes roleProbe"},
		{name: "roleProbe with spec.roleProbe", roles: true, probe: true, la: fleetv1.LifecycleActions{RoleProbe: exec("x")},
			msg: "lifecycleActions.roleProbe needs roles and excludes roleProbe"},
		{name: "switchover without roles", la: fleetv1.LifecycleActions{Switchover: exec("x")}, msg: "lifecycleActions.switchover needs roles"},
		{name: "timeout over 600", la: fleetv1.LifecycleActions{MemberLeave: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}, TimeoutSeconds: 601}},
			msg: "spec.lifecycleActions.memberLeave.timeoutSeconds"},
		{name: "HTTP path without /", la: fleetv1.LifecycleActions{MemberLeave: &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: 80, Path: "leave"}}},
			msg: "path must start with /"},
		{name: "every action, valid", roles: true, accept: true, la: fleetv1.LifecycleActions{
			RoleProbe:  &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Container: "pause", Command: []string{"role"}}, PeriodSeconds: 2, TimeoutSeconds: 1},
			MemberJoin: exec("join"), MemberLeave: &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: 2379, Path: "/leave"}, Target: fleetv1.TargetAnyLive, Retries: ptr.To[int32](0)},
			Switchover: exec("move-leader"), RolloutComplete: exec("finalize")}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFleetSet("admission-actions", fmt.Sprintf("la-%d", i))
			la := tc.la
			fs.Spec.LifecycleActions = &la
			if tc.roles {
				fs.Spec.Roles = roles
			}
			if tc.probe {
				fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 80}}
			}
			err := k8sClient.Create(ctx, fs)
			if tc.accept {
				if err != nil {
					t.Fatalf("Create() refused a valid FleetSet: %v", err)
				}
				got := getFleetSet(t, "admission-actions", fs.Name).Spec.LifecycleActions
				if got.MemberJoin.Target != fleetv1.TargetSelf || got.MemberLeave.HTTPGet.Scheme != fleetv1.SchemeHTTP {
					t.Errorf("defaults not applied: memberJoin target %q, memberLeave scheme %q", got.MemberJoin.Target, got.MemberLeave.HTTPGet.Scheme)
				}
				return
			}
			if err == nil {
				_ = k8sClient.Delete(ctx, fs)
				t.Fatalf("Create() accepted a FleetSet with %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Create() error = %q, want it to contain %q", err, tc.msg)
			}
		})
	}
}
