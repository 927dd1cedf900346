package chaos

import (
	"cmp"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetset/fleetset/e2e/framework"
)

var testConfig = Config{
	Duration: 20 * time.Minute, Warmup: 20 * time.Second, MaxFaults: 2,
	Members:   []string{"east", "west", "north"},
	FleetSets: []Target{{Name: "db", MinReplicas: 3, MaxReplicas: 9}, {Name: "web", MinReplicas: 3, MaxReplicas: 8, Failback: true}},
	FaultGap:  [2]time.Duration{3 * time.Second, 15 * time.Second}, OpGap: [2]time.Duration{8 * time.Second, 20 * time.Second},
}

func TestDrawIsReproducible(t *testing.T) {
	a, b := Draw(42, testConfig), Draw(42, testConfig)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew two schedules")
	}
	if reflect.DeepEqual(a.Faults, Draw(43, testConfig).Faults) {
		t.Fatal("seeds 42 and 43 drew the same faults")
	}
	t.Logf("seed 42, 20 minutes: %d faults, %d operations", len(a.Faults), len(a.Ops))
	if len(a.Faults) < 60 || len(a.Ops) < 50 {
		t.Errorf("20 minutes drew %d faults and %d operations: too few", len(a.Faults), len(a.Ops))
	}
}

func TestDrawRespectsLimits(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		c := testConfig
		c.MaxFaults = 1 + int(seed%3)
		s := Draw(seed, c)
		if n := maxConcurrent(s.Faults); n > c.MaxFaults {
			t.Errorf("seed %d: %d faults at once, max %d", seed, n, c.MaxFaults)
		}
		kinds := map[FaultKind]int{}
		for i, f := range s.Faults {
			kinds[f.Kind]++
			if f.At < c.Warmup || f.end() > c.Duration || f.Hold < time.Second {
				t.Errorf("seed %d: fault %v at %v for %v outside the phase", seed, f, f.At, f.Hold)
			}
			for _, g := range s.Faults[i+1:] {
				if g.At < f.end() && f.At < g.end() && conflicts(f, g) {
					t.Errorf("seed %d: conflicting faults overlap: %v and %v", seed, f, g)
				}
			}
		}
		if seed == 1 && len(kinds) != len(mainKinds) {
			t.Errorf("seed 1 drew only kinds %v", kinds)
		}
		paused := map[string]bool{}
		for _, o := range s.Ops {
			switch o.Kind {
			case OpPause:
				paused[o.FleetSet] = true
			case OpResume:
				paused[o.FleetSet] = false
			case OpFailback:
				if o.FleetSet != "web" {
					t.Errorf("seed %d: failback drawn for %s (failback Automatic)", seed, o.FleetSet)
				}
			}
		}
		for fs, p := range paused {
			if p {
				t.Errorf("seed %d: %s left paused at the end", seed, fs)
			}
		}
	}
}

// TestFaultActions: every fault kind has provider actions to inject and
// undo it, aimed at the fault's cluster, and undoing starts what injecting
// stopped (in the same order, or, for a freeze, the reverse one).
func TestFaultActions(t *testing.T) {
	undo := map[framework.Op]framework.Op{framework.OpKill: framework.OpStart, framework.OpStop: framework.OpStart,
		framework.OpPause: framework.OpResume, framework.OpCut: framework.OpHeal, framework.OpBlackhole: framework.OpHeal}
	for _, k := range FaultKinds {
		f := Fault{Kind: k, Cluster: "hub"}
		if k.memberScoped() {
			f.Cluster = "west"
		}
		inject, heal := f.Actions()
		if len(inject) == 0 || len(inject) != len(heal) {
			t.Errorf("%s: %d inject and %d heal calls", k, len(inject), len(heal))
			continue
		}
		if k == MemberFreeze {
			slices.Reverse(heal)
		}
		for i := range inject {
			in, h := inject[i], heal[i]
			if in.Cluster != f.Cluster || in.Cluster != h.Cluster || in.Proc != h.Proc || undo[in.Op] != h.Op {
				t.Errorf("%s: inject %v, heal %v: want heal to undo inject on cluster %s", k, in, h, f.Cluster)
			}
		}
	}
	if in, h := (Fault{Kind: "unknown"}).Actions(); in != nil || h != nil {
		t.Errorf("unknown kind: %v %v, want none", in, h)
	}
}

