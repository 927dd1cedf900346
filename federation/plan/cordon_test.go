package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestForCordoned: a subset on a cordoned cluster holds the replicas status
// records for it there and no more; what it cannot take goes to the others
// by their shares, and it still shrinks.
func TestForCordoned(t *testing.T) {
	abc := zones("zone-a", "zone-b", "zone-c")
	two := func(replicas int32, cordoned []string, east, west *int32, eastShare, westShare string) *fleetv1.FleetSet {
		fs := fleetSet(replicas, 0, nil,
			fleetv1.Subset{Name: "east", Cluster: "east", Replicas: pct(eastShare), Domains: abc},
			fleetv1.Subset{Name: "west", Cluster: "west", Replicas: pct(westShare), Domains: abc})
		fs.Spec.Topology.CordonedClusters = cordoned
		if east != nil {
			fs.Status.Subsets = append(fs.Status.Subsets, fleetv1.SubsetStatus{Name: "east", Cluster: "east", Replicas: *east})
		}
		if west != nil {
			fs.Status.Subsets = append(fs.Status.Subsets, fleetv1.SubsetStatus{Name: "west", Cluster: "west", Replicas: *west})
		}
		return fs
	}
	n := func(v int32) *int32 { return &v }
	relocated := func(fs *fleetv1.FleetSet) *fleetv1.FleetSet {
		fs.Status.Subsets[0].Cluster, fs.Status.Subsets[0].Failover = "west", fleetv1.SubsetFailedOver
		return fs
	}
	cases := []struct {
		name         string
		fs           *fleetv1.FleetSet
		want         map[string]int32
		wantProblems []string
	}{
		{"replicas 9 → 12, 60%:40%, none cordoned", two(12, nil, n(5), n(4), "60%", "40%"), map[string]int32{"east": 7, "west": 5}, nil},
		{"replicas 9 → 12, 60%:40%, east cordoned at 5: west takes the rest", two(12, []string{"east"}, n(5), n(4), "60%", "40%"), map[string]int32{"east": 5, "west": 7}, nil},
		{"replicas 9 → 5, east cordoned at 5: east still shrinks", two(5, []string{"east"}, n(5), n(4), "60%", "40%"), map[string]int32{"east": 3, "west": 2}, nil},
		{"replicas 9, east cordoned with no status: east gets none", two(9, []string{"east"}, nil, nil, "60%", "40%"), map[string]int32{"east": 0, "west": 9}, nil},
		{"replicas 9, east cordoned, only west in status: east gets none", two(9, []string{"east"}, nil, n(4), "60%", "40%"), map[string]int32{"east": 0, "west": 9}, nil},
		// Issue 48: east was lost and its subset relocated to west; cordoning
		// east must not remove the 5 relocated instances from west (cap 0)
		// and make 5 new, empty ones in subset west.
		{"replicas 9, east relocated to west (5 there), east cordoned: east keeps its 5 where they run", relocated(two(9, []string{"east"}, n(5), n(4), "60%", "40%")), map[string]int32{"east": 5, "west": 4}, nil},
		{"replicas 9 → 12, east relocated to west, east cordoned: east holds 5, west takes the rest", relocated(two(12, []string{"east"}, n(5), n(4), "60%", "40%")), map[string]int32{"east": 5, "west": 7}, nil},
		{"replicas 9 → 5, east relocated to west, east cordoned: east still shrinks", relocated(two(5, []string{"east"}, n(5), n(4), "60%", "40%")), map[string]int32{"east": 3, "west": 2}, nil},
		{"replicas 9 → 12, east relocated to west, west cordoned: nothing grows on west", relocated(two(12, []string{"west"}, n(5), n(4), "60%", "40%")), map[string]int32{"east": 7, "west": 5}, []string{fleetv1.ReasonDivisionInfeasible}},
		{"every cluster cordoned, 9 → 12: infeasible, divided as maxReplicas would be", two(12, []string{"east", "west"}, n(5), n(4), "60%", "40%"), map[string]int32{"east": 7, "west": 5}, []string{fleetv1.ReasonDivisionInfeasible}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems, err := For(tc.fs, nil)
			if err != nil {
				t.Fatal(err)
			}
			replicas := map[string]int32{}
			for _, s := range got {
				replicas[s.Name] = s.Replicas
			}
			if diff := cmp.Diff(tc.want, replicas); diff != "" {
				t.Errorf("replicas (-want,+got):\n%s", diff)
			}
			var reasons []string
			for _, p := range problems {
				reasons = append(reasons, p.Reason)
			}
			if len(reasons) > 0 && len(tc.wantProblems) > 0 {
				reasons = reasons[:1]
			}
			if diff := cmp.Diff(tc.wantProblems, reasons); diff != "" {
				t.Errorf("problems (-want,+got):\n%s\n%v", diff, problems)
			}
		})
	}
	t.Run("integer share above the cap is cut, with a finding", func(t *testing.T) {
		fs := fleetSet(9, 0, nil,
			fleetv1.Subset{Name: "east", Cluster: "east", Replicas: num(6)},
			fleetv1.Subset{Name: "west", Cluster: "west"})
		fs.Spec.Topology.CordonedClusters = []string{"east"}
		fs.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "east", Replicas: 4}}
		got, problems, err := For(fs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Replicas != 4 || got[1].Replicas != 5 {
			t.Errorf("east %d, west %d; want 4 and 5", got[0].Replicas, got[1].Replicas)
		}
		if len(problems) != 1 || problems[0].Reason != fleetv1.ReasonDivisionInfeasible || problems[0].Subset != "east" {
			t.Errorf("problems %+v; want one DivisionInfeasible for east", problems)
		}
	})
}
