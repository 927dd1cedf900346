package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetset/fleetset/internal/apportion"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

var zones = []DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}

// seatZone is the domain of ordinal offset k over zones (even shares).
func seatZone(t *testing.T, k int32) string {
	t.Helper()
	s, err := apportion.NewSeats("spec.domains", []apportion.Share{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}})
	if err != nil {
		t.Fatal(err)
	}
	i, err := s.Of(int64(k))
	if err != nil {
		t.Fatal(err)
	}
	return s.Names()[i]
}

// world builds samples of FleetSet ns/db: subsets east (ordinals 0..) and
// west (1000..), every pod Running and Ready in its seat's zone, its claim
// data-<pod> bound.
type world struct {
	t       *testing.T
	h       *History
	fs      FleetSetObs
	pods    map[string][]PodObs // member → pods
	pvcs    map[string][]PVCObs
	sts     map[string]int32  // member → spec.replicas of its StatefulSet
	fenced  map[string]*int64 // member → the fence record of its placement
	hubDown bool
}

func newWorld(t *testing.T, perSubset int32) *world {
	w := &world{t: t, h: &History{Start: t0, FleetSets: []FleetSetInfo{{Namespace: "ns", Name: "db", Claims: []string{"data"}}}},
		pods: map[string][]PodObs{}, pvcs: map[string][]PVCObs{}, sts: map[string]int32{}, fenced: map[string]*int64{}}
	w.fs = FleetSetObs{Namespace: "ns", Name: "db", Generation: 1, ObservedGeneration: 1, Replicas: 2 * perSubset,
		ReadyReplicas: 2 * perSubset, UpdatedReplicas: 2 * perSubset, UpdateRevision: "r1", CurrentRevision: "r1", MaxUnavailable: 1,
		Relocate: true, FailbackAutomatic: true}
	for i, m := range []string{"east", "west"} {
		ss := SubsetObs{Name: m, Home: m, Cluster: m, OrdinalStart: int32(1000 * i), Replicas: perSubset, Domains: map[string]int{}}
		for k := int32(0); k < perSubset; k++ {
			z := seatZone(t, k)
			ss.Domains[z]++
			name := fmt.Sprintf("db-%s-%d", m, ss.OrdinalStart+k)
			w.pods[m] = append(w.pods[m], PodObs{Namespace: "ns", Name: name, Set: "db", Subset: m, Ordinal: ss.OrdinalStart + k,
				UID: "u-" + name, Node: z + "-n1", NodeZone: z, Domain: z, Phase: "Running", Ready: true})
			w.pvcs[m] = append(w.pvcs[m], PVCObs{Namespace: "ns", Name: "data-" + name, UID: "c-" + name})
		}
		w.fs.Subsets = append(w.fs.Subsets, ss)
		w.sts[m] = perSubset
	}
	return w
}

func (w *world) pod(m, name string) *PodObs {
	for i := range w.pods[m] {
		if w.pods[m][i].Name == name {
			return &w.pods[m][i]
		}
	}
	w.t.Fatalf("no pod %s/%s", m, name)
	return nil
}

// sample records the world as it is, at second n.
func (w *world) sample(n int) {
	s := Sample{T: t0.Add(time.Duration(n) * time.Second), Members: map[string]MemberObs{}}
	for _, m := range []string{"east", "west"} {
		mo := MemberObs{Pods: append([]PodObs(nil), w.pods[m]...), PVCs: append([]PVCObs(nil), w.pvcs[m]...)}
		mo.Placements = append(mo.Placements, PlacementObs{Namespace: "ns", Name: "db-" + m, Set: "db", Subset: m,
			OrdinalStart: w.fs.Subsets[map[string]int{"east": 0, "west": 1}[m]].OrdinalStart, Domains: zones, FencedEpoch: w.fenced[m]})
		mo.StatefulSets = []StatefulSetObs{{Namespace: "ns", Name: "db-" + m, Replicas: w.sts[m]}}
		s.Members[m] = mo
	}
	if !w.hubDown {
		fs := w.fs
		fs.Subsets = append([]SubsetObs(nil), w.fs.Subsets...)
		s.Hub = &HubObs{FleetSets: []FleetSetObs{fs}, Available: map[string]bool{"east": true, "west": true}}
	}
	w.h.Samples = append(w.h.Samples, s)
}