// TestMemberFreezeStopsTheWholeMember: a freeze SIGSTOPs every process of
// the member that the brief names — its apiserver and etcd, kwok, the
// fleetset-scheduler (member component), both OCM agents, its hub link —
// the workers before the control plane, and thaws the control plane first.
func TestMemberFreezeStopsTheWholeMember(t *testing.T) {
	inject, heal := Fault{Kind: MemberFreeze, Cluster: "east"}.Actions()
	var paused, resumed []string
	for _, a := range inject {
		paused = append(paused, a.Proc)
	}
	for _, a := range heal {
		resumed = append(resumed, a.Proc)
	}
	for _, p := range []string{"kube-apiserver", "etcd", "kwok", "fleetset-scheduler", "registration-agent", "work-agent", "hub-link"} {
		if !slices.Contains(paused, p) {
			t.Errorf("a freeze does not stop %s: %v", p, paused)
		}
	}
	if slices.Index(paused, "fleetset-scheduler") > slices.Index(paused, "kube-apiserver") {
		t.Errorf("freeze order %v: the member component must stop before its apiserver", paused)
	}
	if slices.Index(resumed, "kube-apiserver") > slices.Index(resumed, "fleetset-scheduler") {
		t.Errorf("thaw order %v: the apiserver must resume before the member component", resumed)
	}
}

// TestExtraFaultsKeepTheMainSchedule: the extra kinds (blackhole, freeze)
// come from their own stream: a seed's faults of the main kinds are the
// ones it drew without them (CI's fixed seeds keep their meaning), the
// extra ones are drawn, respect the limits, and a freeze overlaps nothing
// else on its member; at most one extra fault is active at a time, on top
// of MaxFaults.
func TestExtraFaultsKeepTheMainSchedule(t *testing.T) {
	main := func(fs []Fault) []Fault {
		var out []Fault
		for _, f := range fs {
			if !slices.Contains(extraKinds, f.Kind) {
				f.ID = 0
				out = append(out, f)
			}
		}
		return out
	}
	drew := 0
	for seed := uint64(1); seed <= 30; seed++ {
		c := testConfig
		without := Draw(seed, c)
		c.ExtraGap = [2]time.Duration{20 * time.Second, 60 * time.Second}
		with := Draw(seed, c)
		if !reflect.DeepEqual(main(without.Faults), main(with.Faults)) {
			t.Fatalf("seed %d: the extra kinds changed the main faults", seed)
		}
		if len(with.Faults) > len(without.Faults) {
			drew++
		}
		var extras []Fault
		for _, f := range with.Faults {
			if slices.Contains(extraKinds, f.Kind) {
				extras = append(extras, f)
			}
		}
		if n := maxConcurrent(extras); n > 1 {
			t.Errorf("seed %d: %d extra faults at once, max 1", seed, n)
		}
		if n := maxConcurrent(with.Faults); n > c.MaxFaults+1 {
			t.Errorf("seed %d: %d faults at once, max %d", seed, n, c.MaxFaults+1)
		}
		for i, f := range with.Faults {
			if f.ID != i+1 || (i > 0 && f.At < with.Faults[i-1].At) {
				t.Errorf("seed %d: fault %d is %v at %v: not numbered in time order", seed, i, f, f.At)
			}
			for _, g := range with.Faults[i+1:] {
				if g.At < f.end() && f.At < g.end() && f.Cluster == g.Cluster && (f.Kind == MemberFreeze || g.Kind == MemberFreeze) {
					t.Errorf("seed %d: %v overlaps %v on a frozen member", seed, f, g)
				}
			}
			if f.Kind == MemberFreeze && f.Hold > 12*time.Second {
				t.Errorf("seed %d: freeze %v held %v, longer than a relocation could wait", seed, f, f.Hold)
			}
		}
	}
	if drew < 20 {
		t.Errorf("only %d of 30 seeds drew an extra fault", drew)
	}
}

