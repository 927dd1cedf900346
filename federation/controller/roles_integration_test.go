//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// reportRoles writes, as the work agent would, the role summary of subset's
// SubsetPlacement into the work of cluster (replacing its other manifest
// reports).
func reportRoles(t *testing.T, cluster, ns, name, subset, roles, leaders string) {
	t.Helper()
	reportPlacement(t, cluster, ns, name, subset, roles, leaders, nil)
}

// reportPlacement is reportRoles with more string feedback values of the
// SubsetPlacement (e.g. the lifecycle actions' report), by name.
func reportPlacement(t *testing.T, cluster, ns, name, subset, roles, leaders string, more map[string]string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		str := func(n, v string) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
		}
		values := []workv1.FeedbackValue{
			str(manifestwork.FeedbackRoles, roles), str(manifestwork.FeedbackLeaders, leaders),
			{Name: manifestwork.FeedbackRolesGeneration, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
		}
		for n, v := range more {
			values = append(values, str(n, v))
		}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Group: fleetv1.GroupVersion.Group, Version: "v1alpha1", Kind: "SubsetPlacement", Resource: "subsetplacements",
				Name: manifestwork.StatefulSetName(name, subset), Namespace: ns},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
			Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: metav1.Now()}},
		}}
		return k8sClient.Status().Update(context.Background(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoles: a FleetSet with roles delivers them (and the probe) in each
// SubsetPlacement with a feedback rule for the member's role summary, and
// a role Service per cluster selecting the role. The fed-back summaries give
// status.leader and the fleet view's roles; two leaders are MultipleLeaders
// naming both and their clusters; none is NoLeader.
func TestRoles(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "ro-east", true)
	createCluster(t, "ro-west", true)
	createNamespace(t, "roles")
	startHub(t, time.Minute)
	fs := sampleFleetSet("roles", "db")
	fs.Spec.Replicas = 4
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "ro-east", "ro-west"
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true, UpdatePriority: 2}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly, UpdatePriority: 1}}
	fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 8008}}
	fs.Spec.RoleServices = []fleetv1.RoleService{
		{Name: "db-rw", Role: "primary", Ports: []corev1.ServicePort{{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
		{Name: "db-ro", AccessMode: fleetv1.AccessReadOnly, Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}},
	}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works in both clusters", func() (bool, error) { return len(works(t, "roles", "db")) == 2, nil })
	for cluster, w := range works(t, "roles", "db") {
		var rw, ro corev1.Service
		manifest(t, w, "Service", "db-rw", &rw)
		manifest(t, w, "Service", "db-ro", &ro)
		if rw.Spec.Selector[fleetv1.LabelRole] != "primary" || rw.Spec.Selector[fleetv1.LabelSet] != "db" || ro.Spec.Selector[fleetv1.LabelAccessMode] != "ReadOnly" {
			t.Errorf("%s: role Services select %v and %v", cluster, rw.Spec.Selector, ro.Spec.Selector)
		}
		var sp fleetv1.SubsetPlacement
		subset := strings.TrimPrefix(cluster, "ro-")
		manifest(t, w, "SubsetPlacement", "db-"+subset, &sp)
		if sp.Spec.Roles == nil || len(sp.Spec.Roles.Roles) != 2 || sp.Spec.Roles.Probe == nil || sp.Spec.Roles.Probe.HTTPGet.Port != 8008 {
			t.Errorf("%s: SubsetPlacement roles %+v", cluster, sp.Spec.Roles)
		}
		found := false
		for _, c := range w.Spec.ManifestConfigs {
			if c.ResourceIdentifier.Resource == "subsetplacements" && len(c.FeedbackRules) == 1 && len(c.FeedbackRules[0].JsonPaths) == 4 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no role feedback rule on the SubsetPlacement", cluster)
		}
	}

	// One leader, in west.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=replica,db-east-1=replica", "")
	reportRoles(t, "ro-west", "roles", "db", "west", "db-west-1000=primary,db-west-1001=replica", "db-west-1000")
	eventually(t, 20*time.Second, "status.leader db-west-1000 in ro-west", func() (bool, error) {
		l := getFleetSet(t, "roles", "db").Status.Leader
		return l != nil && *l == fleetv1.LeaderStatus{Name: "db-west-1000", Subset: "west", Cluster: "ro-west"}, nil
	})
	eventually(t, 20*time.Second, "the fleet view lists the roles and the leader", func() (bool, error) {
		var view corev1.ConfigMap
		manifest(t, works(t, "roles", "db")["ro-east"], "ConfigMap", "db-fleet", &view)
		js := view.Data[fleetv1.FleetViewKey]
		return strings.Contains(js, `"name":"db-west-1000","ordinal":1000,"subset":"west","cluster":"ro-west"`) && strings.Contains(js, `"role":"primary"`) &&
			strings.Contains(js, `"leaders":[{"name":"db-west-1000","subset":"west","cluster":"ro-west"}]`), nil
	})

	// Split brain: a second leader in east.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=primary,db-east-1=replica", "db-east-0")
	eventually(t, 20*time.Second, "Degraded MultipleLeaders naming both", func() (bool, error) {
		got := getFleetSet(t, "roles", "db")
		c := condition(got, fleetv1.ConditionDegraded)
		return got.Status.Leader == nil && c.Reason == fleetv1.ReasonMultipleLeaders &&
			strings.Contains(c.Message, "db-east-0 in cluster ro-east") && strings.Contains(c.Message, "db-west-1000 in cluster ro-west"), nil
	})
	if !hasEvent(t, "roles", "db", fleetv1.ReasonMultipleLeaders) {
		t.Errorf("no %s event", fleetv1.ReasonMultipleLeaders)
	}

	// No leader at all.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=replica,db-east-1=replica", "")
	reportRoles(t, "ro-west", "roles", "db", "west", "db-west-1000=replica,db-west-1001=replica", "")
	eventually(t, 20*time.Second, "Degraded NoLeader", func() (bool, error) {
		return condition(getFleetSet(t, "roles", "db"), fleetv1.ConditionDegraded).Reason == fleetv1.ReasonNoLeader, nil
	})
}

// TestAdmissionRoles: the role rules are enforced at admission.
func TestAdmissionRoles(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "roles-admission")
	port := []corev1.ServicePort{{Port: 5432}}
	for i, tc := range []struct {
		mutate func(fs *fleetv1.FleetSet)
		want   string
	}{
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "a", IsLeader: true}, {Name: "b", IsLeader: true}}
		}, "at most one role may be the leader"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 80}}
		}, "roleProbe needs roles"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
			fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "leader", Ports: port}}
		}, "roleServices[].role must name one of roles"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
			fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "primary", AccessMode: fleetv1.AccessReadWrite, Ports: port}}
		}, "set exactly one of role and accessMode"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary"}}
			fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 80, Path: "role"}}
		}, "path must start with /"},
	} {
		fs := sampleFleetSet("roles-admission", "bad")
		fs.Name = "bad-" + string(rune('a'+i))
		tc.mutate(fs)
		if err := k8sClient.Create(ctx, fs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: Create() = %v, want an error containing %q", i, err, tc.want)
		}
	}
	fs := sampleFleetSet("roles-admission", "good")
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly}}
	fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 8008, Path: "/role"}, PeriodSeconds: 2}
	fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "primary", Ports: port}, {Name: "ro", AccessMode: fleetv1.AccessReadOnly, Ports: port}}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Errorf("a valid FleetSet with roles refused: %v", err)
	}
}

