package chaos

import (
	"reflect"
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
		if seed == 1 && len(kinds) != len(FaultKinds) {
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
// stopped.
func TestFaultActions(t *testing.T) {
	undo := map[framework.Op]framework.Op{framework.OpKill: framework.OpStart, framework.OpStop: framework.OpStart,
		framework.OpPause: framework.OpResume, framework.OpCut: framework.OpHeal}
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