// TestFenceEditsDuringCuts: with a Target that has a fence, fence edits
// are drawn inside a member cut (plain or silent), each followed by its
// restore to the Target's values after the heal; operations stay in time
// order and numbered.
func TestFenceEditsDuringCuts(t *testing.T) {
	c := testConfig
	c.FleetSets = append(slices.Clone(c.FleetSets), Target{Name: "fenced", MinReplicas: 3, MaxReplicas: 3, FenceGrace: 40, TerminationGrace: 20})
	c.ExtraGap = [2]time.Duration{20 * time.Second, 60 * time.Second}
	edits := 0
	for seed := uint64(1); seed <= 20; seed++ {
		s := Draw(seed, c)
		for i, o := range s.Ops {
			if o.ID != i+1 || (i > 0 && o.At < s.Ops[i-1].At) {
				t.Fatalf("seed %d: op %d is %v at %v: not numbered in time order", seed, i, o, o.At)
			}
			if o.Kind != OpFenceEdit {
				continue
			}
			edits++
			if o.FleetSet != "fenced" || o.FenceGrace != 0 || o.TerminationGrace != 10 {
				t.Errorf("seed %d: %v", seed, o)
			}
			var cut *Fault
			for _, f := range s.Faults {
				if (f.Kind == MemberCut || f.Kind == MemberBlackhole) && (f.At+f.Hold/2).Truncate(100*time.Millisecond) == o.At {
					cut = &f
				}
			}
			if cut == nil {
				t.Errorf("seed %d: %v at %v inside no cut", seed, o, o.At)
				continue
			}
			restored := false
			for _, r := range s.Ops[i+1:] {
				if r.Kind == OpFenceRestore && r.FleetSet == o.FleetSet && r.At >= min(cut.end(), c.Duration) && r.FenceGrace == 40 && r.TerminationGrace == 20 {
					restored = true
				}
			}
			if !restored {
				t.Errorf("seed %d: %v during %v never restored after the heal", seed, o, cut)
			}
		}
	}
	if edits == 0 {
		t.Error("20 seeds drew no fence edit")
	}
	if ops := Draw(1, testConfig).Ops; slices.ContainsFunc(ops, func(o Op) bool { return o.Kind == OpFenceEdit }) {
		t.Error("a fence edit drawn with no Target that has a fence")
	}
}