// reportSubset writes, as the work agent would, both the StatefulSet's
// status (replicas, all ready and available, updated, at the revision the
// work carries) and the SubsetPlacement's role summary of one subset.
func reportSubset(t *testing.T, cluster, ns, name, subset string, replicas, updated int64, roles, leaders, updatedLeaders string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ctx := context.Background()
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		var sts appsv1.StatefulSet
		manifest(t, w, "StatefulSet", manifestwork.StatefulSetName(name, subset), &sts)
		i := func(n string, v int64) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
		}
		str := func(n, v string) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
		}
		applied := []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: metav1.Now()}}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
			{ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", Name: sts.Name, Namespace: ns},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					i(manifestwork.FeedbackReplicas, replicas), i(manifestwork.FeedbackReadyReplicas, replicas), i(manifestwork.FeedbackUpdatedReplicas, updated),
					i(manifestwork.FeedbackAvailableReplicas, replicas), str(manifestwork.FeedbackFleetRevision, sts.Annotations[fleetv1.AnnotationRevision]),
					i(manifestwork.FeedbackGeneration, 1), i(manifestwork.FeedbackObservedGeneration, 1)}},
				Conditions: applied},
			{ResourceMeta: workv1.ManifestResourceMeta{Group: fleetv1.GroupVersion.Group, Version: "v1alpha1", Kind: "SubsetPlacement", Resource: "subsetplacements", Name: sts.Name, Namespace: ns},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					str(manifestwork.FeedbackRoles, roles), str(manifestwork.FeedbackLeaders, leaders), str(manifestwork.FeedbackUpdatedLeaders, updatedLeaders),
					i(manifestwork.FeedbackRolesGeneration, 1)}},
				Conditions: applied},
		}
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "applied"})
		return k8sClient.Status().Update(ctx, w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// placementUpdate returns the spec.update of subset's SubsetPlacement in its
// work, and its StatefulSet's update strategy type.
func placementUpdate(t *testing.T, cluster, ns, name, subset string) (*fleetv1.PlacementUpdate, appsv1.StatefulSetUpdateStrategyType) {
	w := works(t, ns, name)[cluster]
	if w == nil {
		return nil, ""
	}
	var sp fleetv1.SubsetPlacement
	var sts appsv1.StatefulSet
	manifest(t, w, "SubsetPlacement", manifestwork.StatefulSetName(name, subset), &sp)
	manifest(t, w, "StatefulSet", manifestwork.StatefulSetName(name, subset), &sts)
	return sp.Spec.Update, sts.Spec.UpdateStrategy.Type
}

// TestRoleOrderedRollout: with roles the StatefulSets use OnDelete and the
// hub tells each member what it may replace: the followers in fleet order,
// the leader (in the first subset) held until every other instance is
// updated; then a switchover is asked; under BestEffort the leader is
// updated after the deadline (SwitchoverSkipped), under Required the
// rollout holds (RolloutBlocked naming the leader, SwitchoverHeld).
func TestRoleOrderedRollout(t *testing.T) {
	for _, policy := range []fleetv1.SwitchoverPolicy{fleetv1.SwitchoverBestEffort, fleetv1.SwitchoverRequired} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			ns := "roll-" + strings.ToLower(string(policy))
			east, west := ns+"-east", ns+"-west"
			createCluster(t, east, true)
			createCluster(t, west, true)
			createNamespace(t, ns)
			h := startHub(t, time.Minute)
			defer h.stop()
			fs := sampleFleetSet(ns, "db")
			fs.Spec.Replicas = 4
			fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = east, west
			fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
			fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
			fs.Spec.Switchover = &fleetv1.Switchover{Policy: policy, DeadlineSeconds: 2}
			if err := k8sClient.Create(ctx, fs); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "both works, OnDelete", func() (bool, error) {
				u, typ := placementUpdate(t, east, ns, "db", "east")
				return u != nil && typ == appsv1.OnDeleteStatefulSetStrategyType && works(t, ns, "db")[west] != nil, nil
			})
			report := func(eastUpdated, westUpdated int64, eastRoles, eastLeaders, updatedLeaders string) {
				reportSubset(t, east, ns, "db", "east", 2, eastUpdated, eastRoles, eastLeaders, updatedLeaders)
				reportSubset(t, west, ns, "db", "west", 2, westUpdated, "db-west-1000=replica,db-west-1001=replica", "", "")
			}
			report(2, 2, "db-east-0=primary,db-east-1=replica", "db-east-0", "db-east-0")
			eventually(t, 20*time.Second, "settled", func() (bool, error) {
				got := getFleetSet(t, ns, "db")
				return got.Status.CurrentRevision != "" && got.Status.CurrentRevision == got.Status.UpdateRevision, nil
			})

			// A new template: east's follower first (east is first in fleet
			// order), its leader held.
			updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
				fs.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
			})
			eventually(t, 20*time.Second, "east may replace one instance, leader held; west waits", func() (bool, error) {
				report(0, 0, "db-east-0=primary,db-east-1=replica", "db-east-0", "")
				ue, _ := placementUpdate(t, east, ns, "db", "east")
				uw, _ := placementUpdate(t, west, ns, "db", "west")
				return ue != nil && uw != nil && ue.MaxUnavailable == 1 && ue.Leader == fleetv1.LeaderHold && uw.MaxUnavailable == 0, nil
			})
			// East's follower updated: west's turn, the leader still held.
			eventually(t, 20*time.Second, "west released, east's leader held", func() (bool, error) {
				report(1, 0, "db-east-0=primary,db-east-1=replica", "db-east-0", "")
				ue, _ := placementUpdate(t, east, ns, "db", "east")
				uw, _ := placementUpdate(t, west, ns, "db", "west")
				return ue.MaxUnavailable == 0 && ue.Leader == fleetv1.LeaderHold && uw.MaxUnavailable == 1, nil
			})
			// Every follower updated: the leader's turn, a switchover asked.
			eventually(t, 20*time.Second, "switchover asked of db-east-0", func() (bool, error) {
				report(1, 2, "db-east-0=primary,db-east-1=replica", "db-east-0", "")
				ue, _ := placementUpdate(t, east, ns, "db", "east")
				s := getFleetSet(t, ns, "db").Status.Switchover
				return ue.Leader == fleetv1.LeaderSwitchover && s != nil && s.Pod == "db-east-0" && s.Cluster == east, nil
			})
			if !hasEvent(t, ns, "db", "SwitchoverRequested") {
				t.Error("no SwitchoverRequested event")
			}
			// No answer before the deadline.
			if policy == fleetv1.SwitchoverBestEffort {
				eventually(t, 20*time.Second, "the leader updated anyway", func() (bool, error) {
					ue, _ := placementUpdate(t, east, ns, "db", "east")
					s := getFleetSet(t, ns, "db").Status.Switchover
					return ue.Leader == fleetv1.LeaderUpdateNow && ue.MaxUnavailable == 1 && s != nil && s.Skipped, nil
				})
				if !hasEvent(t, ns, "db", fleetv1.ReasonSwitchoverSkipped) {
					t.Errorf("no %s event", fleetv1.ReasonSwitchoverSkipped)
				}
				return
			}
			eventually(t, 20*time.Second, "RolloutBlocked: SwitchoverHeld naming the leader", func() (bool, error) {
				got := getFleetSet(t, ns, "db")
				c := condition(got, fleetv1.ConditionProgressing)
				ue, _ := placementUpdate(t, east, ns, "db", "east")
				return ue.Leader == fleetv1.LeaderSwitchover && c.Reason == fleetv1.ReasonRolloutBlocked &&
					strings.Contains(c.Message, "SwitchoverHeld: leader db-east-0 in cluster "+east), nil
			})
			if !hasEvent(t, ns, "db", fleetv1.ReasonSwitchoverHeld) {
				t.Errorf("no %s event", fleetv1.ReasonSwitchoverHeld)
			}
			// The workload answers: the leader role moves to updated
			// db-east-1; the old leader is then an outdated follower.
			eventually(t, 20*time.Second, "switchover done: old leader replaced as a follower", func() (bool, error) {
				report(1, 2, "db-east-0=replica,db-east-1=primary", "db-east-1", "db-east-1")
				got := getFleetSet(t, ns, "db")
				ue, _ := placementUpdate(t, east, ns, "db", "east")
				return got.Status.Switchover == nil && ue.Leader == fleetv1.LeaderHold && ue.MaxUnavailable == 1 &&
					got.Status.Leader != nil && got.Status.Leader.Name == "db-east-1", nil
			})
		})
	}
}
