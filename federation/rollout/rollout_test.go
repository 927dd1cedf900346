package rollout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	oldRev = "r1"
	newRev = "r2"
)

// settled is a subset whose StatefulSet reports n replicas, all available,
// with `updated` of them on revision rev.
func settled(name string, n, updated int32, rev string) Subset {
	return Subset{Name: name, Cluster: name, Replicas: n, ClusterAvailable: true, Revision: rev, Current: true,
		Observed: n, Updated: updated, Ready: n, Available: n}
}

func TestPlan(t *testing.T) {
	spec := Spec{Revision: newRev, MaxUnavailable: 1, MaxConcurrent: 1}
	tests := []struct {
		name    string
		spec    Spec
		subsets []Subset
		want    Decision
	}{
		{
			name:    "new template: first subset released, the others held whole",
			spec:    spec,
			subsets: []Subset{settled("east", 5, 0, newRev), settled("west", 4, 4, oldRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}},
		},
		{
			name: "first subset updated and available: the next one is released",
			spec: spec,
			subsets: []Subset{settled("east", 5, 5, newRev),
				settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 0}, Phases: map[string]Phase{"east": Updated, "west": Updating},
				Updating: []string{"west"}, Updated: 5, UpdatedReady: 5},
		},
		{
			name: "first subset updated but one instance not yet available: it stays in the window",
			spec: spec,
			subsets: []Subset{{Name: "east", Cluster: "east", Replicas: 5, ClusterAvailable: true, Revision: newRev, Current: true,
				Observed: 5, Updated: 5, Ready: 4, Available: 4}, settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}, Updated: 5, UpdatedReady: 4},
		},
		{
			name: "member unavailable mid-rollout: blocked, held, not skipped",
			spec: spec,
			subsets: []Subset{{Name: "east", Cluster: "east", Replicas: 5, ClusterAvailable: false, Revision: newRev, Current: true,
				Observed: 5, Updated: 2, Ready: 5, Available: 5}, settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 3, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}, Blocked: []string{"subset east: cluster east is unavailable"}, Updated: 2, UpdatedReady: 2},
		},
		{
			name: "paused mid-subset: held after the instances already updated",
			spec: Spec{Revision: newRev, MaxUnavailable: 1, MaxConcurrent: 1, Paused: true},
			subsets: []Subset{settled("east", 5, 2, newRev),
				settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 3, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}, Held: true, Updated: 2, UpdatedReady: 2},
		},
		{
			name: "canary partition replicas-1: only the first instance in fleet order",
			spec: Spec{Revision: newRev, MaxUnavailable: 1, MaxConcurrent: 1, Partition: 8},
			subsets: []Subset{settled("east", 5, 0, newRev),
				settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 4, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}},
		},
		{
			name: "canary reached: complete up to the partition",
			spec: Spec{Revision: newRev, MaxUnavailable: 1, MaxConcurrent: 1, Partition: 8},
			subsets: []Subset{settled("east", 5, 1, newRev),
				settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 4, "west": 4}, Phases: map[string]Phase{"east": Updated, "west": Waiting},
				Complete: true, Updated: 1, UpdatedReady: 1},
		},
		{
			name: "scale during a rollout: the new replicas of the updated subset must update too",
			spec: spec,
			subsets: []Subset{{Name: "east", Cluster: "east", Replicas: 7, ClusterAvailable: true, Revision: newRev, Current: true,
				Observed: 5, Updated: 5, Ready: 5, Available: 5}, settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}, Updated: 5, UpdatedReady: 3},
		},
		{
			name: "another subset has an unavailable instance: maxUnavailable 1 holds the window",
			spec: spec,
			subsets: []Subset{settled("east", 5, 1, newRev), {Name: "west", Cluster: "west", Replicas: 4, ClusterAvailable: true,
				Revision: newRev, Current: true, Observed: 4, Updated: 0, Ready: 3, Available: 3}},
			want: Decision{Partitions: map[string]int32{"east": 4, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Waiting},
				Updating: []string{"east"}, Held: true, Updated: 1, UpdatedReady: 1},
		},
		{
			name: "two concurrent subsets with maxUnavailable 2: both released",
			spec: Spec{Revision: newRev, MaxUnavailable: 2, MaxConcurrent: 2},
			subsets: []Subset{settled("east", 5, 0, newRev), settled("west", 4, 0, newRev),
				settled("north", 3, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 0, "north": 3}, Phases: map[string]Phase{"east": Updating, "west": Updating, "north": Waiting},
				Updating: []string{"east", "west"}},
		},
		{
			name:    "two concurrent subsets with maxUnavailable 1: the second waits for budget",
			spec:    Spec{Revision: newRev, MaxUnavailable: 1, MaxConcurrent: 2},
			subsets: []Subset{settled("east", 5, 0, newRev), settled("west", 4, 0, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 4}, Phases: map[string]Phase{"east": Updating, "west": Updating},
				Updating: []string{"east", "west"}, Held: true},
		},
		{
			name: "status not yet of the new spec: nothing counts as updated",
			spec: spec,
			subsets: []Subset{{Name: "east", Cluster: "east", Replicas: 5, ClusterAvailable: true, Revision: oldRev, Current: true,
				Observed: 5, Updated: 5, Ready: 5, Available: 5}},
			want: Decision{Partitions: map[string]int32{"east": 0}, Phases: map[string]Phase{"east": Updating}, Updating: []string{"east"}},
		},
		{
			name:    "steady state: everything updated, complete",
			spec:    spec,
			subsets: []Subset{settled("east", 5, 5, newRev), settled("west", 4, 4, newRev)},
			want: Decision{Partitions: map[string]int32{"east": 0, "west": 0}, Phases: map[string]Phase{"east": Updated, "west": Updated},
				Complete: true, Updated: 9, UpdatedReady: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Plan(tt.spec, tt.subsets)); diff != "" {
				t.Errorf("Plan (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestResolveMaxUnavailable(t *testing.T) {
	for _, tt := range []struct {
		v        *intstr.IntOrString
		replicas int32
		want     int32
	}{
		{nil, 9, 1},
		{&intstr.IntOrString{Type: intstr.Int, IntVal: 3}, 9, 3},
		{&intstr.IntOrString{Type: intstr.String, StrVal: "25%"}, 9, 2},
		{&intstr.IntOrString{Type: intstr.String, StrVal: "10%"}, 9, 1},
		{&intstr.IntOrString{Type: intstr.String, StrVal: "100%"}, 12, 12},
	} {
		got, err := ResolveMaxUnavailable(tt.v, tt.replicas)
		if err != nil || got != tt.want {
			t.Errorf("ResolveMaxUnavailable(%v, %d) = %d, %v; want %d", tt.v, tt.replicas, got, err, tt.want)
		}
	}
	if _, err := ResolveMaxUnavailable(&intstr.IntOrString{Type: intstr.String, StrVal: "x"}, 9); err == nil {
		t.Error("ResolveMaxUnavailable(x) succeeded, want an error")
	}
}

// TestSubsetRevisions checks that a subset without dependencies keeps the
// template's revision, that dependencies change it, and that the fleet
// revision is the common one when the subsets agree.
func TestSubsetRevisions(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "db:1"}}}}
	base, _ := Revision(tmpl, nil)
	if got, _ := SubsetRevision(tmpl, nil, ""); got != base {
		t.Errorf("SubsetRevision without dependencies = %s, want the template's %s", got, base)
	}
	withDeps, _ := SubsetRevision(tmpl, nil, "abc")
	if other, _ := SubsetRevision(tmpl, nil, "abd"); withDeps == base || other == withDeps || len(withDeps) != 10 {
		t.Errorf("SubsetRevision with dependencies abc = %s, abd = %s, none = %s: want three different 10-digit revisions", withDeps, other, base)
	}
	if got := FleetRevision([]string{"east=" + base, "west=" + base}); got != base {
		t.Errorf("FleetRevision(equal) = %s, want %s", got, base)
	}
	mixed := FleetRevision([]string{"east=" + withDeps, "west=" + base})
	if mixed == base || mixed == withDeps || mixed != FleetRevision([]string{"east=" + withDeps, "west=" + base}) {
		t.Errorf("FleetRevision(mixed) = %s: want a stable hash of both", mixed)
	}
}