// TestLateFaultsKeepTheSchedule: the late kinds (claim-growth-cut,
// hub-stale-peers) come from a third stream: a seed's other faults and
// operations are the ones it drew without them; each claim-growth-cut is
// preceded, ClaimGrowthLead before, by a claim-growth of a Target with
// claims to its MaxReplicas; at most one late fault is active at a time,
// none overlaps a conflicting fault, and a stale-peers outage holds past
// the members' heartbeat timeout. The other operations are the same, but
// those a hub-restore defers past its window.
func TestLateFaultsKeepTheSchedule(t *testing.T) {
	strip := func(s Schedule) ([]Fault, []Op) {
		var fs []Fault
		var ops []Op
		for _, f := range s.Faults {
			if !slices.Contains(lateKinds, f.Kind) {
				f.ID = 0
				fs = append(fs, f)
			}
		}
		for _, o := range s.Ops {
			if o.Kind != OpClaimGrowth {
				o.ID = 0
				ops = append(ops, o)
			}
		}
		return fs, ops
	}
	// sameOps: b is a, but for operations deferred to the end of one of
	// restores' windows; both in time order.
	sameOps := func(a, b []Op, restores []Fault) bool {
		if len(a) != len(b) {
			return false
		}
		key := func(o Op) string {
			o.At = 0
			return fmt.Sprint(o) + fmt.Sprint(o.Replicas, o.Version, o.FenceGrace, o.TerminationGrace)
		}
		var ka, kb []string
		for i := range a {
			ka, kb = append(ka, key(a[i])), append(kb, key(b[i]))
			if i > 0 && b[i].At < b[i-1].At {
				return false
			}
		}
		slices.Sort(ka)
		slices.Sort(kb)
		if !slices.Equal(ka, kb) {
			return false
		}
		for _, o := range b {
			if slices.ContainsFunc(a, func(p Op) bool { return p.At == o.At && key(p) == key(o) }) {
				continue
			}
			if !slices.ContainsFunc(restores, func(f Fault) bool { return o.At == f.end()+RestoreQuiet+100*time.Millisecond }) {
				t.Logf("%v at %v moved, not to the end of a restore's window", o, o.At)
				return false
			}
		}
		return true
	}
	drew := map[FaultKind]int{}
	for seed := uint64(1); seed <= 30; seed++ {
		c := RunConfig(6*time.Minute, 2, []string{"east", "west", "north"}, true)
		c.LateGap = [2]time.Duration{}
		without := Draw(seed, c)
		c.LateGap = [2]time.Duration{30 * time.Second, 90 * time.Second}
		with := Draw(seed, c)
		wf, wo := strip(without)
		gf, gops := strip(with)
		var restores []Fault
		for _, f := range with.Faults {
			if f.Kind == HubRestore {
				restores = append(restores, f)
				if len(f.Restore) == 0 {
					t.Errorf("seed %d: %v restores nothing", seed, f)
				}
				for _, o := range with.Ops {
					if o.At >= f.At-RestoreLead && o.At <= f.end()+RestoreQuiet && slices.Contains(f.Restore, o.FleetSet) {
						t.Errorf("seed %d: %v at %v inside the window of %v at %v", seed, o, o.At, f, f.At)
					}
				}
			}
		}
		if !reflect.DeepEqual(wf, gf) || !sameOps(wo, gops, restores) {
			t.Fatalf("seed %d: the late kinds changed the other faults or operations", seed)
		}
		var late []Fault
		for i, f := range with.Faults {
			if f.ID != i+1 {
				t.Errorf("seed %d: fault %d numbered %d", seed, i, f.ID)
			}
			if !slices.Contains(lateKinds, f.Kind) {
				continue
			}
			drew[f.Kind]++
			late = append(late, f)
			for _, g := range with.Faults {
				if g.ID != f.ID && g.At < f.end() && f.At < g.end() && conflicts(f, g) {
					t.Errorf("seed %d: %v overlaps the conflicting %v", seed, f, g)
				}
			}
			switch f.Kind {
			case HubStalePeers:
				if f.Cluster != "hub" || (f.Hold < StubPeerLead+30*time.Second && f.end() < c.Duration) {
					t.Errorf("seed %d: %v held %v", seed, f, f.Hold)
				}
			case ClaimGrowthCut:
				var grow []Op
				for _, o := range with.Ops {
					if o.Kind == OpClaimGrowth && o.Fault == f.ID {
						grow = append(grow, o)
					}
				}
				if len(grow) != 1 {
					t.Errorf("seed %d: %v prepared by %d claim growths", seed, f, len(grow))
					continue
				}
				o := grow[0]
				want := map[string]int32{"db": 9, "cache": 6}
				if o.At != f.At-ClaimGrowthLead || want[o.FleetSet] == 0 || o.Replicas != want[o.FleetSet] || o.At < c.Warmup {
					t.Errorf("seed %d: %v at %v prepares %v at %v: want a FleetSet with claims scaled to its maximum %v before", seed, o, o.At, f, f.At, ClaimGrowthLead)
				}
			}
		}
		if n := maxConcurrent(late); n > 1 {
			t.Errorf("seed %d: %d late faults at once", seed, n)
		}
	}
	if drew[ClaimGrowthCut] == 0 || drew[HubStalePeers] == 0 || drew[HubRestore] == 0 {
		t.Errorf("30 seeds of 6 minutes drew %v", drew)
	}
	t.Logf("30 seeds of 6 minutes drew %v", drew)
	// No Target with claims: no claim growth.
	c := testConfig
	c.LateGap = [2]time.Duration{30 * time.Second, 90 * time.Second}
	for seed := uint64(1); seed <= 10; seed++ {
		for _, f := range Draw(seed, c).Faults {
			if f.Kind == ClaimGrowthCut {
				t.Fatalf("seed %d: %v drawn with no Target that has claims", seed, f)
			}
		}
	}
}

