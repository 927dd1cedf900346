package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func pct(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
func num(n int) *intstr.IntOrString    { return ptr.To(intstr.FromInt32(int32(n))) }

func zones(names ...string) []fleetv1.DomainShare {
	var out []fleetv1.DomainShare
	for _, n := range names {
		out = append(out, fleetv1.DomainShare{Name: n})
	}
	return out
}

func fleetSet(replicas int32, block int32, partitions map[string]int32, subsets ...fleetv1.Subset) *fleetv1.FleetSet {
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Topology: fleetv1.FleetTopology{OrdinalBlockSize: block, Subsets: subsets},
		},
	}
	if partitions != nil {
		fs.Spec.UpdateStrategy.ManualUpdate = &fleetv1.ManualUpdate{Partitions: partitions}
	}
	return fs
}

func TestFor(t *testing.T) {
	abc := zones("zone-a", "zone-b", "zone-c")
	d := func(a, b, c int32) []Domain {
		return []Domain{{Name: "zone-a", Replicas: a}, {Name: "zone-b", Replicas: b}, {Name: "zone-c", Replicas: c}}
	}
	cases := []struct {
		name         string
		fs           *fleetv1.FleetSet
		previous     map[string]int32
		want         []Subset
		wantProblems []string // reasons
		wantErr      string   // field named in the error
	}{
		{
			name: "replicas 9, east 60% west 40%, three zones each, partition east 2",
			fs: fleetSet(9, 0, map[string]int32{"east": 2},
				fleetv1.Subset{Name: "east", Cluster: "east", Replicas: pct("60%"), Domains: abc},
				fleetv1.Subset{Name: "west", Cluster: "west", Replicas: pct("40%"), Domains: abc}),
			want: []Subset{
				{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 1000, Replicas: 5, Partition: 2, Domains: d(2, 2, 1)},
				{Name: "west", Cluster: "west", OrdinalStart: 1000, BlockSize: 1000, Replicas: 4, Domains: d(2, 1, 1)},
			},
		},
		{
			name:     "replicas 9, sticky starts: west keeps 0, east keeps 1000",
			previous: map[string]int32{"west": 0, "east": 1000},
			fs: fleetSet(9, 0, nil,
				fleetv1.Subset{Name: "east", Cluster: "east", Replicas: pct("60%")},
				fleetv1.Subset{Name: "west", Cluster: "west", Replicas: pct("40%")}),
			want: []Subset{
				{Name: "east", Cluster: "east", OrdinalStart: 1000, BlockSize: 1000, Replicas: 5},
				{Name: "west", Cluster: "west", OrdinalStart: 0, BlockSize: 1000, Replicas: 4},
			},
		},
		{
			name: "replicas 12, block 5, ints 7:5: east cut to its block",
			fs: fleetSet(12, 5, nil,
				fleetv1.Subset{Name: "east", Cluster: "east", Replicas: num(7)},
				fleetv1.Subset{Name: "west", Cluster: "west", Replicas: num(5)}),
			want: []Subset{
				{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 5, Replicas: 5},
				{Name: "west", Cluster: "west", OrdinalStart: 5, BlockSize: 5, Replicas: 5},
			},
			wantProblems: []string{fleetv1.ReasonOrdinalBlockFull},
		},
		{
			name: "replicas 2, min 3 on east: infeasible, reported",
			fs: fleetSet(2, 0, nil,
				fleetv1.Subset{Name: "east", Cluster: "east", MinReplicas: ptr.To[int32](3)},
				fleetv1.Subset{Name: "west", Cluster: "west"}),
			want: []Subset{
				{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 1000, Replicas: 2},
				{Name: "west", Cluster: "west", OrdinalStart: 1000, BlockSize: 1000, Replicas: 0},
			},
			wantProblems: []string{fleetv1.ReasonDivisionInfeasible},
		},
		{
			name:    "no subsets",
			fs:      fleetSet(3, 0, nil),
			wantErr: "spec.topology.subsets",
		},
		{
			name:    "empty cluster",
			fs:      fleetSet(3, 0, nil, fleetv1.Subset{Name: "east"}),
			wantErr: "spec.topology.subsets[0].cluster",
		},
		{
			name:    "malformed percent",
			fs:      fleetSet(3, 0, nil, fleetv1.Subset{Name: "east", Cluster: "east", Replicas: pct("x%")}),
			wantErr: "spec.topology.subsets",
		},
		{
			name:    "duplicate domain",
			fs:      fleetSet(3, 0, nil, fleetv1.Subset{Name: "east", Cluster: "east", Domains: zones("a", "a")}),
			wantErr: "spec.topology.subsets[0].domains",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems, err := For(tc.fs, tc.previous)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("For() error = %v, want one starting with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("For() (-want,+got):\n%s", diff)
			}
			var reasons []string
			for _, p := range problems {
				reasons = append(reasons, p.Reason)
			}
			if diff := cmp.Diff(tc.wantProblems, reasons); diff != "" {
				t.Errorf("For() problems (-want,+got):\n%s\n%v", diff, problems)
			}
		})
	}
}
