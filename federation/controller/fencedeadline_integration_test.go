//go:build integration

package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// TestFenceGraceRaisedThenCut is the window of issue 48: east's work agent
// applies a raised fenceGraceSeconds (0 → 8 s), and east is cut off before a
// heartbeat reports it (its heartbeats report a fence of 0 s throughout);
// the grace is then lowered back to 0 on the hub, and the hub restarted.
// East enforces the 8 s it applied, so the hub must not relocate before
// restart + timeout 3 s + confirmation 1 s + 8 s + termination 2 s + margin
// 1 s (15 s; with the spec's or the member's fence alone, 7 s), and says
// which fence it counts.
func TestFenceGraceRaisedThenCut(t *testing.T) {
	stopEast := beatingPair(t, "fr", "fenceraise")
	h := startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	fs := pairFleetSet("fenceraise", "fr", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	grace := func(want int32) func() (bool, error) {
		return func() (bool, error) {
			w := works(t, "fenceraise", "db")["fr-east"]
			if w == nil {
				return false, nil
			}
			var sp fleetv1.SubsetPlacement
			manifest(t, w, "SubsetPlacement", "db-east", &sp)
			return sp.Spec.Fencing != nil && sp.Spec.Fencing.GraceSeconds == want, nil
		}
	}
	eventually(t, 20*time.Second, "east's work delivered with fence grace 0", grace(0))
	eventually(t, 20*time.Second, "west's work delivered", func() (bool, error) { return works(t, "fenceraise", "db")["fr-west"] != nil, nil })
	markApplied(t, "fr-east", "fenceraise", "db")
	markApplied(t, "fr-west", "fenceraise", "db")

	// Raised; east's agent applies it; east is cut off before a heartbeat
	// reports it (these heartbeats never do).
	updateFleetSet(t, "fenceraise", "db", func(fs *fleetv1.FleetSet) { fs.Spec.Failover.FenceGraceSeconds = 8 })
	eventually(t, 20*time.Second, "east's work delivered with fence grace 8", grace(8))
	markApplied(t, "fr-east", "fenceraise", "db")
	stopEast()
	setAvailable(t, "fr-east", false)
	// Lowered on the hub during the cut: written to east's work, which
	// east never applies.
	updateFleetSet(t, "fenceraise", "db", func(fs *fleetv1.FleetSet) { fs.Spec.Failover.FenceGraceSeconds = 0 })
	eventually(t, 20*time.Second, "east's work rewritten with fence grace 0", grace(0))
	if got := works(t, "fenceraise", "db")["fr-east"].Annotations[fleetv1.AnnotationDeliveredFenceSeconds]; got != "10" {
		t.Errorf("east's work %s=%q, want \"10\" (the applied grace 8 s + termination 2 s)", fleetv1.AnnotationDeliveredFenceSeconds, got)
	}

	// A restarted hub reads the same record from the work.
	h.stop()
	restarted := time.Now()
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	eventually(t, 10*time.Second, "Degraded FailingOver counting the delivered fence", func() (bool, error) {
		c := condition(getFleetSet(t, "fenceraise", "db"), fleetv1.ConditionDegraded)
		return strings.Contains(c.Message, "the fence the hub delivered to fr-east 10s"), nil
	})
	eventually(t, 40*time.Second, "east relocated to west", func() (bool, error) {
		ws := works(t, "fenceraise", "db")
		return ws["fr-west"] != nil && manifestwork.HoldsStatefulSet(ws["fr-west"], "db-east"), nil
	})
	deadline := 3*time.Second + time.Second + 8*time.Second + 2*time.Second + time.Second
	if took := time.Since(restarted); took < deadline {
		t.Errorf("relocated %v after the hub restarted, before the fence east enforces was over (%v): the hub counted the lowered spec", took.Round(100*time.Millisecond), deadline)
	} else {
		t.Logf("relocated %v after the hub restarted (deadline %v)", took.Round(100*time.Millisecond), deadline)
	}
}

// TestDeletedClusterWaitsForFence (issue 48): a deleted ManagedCluster is
// unknown, not out of service. While east's member still writes its
// heartbeat after its ManagedCluster was deleted (its credentials not yet
// revoked: it reaches the hub, so it never fences), nothing of east moves,
// past every deadline counted from the deletion, and the FleetSet says why
// (Degraded, ClusterNotFound first, then the hold naming the deletion; a
// RelocationHeld event).
// Once its heartbeats stop, east's subset is relocated, no sooner than its
// fence deadline from the last heartbeat the hub observed: timeout 3 s +
// confirmation 1 s + fence grace 3 s + termination 2 s + margin 1 s.
func TestDeletedClusterWaitsForFence(t *testing.T) {
	stopEast := beatingPair(t, "dl", "deletedcluster")
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	fs := pairFleetSet("deletedcluster", "dl", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0), FenceGraceSeconds: 3})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) { return len(works(t, "deletedcluster", "db")) == 2, nil })
	markApplied(t, "dl-east", "deletedcluster", "db")
	markApplied(t, "dl-west", "deletedcluster", "db")

	deleteCluster(t, "dl-east")
	eventually(t, 10*time.Second, "Degraded naming the deletion and the hold", func() (bool, error) {
		c := condition(getFleetSet(t, "deletedcluster", "db"), fleetv1.ConditionDegraded)
		return strings.Contains(c.Message, "ManagedCluster dl-east was deleted, which does not confirm"), nil
	})
	// Past the whole deadline (10 s) counted from the deletion: east's
	// member still beats, so it has not fenced.
	time.Sleep(12 * time.Second)
	if ws := works(t, "deletedcluster", "db"); ws["dl-west"] == nil || manifestwork.HoldsStatefulSet(ws["dl-west"], "db-east") {
		t.Fatal("db-east relocated to dl-west while dl-east's member, its ManagedCluster deleted, still reached the hub")
	}
	if n, _ := countEvents(t, "deletedcluster", "db", EventRelocationHeld); n < 1 {
		t.Errorf("no %s event for the deleted cluster", EventRelocationHeld)
	}

	lastBeat := stopEast()
	eventually(t, 30*time.Second, "db-east relocated to dl-west", func() (bool, error) {
		ws := works(t, "deletedcluster", "db")
		return ws["dl-west"] != nil && manifestwork.HoldsStatefulSet(ws["dl-west"], "db-east"), nil
	})
	deadline := 3*time.Second + time.Second + 3*time.Second + 2*time.Second + time.Second
	if took := time.Since(lastBeat); took < deadline {
		t.Errorf("relocated %v after east's last heartbeat, before its fence deadline %v", took.Round(100*time.Millisecond), deadline)
	} else {
		t.Logf("relocated %v after east's last heartbeat (deadline %v)", took.Round(100*time.Millisecond), deadline)
	}
}