func (w *world) run(from, to int) {
	for n := from; n < to; n++ {
		w.sample(n)
	}
}

func only(t *testing.T, r Result, want Invariant) Violation {
	t.Helper()
	var got []Violation
	for _, v := range r.Violations {
		if v.Invariant != want {
			t.Errorf("unexpected violation %s", v)
			continue
		}
		got = append(got, v)
	}
	if len(got) != 1 {
		t.Fatalf("%d %s violations, want 1: %v", len(got), want, got)
	}
	t.Logf("caught: %s", got[0])
	return got[0]
}

var testOpts = Options{Recovery: 30 * time.Second, ConvergeBound: time.Minute, FenceSlack: 30 * time.Second}

func TestCleanHistory(t *testing.T) {
	w := newWorld(t, 4)
	w.run(0, 30)
	// A rollout replacing one instance at a time, then a fault on west
	// that fences two of its pods, healed, the pods back.
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	for i, name := range []string{"db-east-3", "db-east-2", "db-east-1", "db-east-0"} {
		p := w.pod("east", name)
		p.Ready = false
		w.run(30+4*i, 32+4*i)
		p.Ready, p.UID = true, p.UID+"-r2"
		w.fs.UpdatedReplicas++
		w.run(32+4*i, 34+4*i)
	}
	w.h.Faults = []FaultRecord{{Fault: Fault{ID: 1, Kind: MemberCut, Cluster: "west"}, Injected: t0.Add(50 * time.Second), Healed: t0.Add(70 * time.Second)}}
	saved := w.pods["west"]
	w.pods["west"] = w.pods["west"][2:]
	w.fs.ReadyReplicas = 6
	w.run(50, 75)
	w.pods["west"] = saved
	w.fs.ReadyReplicas = 8
	w.fs.UpdatedReplicas, w.fs.CurrentRevision = 8, "r2"
	w.run(75, 90)
	// The hub unreadable for a while: nothing to say.
	w.hubDown = true
	w.run(90, 95)
	w.hubDown = false
	w.run(95, 100)
	r := Check(w.h, testOpts)
	for _, v := range r.Violations {
		t.Errorf("violation in a clean history: %s", v)
	}
	if d, ok := r.Convergence["ns/db"]; !ok || d != 5*time.Second {
		t.Errorf("convergence %v %v, want 5s after the heal", d, ok)
	}
	if r.PeakRolloutUnavailable["ns/db"] != 1 {
		t.Errorf("peak rollout unavailability %d, want 1", r.PeakRolloutUnavailable["ns/db"])
	}
}

func TestDualRunningCaught(t *testing.T) {
	w := newWorld(t, 2)
	w.run(0, 10)
	// east's db-east-1 also Running in west (a relocation that did not wait
	// for the fence), for 3 samples.
	p := *w.pod("east", "db-east-1")
	p.UID = "other"
	w.pods["west"] = append(w.pods["west"], p)
	w.h.Faults = []FaultRecord{{Fault: Fault{ID: 7, Kind: MemberCut, Cluster: "east"}, Injected: t0.Add(5 * time.Second), Healed: t0.Add(15 * time.Second)}}
	w.run(10, 13)
	w.pods["west"] = w.pods["west"][:2]
	w.run(13, 30)
	v := only(t, Check(w.h, testOpts), DualRunning)
	if !v.T.Equal(t0.Add(10*time.Second)) || len(v.Faults) != 1 || !strings.Contains(v.Faults[0], "member-cut east") ||
		!strings.Contains(strings.Join(v.Objects, " "), "ns/db-east-1") {
		t.Errorf("violation %s: want t+10s, fault #7, pod ns/db-east-1", v)
	}
	// A terminating copy still Running counts too.
	w2 := newWorld(t, 2)
	w2.run(0, 5)
	p = *w2.pod("west", "db-west-1000")
	p.Deleting = true
	w2.pods["east"] = append(w2.pods["east"], p)
	w2.run(5, 6)
	w2.pods["east"] = w2.pods["east"][:2]
	w2.run(6, 20)
	only(t, Check(w2.h, testOpts), DualRunning)
}

