//go:build fleetset_unsafe_nofence

package failover

import (
	"testing"
	"time"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// TestUnsafeBuildRelocatesBeforeTheFence pins down what the test build is
// for: once the toleration is over, a lost cluster's subset is relocated
// although its member has not fenced itself yet (the normal build waits;
// TestPlan's "waits for its fence deadline" case).
func TestUnsafeBuildRelocatesBeforeTheFence(t *testing.T) {
	spec := Spec{Relocate: true, Toleration: 20 * time.Second}
	subsets := []Subset{{Name: "east", Home: "east", Replicas: 5}, {Name: "west", Home: "west", Replicas: 4}}
	clusters := map[string]Cluster{
		"east": {Exists: true, Since: t0, Heartbeat: true, Fenced: t0.Add(time.Minute), Deadline: "heartbeat observed at t0"},
		"west": {Exists: true, Available: true, Since: t0, Fenced: t0.Add(time.Hour), Removed: true},
	}
	got := Plan(spec, subsets, clusters, t0.Add(25*time.Second))
	if got[0].Cluster != "west" || got[0].Epoch != 1 || got[0].Phase != fleetv1.SubsetFailedOver {
		t.Fatalf("subset east at t0+25s, fence deadline t0+60s: got %+v, want relocated to west with epoch 1 (the unsafe build does not wait for the fence)", got[0])
	}
}
