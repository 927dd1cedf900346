package controller

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// randomDomains returns 1–6 domains in random order, each with an int
// (0–20), a percent (0–60%) or no share, the percents summing to at most
// 100%.
func randomDomains(r *rand.Rand) []fleetv1.DomainShare {
	names := []string{"zone-a", "zone-b", "zone-c", "zone-d", "zone-e", "zone-f"}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	ds := make([]fleetv1.DomainShare, 1+r.IntN(6))
	percents := 0
	for i := range ds {
		ds[i].Name = names[i]
		switch r.IntN(3) {
		case 0:
			ds[i].Replicas = ptr.To(intstr.FromInt32(int32(r.IntN(21))))
		case 1:
			if p := r.IntN(61); percents+p <= 100 {
				percents += p
				ds[i].Replicas = ptr.To(intstr.FromString(fmt.Sprintf("%d%%", p)))
			}
		}
	}
	return ds
}

// TestHubAndMemberAgree is the property that makes ordinals stay in place:
// for random domain shares (ints, percents, unset, in any list order) and
// every subset size n in 0..200, the SubsetPlacement the hub renders is the
// same at every n (so an ordinal's domain cannot change with the size), and
// the first n ordinals of the map fleetset-scheduler compiles from it hold
// exactly the per-domain counts the hub's division gives at n.
func TestHubAndMemberAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specs := 300
	if testing.Short() {
		specs = 30
	}
	for range specs {
		domains := randomDomains(r)
		fs := &fleetv1.FleetSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
			Spec: fleetv1.FleetSetSpec{Topology: fleetv1.FleetTopology{
				Subsets: []fleetv1.Subset{{Name: "east", Cluster: "east", Domains: domains}},
			}},
		}
		var first *fleetv1.SubsetPlacementSpec
		for n := int32(0); n <= 200; n++ {
			fs.Spec.Replicas = n
			subsets, _, err := plan.For(fs, nil)
			if err != nil {
				t.Fatalf("domains %s, %d replicas: Plan: %v", format(domains), n, err)
			}
			sp := manifestwork.SubsetPlacement(fs, manifestwork.FromPlan(subsets[0]))
			if first == nil {
				first = &sp.Spec
			} else if diff := cmp.Diff(first, &sp.Spec); diff != "" {
				t.Fatalf("domains %s: SubsetPlacement changed between 0 and %d replicas (-0,+%d):\n%s", format(domains), n, n, diff)
			}
			seats, _, err := ordinaltarget.Compile(&sp.Spec)
			if err != nil {
				t.Fatalf("domains %s: member cannot compile the hub's placement: %v", format(domains), err)
			}
			member := map[string]int32{}
			for k := range int64(n) {
				d, err := seats.NameOf(k)
				if err != nil {
					t.Fatal(err)
				}
				member[d]++
			}
			hub := map[string]int32{}
			for _, d := range subsets[0].Domains {
				if d.Replicas > 0 {
					hub[d.Name] = d.Replicas
				}
			}
			if diff := cmp.Diff(hub, member); diff != "" {
				t.Fatalf("domains %s, %d replicas: member's first %d ordinals differ from the hub's division (-hub,+member):\n%s", format(domains), n, n, diff)
			}
		}
	}
}

func format(ds []fleetv1.DomainShare) string {
	s := "["
	for i, d := range ds {
		if i > 0 {
			s += " "
		}
		s += d.Name + ":"
		if d.Replicas == nil {
			s += "unset"
		} else {
			s += d.Replicas.String()
		}
	}
	return s + "]"
}