func TestPVCDeletedCaught(t *testing.T) {
	w := newWorld(t, 2)
	w.run(0, 10)
	w.pvcs["east"] = w.pvcs["east"][1:] // data-db-east-0 gone
	w.run(10, 20)
	v := only(t, Check(w.h, testOpts), PVCDeleted)
	if !strings.Contains(v.Objects[0], "data-db-east-0") || !v.T.Equal(t0.Add(10*time.Second)) {
		t.Errorf("violation %s", v)
	}
	// Replaced under the same name.
	w = newWorld(t, 2)
	w.run(0, 10)
	w.pvcs["west"][0].UID = "new"
	w.run(10, 20)
	only(t, Check(w.h, testOpts), PVCDeleted)
}

func TestPVCGoneLegitimately(t *testing.T) {
	// The member unreadable: no verdict; back with the claim: fine.
	w := newWorld(t, 2)
	w.run(0, 10)
	w.sample(10)
	last := &w.h.Samples[len(w.h.Samples)-1]
	last.Members["east"] = MemberObs{Err: "connection refused"}
	w.run(11, 20)
	// The FleetSet deleted: its claims may go (deletionPolicy Delete).
	w.fs.Deleted = true
	w.pvcs["west"] = nil
	w.run(20, 30)
	for _, v := range CheckPVCs(w.h) {
		t.Errorf("unexpected %s", v)
	}
	// A claim not of a FleetSet of the run is not tracked.
	w = newWorld(t, 2)
	w.pvcs["east"] = append(w.pvcs["east"], PVCObs{Namespace: "ns", Name: "scratch", UID: "x"})
	w.run(0, 5)
	w.pvcs["east"] = w.pvcs["east"][:2]
	w.run(5, 10)
	for _, v := range CheckPVCs(w.h) {
		t.Errorf("unexpected %s", v)
	}
}

func TestWrongZoneCaught(t *testing.T) {
	// The pod's node is not in its domain label's zone (nor its seat's).
	w := newWorld(t, 3)
	w.run(0, 5)
	p := w.pod("east", "db-east-0")
	good := *p
	p.Node, p.NodeZone = "zone-x-n1", "zone-x"
	w.run(5, 8)
	*p = good
	w.run(8, 20)
	r := Check(w.h, testOpts)
	var kinds []string
	for _, v := range r.Violations {
		if v.Invariant != WrongZone {
			t.Errorf("unexpected %s", v)
		}
		kinds = append(kinds, v.Detail)
	}
	// label mismatch, seat mismatch, moved zone — each reported once.
	if len(kinds) != 3 {
		t.Fatalf("got %d wrong-zone violations, want 3: %q", len(kinds), kinds)
	}
	// Label and node agree, but the seat sequence says another domain.
	w = newWorld(t, 3)
	p = w.pod("west", "db-west-1001")
	other := seatZone(t, 0)
	p.Node, p.NodeZone, p.Domain = other+"-n2", other, other
	w.run(0, 5)
	vs := CheckZones(w.h)
	if len(vs) != 1 {
		t.Fatalf("%d wrong-zone violations, want 1: %v", len(vs), vs)
	}
	if v := vs[0]; !strings.Contains(v.Detail, "seat 1") {
		t.Errorf("violation %s: want the seat named", v)
	}
}

func TestRolloutUnavailabilityCaught(t *testing.T) {
	w := newWorld(t, 4)
	w.run(0, 10)
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	// Two instances of east down at once with maxUnavailable 1.
	w.pod("east", "db-east-3").Ready = false
	w.pod("east", "db-east-2").Ready = false
	w.run(10, 15)
	w.pod("east", "db-east-3").Ready = true
	w.pod("east", "db-east-2").Ready = true
	w.fs.UpdatedReplicas, w.fs.CurrentRevision = 8, "r2"
	w.run(15, 30)
	v := only(t, Check(w.h, testOpts), RolloutUnav)
	if !strings.Contains(v.Detail, "2 instances unavailable") {
		t.Errorf("violation %s", v)
	}
}