// TestPlanPerSubsetTargets checks that a subset is updated against its own
// target revision: only the subset whose revision changed is rolled.
func TestPlanPerSubsetTargets(t *testing.T) {
	subsets := []Subset{
		{Name: "east", Cluster: "east", Replicas: 3, ClusterAvailable: true, Target: "new-east", Revision: "old-east", Current: true, Observed: 3, Updated: 0, Ready: 3, Available: 3},
		{Name: "west", Cluster: "west", Replicas: 3, ClusterAvailable: true, Target: "same-west", Revision: "same-west", Current: true, Observed: 3, Updated: 3, Ready: 3, Available: 3},
	}
	d := Plan(Spec{Revision: "fleet", MaxUnavailable: 1, MaxConcurrent: 1}, subsets)
	if d.Phases["east"] != Updating || d.Phases["west"] != Updated || d.Updated != 3 {
		t.Errorf("phases %v, updated %d; want east Updating, west Updated, 3 updated", d.Phases, d.Updated)
	}
}

// TestPlanLeaderLast simulates a role-ordered rollout of 9 instances over 3
// subsets, the leader in the middle subset, with members that replace one
// outdated instance per step within Allowed (the leader only on its turn):
// every follower of the fleet is updated before the leader, whatever
// maxUnavailable and maxConcurrentSubsets, and never more than
// maxUnavailable instances are being replaced at once.
func TestPlanLeaderLast(t *testing.T) {
	for _, tc := range []struct{ maxUnavailable, maxConcurrent int32 }{{1, 1}, {2, 1}, {2, 3}, {9, 3}} {
		type inst struct {
			subset  string
			leader  bool
			updated bool
		}
		var fleet []*inst
		names := []string{"a", "b", "c"}
		for _, n := range names {
			for k := 0; k < 3; k++ {
				fleet = append(fleet, &inst{subset: n, leader: n == "b" && k == 1})
			}
		}
		var order []string // "b-leader" or subset of each replaced instance
		for step := 0; step < 50; step++ {
			var subsets []Subset
			for _, n := range names {
				s := Subset{Name: n, Cluster: n, Replicas: 3, ClusterAvailable: true, Target: "new", Revision: "new", Current: true, Observed: 3, Ready: 3, Available: 3}
				leaderHere := false
				for _, in := range fleet {
					if in.subset == n && in.updated {
						s.Updated++
					}
					leaderHere = leaderHere || (in.subset == n && in.leader)
				}
				s.LeaderOutdated = leaderHere && s.Updated < s.Replicas
				subsets = append(subsets, s)
			}
			d := Plan(Spec{Revision: "new", MaxUnavailable: tc.maxUnavailable, MaxConcurrent: tc.maxConcurrent, LeaderLast: true}, subsets)
			if d.Complete && d.LeaderTurn == "" {
				break
			}
			var sum int32
			for _, a := range d.Allowed {
				sum += a
			}
			if sum > tc.maxUnavailable {
				t.Fatalf("maxUnavailable %d: step %d allows %v", tc.maxUnavailable, step, d.Allowed)
			}
			for _, n := range names {
				if d.Allowed[n] == 0 {
					continue
				}
				for _, in := range fleet { // one per allowed subset per step
					if in.subset != n || in.updated || (in.leader && d.LeaderTurn != n) {
						continue
					}
					in.updated = true
					if in.leader {
						order = append(order, "b-leader")
					} else {
						order = append(order, n)
					}
					break
				}
			}
		}
		if len(order) != 9 || order[8] != "b-leader" {
			t.Errorf("maxUnavailable %d, maxConcurrentSubsets %d: replaced in order %v; want all 9, the leader last", tc.maxUnavailable, tc.maxConcurrent, order)
		}
	}
}
