package plan_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// BenchmarkPlan measures the hub's division of one FleetSet (ordinal blocks,
// replicas over subsets, each subset over three domains) and reports the
// cost per subset; BenchmarkRender adds the rendering of its ManifestWorks.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		fs := benchFleetSet(n)
		b.Run(fmt.Sprintf("subsets=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := plan.For(fs, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/subset")
		})
	}
}

func BenchmarkRender(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		fs := benchFleetSet(n)
		b.Run(fmt.Sprintf("subsets=%d", n), func(b *testing.B) {
			for b.Loop() {
				subsets, _, err := plan.For(fs, nil)
				if err != nil {
					b.Fatal(err)
				}
				delivered := make([]manifestwork.Subset, len(subsets))
				for i, sp := range subsets {
					delivered[i] = manifestwork.FromPlan(sp)
				}
				if _, err := manifestwork.Works(fs, delivered, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/subset")
		})
	}
}

// benchFleetSet has n subsets (a third by percent, a third by int, a third
// unset) of three domains each, over 100·n replicas.
func benchFleetSet(n int) *fleetv1.FleetSet {
	var subsets []fleetv1.Subset
	for i := 0; i < n; i++ {
		s := fleetv1.Subset{Name: fmt.Sprintf("s%02d", i), Cluster: fmt.Sprintf("c%02d", i),
			Domains: []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b", Replicas: ptr.To(intstr.FromString("30%"))}, {Name: "zone-c"}}}
		switch i % 3 {
		case 0:
			s.Replicas = ptr.To(intstr.FromString(fmt.Sprintf("%d%%", 100/n)))
		case 1:
			s.Replicas = ptr.To(intstr.FromInt32(7))
		}
		subsets = append(subsets, s)
	}
	return &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{
			Replicas: int32(100 * n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Topology: fleetv1.FleetTopology{Subsets: subsets},
		},
	}
}