// A scale-down during a rollout, before the hub's status shows it: the
// member's StatefulSet drops to 2 and its two highest instances go; they
// were scaled away, not made unavailable (seed 60's 60-minute replay
// reported this as a violation before the checker read the StatefulSets).
func TestScaleDownDuringRolloutIsNotUnavailability(t *testing.T) {
	w := newWorld(t, 4)
	w.run(0, 10)
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	w.fs.Generation, w.fs.Replicas = 2, 4 // status (subsets of 4) not yet of generation 2
	w.sts["east"] = 2
	w.pods["east"] = w.pods["east"][:2]
	w.run(10, 15)
	w.fs.ObservedGeneration, w.fs.Subsets[0].Replicas = 2, 2
	w.fs.UpdatedReplicas, w.fs.CurrentRevision, w.fs.ReadyReplicas = 6, "r2", 6
	w.run(15, 30)
	r := Check(w.h, testOpts)
	for _, v := range r.Violations {
		t.Errorf("unexpected %s", v)
	}
	if r.PeakRolloutUnavailable["ns/db"] != 0 {
		t.Errorf("peak rollout unavailability %d, want 0", r.PeakRolloutUnavailable["ns/db"])
	}
	// The same two instances gone while the member's StatefulSet still
	// wants them are a rollout's doing.
	w = newWorld(t, 4)
	w.run(0, 10)
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	w.pods["east"] = w.pods["east"][:2]
	w.run(10, 15)
	only(t, Check(w.h, testOpts), RolloutUnav)
}

func TestRolloutUnavailabilityOfFaultsCountedApart(t *testing.T) {
	w := newWorld(t, 4)
	w.run(0, 10)
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	w.h.Faults = []FaultRecord{{Fault: Fault{ID: 1, Kind: MemberKCM, Cluster: "west"}, Injected: t0.Add(8 * time.Second), Healed: t0.Add(12 * time.Second)}}
	// west loses three instances to the fault, east one to the rollout.
	for _, n := range []string{"db-west-1001", "db-west-1002", "db-west-1003"} {
		w.pod("west", n).Ready = false
	}
	w.pod("east", "db-east-3").Ready = false
	w.run(10, 15)
	for _, n := range []string{"db-west-1001", "db-west-1002", "db-west-1003"} {
		w.pod("west", n).Ready = true
	}
	w.pod("east", "db-east-3").Ready = true
	w.fs.UpdatedReplicas, w.fs.CurrentRevision = 8, "r2"
	w.run(15, 30)
	r := Check(w.h, testOpts)
	for _, v := range r.Violations {
		t.Errorf("unexpected %s", v)
	}
	if r.PeakFaultUnavailable["ns/db"] != 3 || r.PeakRolloutUnavailable["ns/db"] != 1 {
		t.Errorf("peaks: fault %d rollout %d, want 3 and 1", r.PeakFaultUnavailable["ns/db"], r.PeakRolloutUnavailable["ns/db"])
	}
}

func TestNotConvergedCaught(t *testing.T) {
	// After the last fault, one instance never comes back.
	w := newWorld(t, 2)
	w.h.Faults = []FaultRecord{{Fault: Fault{ID: 1, Kind: MemberCut, Cluster: "east"}, Injected: t0.Add(5 * time.Second), Healed: t0.Add(10 * time.Second)}}
	w.pod("east", "db-east-1").Ready = false
	w.fs.ReadyReplicas = 3
	w.run(0, 90)
	v := only(t, Check(w.h, testOpts), NotConverged)
	if !strings.Contains(v.Detail, "ready 3 of 4") {
		t.Errorf("violation %s", v)
	}
	// A subset left on its fallback with failback Automatic.
	w = newWorld(t, 2)
	w.h.Ops = []OpRecord{{Op: Op{ID: 1, Kind: OpScale, FleetSet: "db"}, Done: t0.Add(3 * time.Second)}}
	w.fs.Subsets[0].Cluster, w.fs.Subsets[0].Failover = "west", "FailedOver"
	w.pods["west"] = append(w.pods["west"], w.pods["east"]...)
	w.pods["east"] = nil
	w.run(0, 90)
	v = only(t, Check(w.h, testOpts), NotConverged)
	if !strings.Contains(v.Detail, "subset east at west") {
		t.Errorf("violation %s", v)
	}
	// The same with failback Manual converges where failover put it.
	w.h.Samples = nil
	w.fs.FailbackAutomatic = false
	w.run(0, 90)
	if vs := Check(w.h, testOpts).Violations; len(vs) != 0 {
		t.Errorf("failback Manual, subset on its fallback: %v", vs)
	}
	// Per-zone counts off the division.
	w = newWorld(t, 3)
	w.fs.Subsets[1].Domains = map[string]int{"zone-a": 3}
	w.run(0, 90)
	only(t, Check(w.h, testOpts), NotConverged)
}

