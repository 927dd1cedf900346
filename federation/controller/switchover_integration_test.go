//go:build integration

package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// TestRequestedSwitchover: a switchover an operator asks for with the
// annotation fleetset.io/switchover-to (kubectl fleetset switchover) goes
// to the leader's subset only, once status.requestedSwitchover records it;
// the member's reported failure shows in that status; the request ends
// when the members report another leader (done: event, annotation and
// status removed, the instruction withdrawn), at the deadline when the
// role does not move (failed: a Warning event), and a request the hub
// cannot take is refused.
func TestRequestedSwitchover(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "sw-east", true)
	createCluster(t, "sw-west", true)
	createNamespace(t, "switch")
	// Candidates must be in contact (their member's heartbeat) and Ready
	// (their subset's fed-back StatefulSet status).
	memberBeat(t, "sw-east")
	memberBeat(t, "sw-west")
	startHub(t, time.Minute)
	fs := sampleFleetSet("switch", "db")
	fs.Spec.Replicas = 4
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "sw-east", "sw-west"
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Command: []string{"/bin/switchover"}}}}
	fs.Spec.Switchover = &fleetv1.Switchover{DeadlineSeconds: 8}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works in both clusters", func() (bool, error) { return len(works(t, "switch", "db")) == 2, nil })
	reportRoles(t, "sw-east", "switch", "db", "east", "db-east-0=primary,db-east-1=replica", "db-east-0")
	reportRoles(t, "sw-west", "switch", "db", "west", "db-west-1000=replica,db-west-1001=replica", "")
	reportReady(t, "sw-west", "switch", "db", "db-west", 2, 2)
	eventually(t, 20*time.Second, "status.leader db-east-0", func() (bool, error) {
		l := getFleetSet(t, "switch", "db").Status.Leader
		return l != nil && l.Name == "db-east-0", nil
	})
	annotate := func(to string) { t.Helper(); requestSwitchover(t, "switch", "db", to) }
	placement := func(cluster, subset string) *fleetv1.PlacementSwitchover {
		t.Helper()
		var sp fleetv1.SubsetPlacement
		manifest(t, works(t, "switch", "db")[cluster], "SubsetPlacement", "db-"+subset, &sp)
		if sp.Spec.Actions == nil {
			t.Fatalf("%s: SubsetPlacement db-%s has no spec.actions", cluster, subset)
		}
		return sp.Spec.Actions.Switchover
	}
	annotated := func() bool {
		_, ok := getFleetSet(t, "switch", "db").Annotations[fleetv1.AnnotationSwitchoverTo]
		return ok
	}
	done := testutil.ToFloat64(requestedSwitchovers.WithLabelValues(switchoverDone))
	failed := testutil.ToFloat64(requestedSwitchovers.WithLabelValues(switchoverFailed))
	refused := testutil.ToFloat64(requestedSwitchovers.WithLabelValues(switchoverRefused))

	// To a named instance: taken, then handed to east's subset only.
	annotate("db-west-1000")
	var req *fleetv1.RequestedSwitchoverStatus
	eventually(t, 20*time.Second, "status.requestedSwitchover", func() (bool, error) {
		req = getFleetSet(t, "switch", "db").Status.RequestedSwitchover
		return req != nil, nil
	})
	if req.To != "db-west-1000" || req.Pod != "db-east-0" || req.Subset != "east" || req.Cluster != "sw-east" {
		t.Fatalf("status.requestedSwitchover = %+v", req)
	}
	if !hasEventContaining(t, "switch", "db", EventSwitchoverRequested, "Asked leader db-east-0 (cluster sw-east) to hand its role to db-west-1000") {
		t.Errorf("no %s event", EventSwitchoverRequested)
	}
	id := switchoverID(req)
	// Handed over at once (no other event comes: the status write brings
	// no reconcile by itself), well before the 8 s deadline.
	eventually(t, 3*time.Second, "east's SubsetPlacement carries the request", func() (bool, error) {
		got := placement("sw-east", "east")
		return got != nil && *got == fleetv1.PlacementSwitchover{ID: id, Leader: "db-east-0", Candidate: "db-west-1000"}, nil
	})
	if got := placement("sw-west", "west"); got != nil {
		t.Errorf("west's SubsetPlacement carries a switchover too: %+v", got)
	}

	// The member reports the action failing: the status says why.
	reportPlacement(t, "sw-east", "switch", "db", "east", "db-east-0=primary,db-east-1=replica", "db-east-0",
		map[string]string{manifestwork.FeedbackActionsSwitchoverFailed: "db-east-0: exit status 1"})
	eventually(t, 20*time.Second, "status.requestedSwitchover.failed", func() (bool, error) {
		r := getFleetSet(t, "switch", "db").Status.RequestedSwitchover
		return r != nil && r.Failed == "db-east-0: exit status 1", nil
	})

	// The role moves: done.
	reportPlacement(t, "sw-east", "switch", "db", "east", "db-east-0=replica,db-east-1=replica", "",
		map[string]string{manifestwork.FeedbackActionsSwitchover: id})
	reportRoles(t, "sw-west", "switch", "db", "west", "db-west-1000=primary,db-west-1001=replica", "db-west-1000")
	eventually(t, 20*time.Second, "annotation and status.requestedSwitchover removed", func() (bool, error) {
		return !annotated() && getFleetSet(t, "switch", "db").Status.RequestedSwitchover == nil, nil
	})
	if !hasEventContaining(t, "switch", "db", EventSwitchoverDone, "The leader role moved from db-east-0 (cluster sw-east) to db-west-1000 (cluster sw-west)") {
		t.Errorf("no %s event", EventSwitchoverDone)
	}
	eventually(t, 20*time.Second, "east's SubsetPlacement no longer carries the request", func() (bool, error) {
		return placement("sw-east", "east") == nil, nil
	})

	// "*": the role does not move within the deadline: failed.
	annotate(fleetv1.SwitchoverToAny)
	eventually(t, 20*time.Second, "the request taken, for west's leader", func() (bool, error) {
		r := getFleetSet(t, "switch", "db").Status.RequestedSwitchover
		return r != nil && r.Pod == "db-west-1000" && r.To == fleetv1.SwitchoverToAny, nil
	})
	eventually(t, 20*time.Second, "west's SubsetPlacement carries it, with no candidate", func() (bool, error) {
		got := placement("sw-west", "west")
		return got != nil && got.Leader == "db-west-1000" && got.Candidate == "", nil
	})
	taken := time.Now()
	eventually(t, 30*time.Second, "the request ended at the deadline", func() (bool, error) {
		return !annotated() && getFleetSet(t, "switch", "db").Status.RequestedSwitchover == nil, nil
	})
	if waited := time.Since(taken); waited < 6*time.Second {
		t.Errorf("the request ended %v after it was taken, before its 8 s deadline", waited)
	}
	if !hasEventContaining(t, "switch", "db", EventSwitchoverFailed, "did not hand its role to an instance the workload chooses within 8s (spec.switchover.deadlineSeconds): its member has not reported the switchover action done") {
		t.Errorf("no %s event", EventSwitchoverFailed)
	}
	eventually(t, 20*time.Second, "west's SubsetPlacement no longer carries the ended request", func() (bool, error) {
		return placement("sw-west", "west") == nil, nil
	})
	if l := getFleetSet(t, "switch", "db").Status.Leader; l == nil || l.Name != "db-west-1000" {
		t.Errorf("status.leader %+v after a failed switchover, want db-west-1000 unchanged", l)
	}

	// Not an instance: refused.
	annotate("db-west-1009")
	eventually(t, 20*time.Second, "the refused request's annotation removed", func() (bool, error) { return !annotated(), nil })
	if !hasEventContaining(t, "switch", "db", EventSwitchoverRefused, `"db-west-1009" is not an instance of fleetset "db"`) {
		t.Errorf("no %s event", EventSwitchoverRefused)
	}
	if r := getFleetSet(t, "switch", "db").Status.RequestedSwitchover; r != nil {
		t.Errorf("a refused request is in the status: %+v", r)
	}

	// A rolling update asking the leader for a switchover itself
	// (status.switchover): refused, so that one switchover runs at a time.
	setRolloutSwitchover := func(s *fleetv1.SwitchoverStatus) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := getFleetSet(t, "switch", "db")
			cur.Status.Switchover = s
			return k8sClient.Status().Update(ctx, cur)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setRolloutSwitchover(&fleetv1.SwitchoverStatus{Pod: "db-west-1000", Subset: "west", Cluster: "sw-west", RequestedAt: metav1.Now()})
	annotate("db-east-0")
	eventually(t, 20*time.Second, "the request refused during the rollout's switchover", func() (bool, error) { return !annotated(), nil })
	if !hasEventContaining(t, "switch", "db", EventSwitchoverRefused, "a rolling update is at the leader's turn") {
		t.Errorf("no %s event naming the rollout's switchover", EventSwitchoverRefused)
	}
	setRolloutSwitchover(nil)

	for result, before := range map[string]float64{switchoverDone: done, switchoverFailed: failed, switchoverRefused: refused + 1} {
		if got := testutil.ToFloat64(requestedSwitchovers.WithLabelValues(result)) - before; got != 1 {
			t.Errorf("fleetset_hub_requested_switchovers_total{result=%q} grew by %v, want 1", result, got)
		}
	}
}

// requestSwitchover sets FleetSet ns/name's annotation
// fleetset.io/switchover-to to to, as kubectl fleetset switchover does.
func requestSwitchover(t *testing.T, ns, name, to string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getFleetSet(t, ns, name)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[fleetv1.AnnotationSwitchoverTo] = to
		return k8sClient.Update(context.Background(), cur)
	}); err != nil {
		t.Fatal(err)
	}
}
