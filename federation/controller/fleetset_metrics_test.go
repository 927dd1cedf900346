package controller

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestObserveConditions: the Degraded gauge carries the current reason
// only, the blocked gauge follows Progressing RolloutBlocked, and a gone
// FleetSet has no series left.
func TestObserveConditions(t *testing.T) {
	key := types.NamespacedName{Namespace: "db", Name: "mydb"}
	other := types.NamespacedName{Namespace: "db", Name: "other"}
	status := func(degraded, progressing string) *fleetv1.FleetSetStatus {
		s := &fleetv1.FleetSetStatus{}
		if degraded != "" {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: fleetv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: degraded})
		} else {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: fleetv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonAsExpected})
		}
		s.Conditions = append(s.Conditions, metav1.Condition{Type: fleetv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: progressing})
		return s
	}
	const header = `
# HELP fleetset_hub_fleetset_degraded 1 while a FleetSet's Degraded condition is True, by FleetSet namespace/name and the condition's reason; no series while it is not Degraded.
# TYPE fleetset_hub_fleetset_degraded gauge
`
	const blockedHeader = `
# HELP fleetset_hub_rollout_blocked 1 while a FleetSet's rollout is blocked (Progressing RolloutBlocked: no progress past progressDeadlineSeconds, an updating subset's cluster unavailable, or a Required switchover held), else 0; by FleetSet namespace/name.
# TYPE fleetset_hub_rollout_blocked gauge
`
	// The gauges are the process's: in the integration build, the hubs of
	// other tests left their FleetSets' series in them.
	fleetSetDegraded.Reset()
	rolloutBlocked.Reset()
	t.Cleanup(func() { forgetConditions(key); forgetConditions(other) })
	observeConditions(other, status(fleetv1.ReasonApplyFailed, fleetv1.ReasonRolloutUpdating))
	steps := []struct {
		name              string
		status            *fleetv1.FleetSetStatus
		degraded, blocked string
	}{
		{"ClusterNotBound, rollout blocked", status(fleetv1.ReasonClusterNotBound, fleetv1.ReasonRolloutBlocked),
			`fleetset_hub_fleetset_degraded{fleetset="mydb",namespace="db",reason="ClusterNotBound"} 1`, `fleetset_hub_rollout_blocked{fleetset="mydb",namespace="db"} 1`},
		{"reason changes to DependencyMissing: the old reason's series is gone", status(fleetv1.ReasonDependencyMissing, fleetv1.ReasonRolloutUpdating),
			`fleetset_hub_fleetset_degraded{fleetset="mydb",namespace="db",reason="DependencyMissing"} 1`, `fleetset_hub_rollout_blocked{fleetset="mydb",namespace="db"} 0`},
		{"not Degraded: no series", status("", fleetv1.ReasonRolloutUpdating), ``, `fleetset_hub_rollout_blocked{fleetset="mydb",namespace="db"} 0`},
	}
	for _, s := range steps {
		observeConditions(key, s.status)
		want := header + `fleetset_hub_fleetset_degraded{fleetset="other",namespace="db",reason="ApplyFailed"} 1` + "\n"
		if s.degraded != "" {
			want = header + s.degraded + "\n" + `fleetset_hub_fleetset_degraded{fleetset="other",namespace="db",reason="ApplyFailed"} 1` + "\n"
		}
		if err := testutil.CollectAndCompare(fleetSetDegraded, strings.NewReader(want)); err != nil {
			t.Errorf("%s: degraded: %v", s.name, err)
		}
		wantBlocked := blockedHeader + s.blocked + "\n" + `fleetset_hub_rollout_blocked{fleetset="other",namespace="db"} 0` + "\n"
		if err := testutil.CollectAndCompare(rolloutBlocked, strings.NewReader(wantBlocked)); err != nil {
			t.Errorf("%s: blocked: %v", s.name, err)
		}
	}
	forgetConditions(key)
	if n := testutil.CollectAndCount(rolloutBlocked) + testutil.CollectAndCount(fleetSetDegraded); n != 2 {
		t.Errorf("after the FleetSet is gone: %d series, want only other's 2", n)
	}
}