// TestPVCDeletedCaughtForClaimsCreatedMidRun: a claim first seen after the
// run started (a scale-up before a cut: claim-growth-cut) is tracked like
// the first ones: deleted during the cut, it is caught.
func TestPVCDeletedCaughtForClaimsCreatedMidRun(t *testing.T) {
	w := newWorld(t, 2)
	w.run(0, 10)
	w.pvcs["west"] = append(w.pvcs["west"], PVCObs{Namespace: "ns", Name: "data-db-west-1002", UID: "c-grown"})
	w.run(10, 15)
	w.h.Faults = []FaultRecord{{Fault: Fault{ID: 1, Kind: ClaimGrowthCut, Cluster: "west"}, Injected: t0.Add(15 * time.Second), Healed: t0.Add(32 * time.Second)}}
	w.run(15, 30)
	w.pvcs["west"] = w.pvcs["west"][:2]
	w.run(30, 40)
	v := only(t, Check(w.h, testOpts), PVCDeleted)
	if !strings.Contains(v.Objects[0], "data-db-west-1002 (uid c-grown)") || !v.T.Equal(t0.Add(30*time.Second)) ||
		len(v.Faults) != 1 || v.Faults[0] != "#1 claim-growth-cut west" {
		t.Errorf("violation %s", v)
	}
}

// TestFencedWithoutIsolationCaught: a member that records a fence during a
// hub outage (stale peers counted as silent) is caught once per record;
// fences during or shortly after a fault that isolates the member are
// not; a record changing epoch is a new fence.
func TestFencedWithoutIsolationCaught(t *testing.T) {
	epoch := func(e int64) *int64 { return &e }
	w := newWorld(t, 2)
	w.h.Faults = []FaultRecord{
		{Fault: Fault{ID: 1, Kind: HubStalePeers, Cluster: "hub"}, Injected: t0.Add(10 * time.Second), Healed: t0.Add(50 * time.Second)},
		{Fault: Fault{ID: 2, Kind: MemberCut, Cluster: "west"}, Injected: t0.Add(20 * time.Second), Healed: t0.Add(40 * time.Second)},
	}
	w.run(0, 25)
	w.fenced["east"] = epoch(0) // east fenced during the hub outage: caught
	w.fenced["west"] = epoch(0) // west, cut: its own fault's
	w.run(25, 30)
	// east unreadable a while, read again with the same record: nothing new.
	w.sample(30)
	w.h.Samples[len(w.h.Samples)-1].Members["east"] = MemberObs{Err: "timeout"}
	w.run(31, 45)
	w.fenced["west"] = nil // lifted after the heal
	w.run(45, 60)
	w.fenced["west"] = epoch(0) // again, 25 s after the heal: within FenceSlack
	w.run(60, 70)
	w.fenced["west"] = nil
	w.run(70, 75)
	w.fenced["west"] = epoch(1) // 35 s after: caught
	w.run(75, 80)
	vs := CheckFences(w.h, testOpts)
	if len(vs) != 2 {
		t.Fatalf("%d violations, want 2: %v", len(vs), vs)
	}
	if v := vs[0]; !v.T.Equal(t0.Add(25*time.Second)) || v.Objects[0] != "subsetplacement east/ns/db-east" || !slices.Contains(v.Faults, "#1 hub-stale-peers hub") {
		t.Errorf("first: %s", v)
	}
	if v := vs[1]; !v.T.Equal(t0.Add(75*time.Second)) || v.Objects[0] != "subsetplacement west/ns/db-west" || !strings.Contains(v.Detail, "epoch 1") {
		t.Errorf("second: %s", v)
	}
	for _, v := range vs {
		t.Logf("caught: %s", v)
	}
	// Through Check, with a clean history otherwise.
	only(t, Check(w.h, Options{Recovery: testOpts.Recovery, ConvergeBound: time.Hour, FenceSlack: time.Hour}), FencedUnisolated)
}

