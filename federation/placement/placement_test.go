package placement

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// format renders subsets as "name@cluster[share]{fallbacks}".
func format(ss []fleetv1.Subset) string {
	var parts []string
	for _, s := range ss {
		p := s.Name + "@" + s.Cluster
		if s.Replicas != nil {
			p += "[" + s.Replicas.String() + "]"
		}
		p += "{" + strings.Join(s.FallbackClusters, ",") + "}"
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func status(pairs ...string) []fleetv1.SubsetStatus {
	var out []fleetv1.SubsetStatus
	for _, p := range pairs {
		name, cluster, _ := strings.Cut(p, "@")
		out = append(out, fleetv1.SubsetStatus{Name: name, Cluster: cluster})
	}
	return out
}

func TestSubsets(t *testing.T) {
	ref := &fleetv1.PlacementRef{Name: "p", Shares: []fleetv1.ClusterShare{{Cluster: "east", Replicas: intstr.FromString("60%")}}}
	cases := []struct {
		name    string
		decided []string
		current []fleetv1.SubsetStatus
		want    string
	}{
		{"first decisions: one subset per cluster, sorted", []string{"east", "west"}, nil,
			"east@east[60%]{west} west@west{east}"},
		{"a new cluster is added after the existing subsets", []string{"east", "north", "west"}, status("west@west", "east@east"),
			"west@west{east,north} east@east[60%]{north,west} north@north{east,west}"},
		{"west no longer decided: it moves, keeping its name, to the least hosted cluster", []string{"east", "north"}, status("east@east", "west@west", "north@north"),
			"east@east[60%]{north} west@east{north} north@north{east}"},
		{"ties go by name", []string{"east", "north"}, status("west@west"),
			"west@east{north} east@east[60%]{north} north@north{east}"},
		{"a moved subset stays where it is while its home is not decided", []string{"east", "north"}, status("east@east", "west@north", "north@north"),
			"east@east[60%]{north} west@north{east} north@north{east}"},
		{"its home decided again: it returns", []string{"east", "north", "west"}, status("east@east", "west@north", "north@north"),
			"east@east[60%]{north,west} west@west{east,north} north@north{east,west}"},
		{"nothing decided: nothing moves, nothing is added", nil, status("east@east", "west@west"),
			"east@east[60%]{} west@west{}"},
		{"nothing decided, nothing yet", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := format(Subsets(ref, tc.decided, tc.current)); got != tc.want {
				t.Errorf("Subsets(%v, %v) =\n  %s\nwant\n  %s", tc.decided, tc.current, got, tc.want)
			}
		})
	}
}

// TestSubsetsKeepEverySubset: whatever the decisions, every subset the
// FleetSet has keeps its name (its ordinal block), and each is in a decided
// cluster whenever one is decided.
func TestSubsetsKeepEverySubset(t *testing.T) {
	clusters := []string{"a", "b", "c", "d"}
	for mask := 0; mask < 16; mask++ {
		var decided []string
		for i, c := range clusters {
			if mask&(1<<i) != 0 {
				decided = append(decided, c)
			}
		}
		current := status("a@a", "b@c", "c@c", "d@a")
		got := Subsets(&fleetv1.PlacementRef{Name: "p"}, decided, current)
		seen := map[string]bool{}
		for _, s := range got {
			seen[s.Name] = true
			if len(decided) > 0 && !strings.Contains(strings.Join(decided, ","), s.Cluster) {
				t.Errorf("decided %v: subset %s in undecided cluster %s", decided, s.Name, s.Cluster)
			}
		}
		for _, ss := range current {
			if !seen[ss.Name] {
				t.Errorf("decided %v: subset %s dropped (%s)", decided, ss.Name, fmt.Sprint(format(got)))
			}
		}
	}
}