// TestStalePeersAndClaimGrowthActions: a claim-growth-cut cuts its
// member's link like a member-cut; a hub-stale-peers stops and starts the
// hub's kube-apiserver like a hub-apiserver-stop (the stubs are the run's);
// a hub-restore kills and starts fleetset-hub like a hub-kill (the restore
// is the run's);
// the cut and the outage isolate, in FaultKind.Isolates' sense, only the
// cut.
func TestStalePeersAndClaimGrowthActions(t *testing.T) {
	for _, c := range []struct{ late, like Fault }{
		{Fault{Kind: ClaimGrowthCut, Cluster: "west"}, Fault{Kind: MemberCut, Cluster: "west"}},
		{Fault{Kind: HubStalePeers, Cluster: "hub"}, Fault{Kind: HubAPIServer, Cluster: "hub"}},
		{Fault{Kind: HubRestore, Cluster: "hub"}, Fault{Kind: HubKill, Cluster: "hub"}},
	} {
		li, lh := c.late.Actions()
		wi, wh := c.like.Actions()
		if !reflect.DeepEqual(li, wi) || !reflect.DeepEqual(lh, wh) {
			t.Errorf("%v: %v / %v, want %v's %v / %v", c.late, li, lh, c.like, wi, wh)
		}
		if !conflicts(c.late, c.like) {
			t.Errorf("%v and %v may overlap", c.late, c.like)
		}
	}
	if !ClaimGrowthCut.Isolates() || HubStalePeers.Isolates() || HubAPIServer.Isolates() || HubKill.Isolates() || HubRestore.Isolates() {
		t.Error("Isolates: want the cut only")
	}
	// A restore writes to the hub's apiserver: never while it is stopped.
	if !conflicts(Fault{Kind: HubRestore, Cluster: "hub"}, Fault{Kind: HubStalePeers, Cluster: "hub"}) {
		t.Error("a hub-restore may overlap a hub apiserver outage")
	}
	if !conflicts(Fault{Kind: ClaimGrowthCut, Cluster: "east"}, Fault{Kind: MemberScheduler, Cluster: "east"}) {
		t.Error("a claim-growth-cut may overlap a scheduler kill on its member")
	}
}

// TestPlan prints the schedule `make chaos` would run, without a fleet:
// `make chaos-plan CHAOS_SEED=n CHAOS_MINUTES=m` (CHAOS_PLAN=1).
func TestPlan(t *testing.T) {
	if os.Getenv("CHAOS_PLAN") == "" {
		t.Skip("CHAOS_PLAN is not set")
	}
	seed, err := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64)
	if err != nil {
		t.Fatalf("CHAOS_SEED: %v", err)
	}
	minutes, err := strconv.ParseFloat(cmp.Or(os.Getenv("CHAOS_MINUTES"), "20"), 64)
	if err != nil {
		t.Fatalf("CHAOS_MINUTES: %v", err)
	}
	maxFaults, err := strconv.Atoi(cmp.Or(os.Getenv("CHAOS_MAX_FAULTS"), "2"))
	if err != nil || maxFaults < 1 {
		t.Fatalf("CHAOS_MAX_FAULTS: %q", os.Getenv("CHAOS_MAX_FAULTS"))
	}
	members := strings.Fields(cmp.Or(os.Getenv("CHAOS_FLEET_MEMBERS"), "east west north"))
	s := Draw(seed, RunConfig(time.Duration(minutes*float64(time.Minute)), maxFaults, members, os.Getenv("CHAOS_LATE") != "0"))
	kinds := map[FaultKind]int{}
	for _, f := range s.Faults {
		kinds[f.Kind]++
		fmt.Printf("+%-7v fault %v held %v\n", f.At, f, f.Hold)
	}
	for _, o := range s.Ops {
		fmt.Printf("+%-7v op %v\n", o.At, o)
	}
	fmt.Printf("seed %d, %v minutes: %d faults %v, %d operations\n", seed, minutes, len(s.Faults), kinds, len(s.Ops))
}