// TestPodReplacedAfterRestoreCaught: a pod of a FleetSet a hub-restore
// re-created, replaced after the restore, is caught; one replaced in a
// member with a fault of its own, or after the restore's window, or of a
// FleetSet rolling out when the restore began, is not.
func TestPodReplacedAfterRestoreCaught(t *testing.T) {
	restore := FaultRecord{Fault: Fault{ID: 1, Kind: HubRestore, Cluster: "hub", Restore: []string{"db"}},
		Injected: t0.Add(10 * time.Second), Healed: t0.Add(40 * time.Second)}
	w := newWorld(t, 2)
	w.h.Faults = []FaultRecord{restore, {Fault: Fault{ID: 2, Kind: MemberOCM, Cluster: "west"}, Injected: t0.Add(20 * time.Second), Healed: t0.Add(25 * time.Second)},
		{Fault: Fault{ID: 3, Kind: MemberFreeze, Cluster: "east"}, Injected: t0.Add(20 * time.Second), Healed: t0.Add(25 * time.Second)}}
	w.run(0, 12)
	w.hubDown = true // the FleetSet deleted and re-created: the sampler may miss it
	w.run(12, 15)
	w.hubDown = false
	w.run(15, 45)
	w.pod("east", "db-east-1").UID = "u-new"         // 5 s after the hub is back
	w.pod("west", "db-west-1000").UID = "u-new-west" // west lost the hub at 20 s (its OCM agents); east's freeze does not count
	w.run(45, 80)
	w.pod("east", "db-east-0").UID = "u-later" // after the window (70 s)
	w.run(80, 90)
	var r Result
	vs := CheckRestores(w.h, testOpts, &r)
	if len(vs) != 1 {
		t.Fatalf("%d violations, want 1: %v", len(vs), vs)
	}
	v := vs[0]
	if v.Invariant != PodReplaced || !v.T.Equal(t0.Add(45*time.Second)) || v.Objects[0] != "pod east/ns/db-east-1 (uid u-db-east-1)" || !strings.Contains(v.Detail, "replaced (uid u-new)") {
		t.Errorf("violation %s", v)
	}
	t.Logf("caught: %s", v)
	// east's other pod followed to the end; east's replaced one and west's
	// two (disturbed) not.
	if got := r.RestoredPods[restore.Fault.String()]; got != 1 {
		t.Errorf("RestoredPods %v, want 1 for %v", r.RestoredPods, restore.Fault)
	}
	// Gone, and stopped; east unreadable (frozen) in the last sample
	// before the restore: its reading before that counts.
	w = newWorld(t, 2)
	w.h.Faults = []FaultRecord{restore}
	w.run(0, 20)
	w.h.Samples[10].Members["east"] = MemberObs{Err: "frozen"}
	w.pods["east"] = w.pods["east"][1:]
	w.pod("west", "db-west-1001").Phase = "Succeeded"
	w.run(20, 30)
	vs = CheckRestores(w.h, testOpts, nil)
	if len(vs) != 2 || !strings.Contains(vs[0].Detail+vs[1].Detail, " gone ") || !strings.Contains(vs[0].Detail+vs[1].Detail, "stopped (Succeeded)") {
		t.Errorf("want db-east-0 gone and db-west-1001 stopped: %v", vs)
	}
	// Rolling out when the restore began: not followed.
	w = newWorld(t, 2)
	w.h.Faults = []FaultRecord{restore}
	w.fs.UpdateRevision, w.fs.UpdatedReplicas = "r2", 0
	w.run(0, 20)
	w.pod("east", "db-east-1").UID = "u-r2"
	w.run(20, 30)
	if vs := CheckRestores(w.h, testOpts, nil); len(vs) != 0 {
		t.Errorf("a rollout's replacement reported: %v", vs)
	}
}
