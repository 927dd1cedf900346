package division_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fleetset/fleetset/federation/division"
)

// Nine replicas over two subsets, east 60% and west 40%, then each subset's
// count over its three zones (no replicas given: even shares). 9 × 60% = 5.4
// and 9 × 40% = 3.6: east gets 5 and west 4, the nearest counts, and every
// smaller total is a prefix of the same seat sequence, so growing from 9 to 10
// takes no replica from either subset.
func ExampleDivide() {
	east, west := intstr.FromString("60%"), intstr.FromString("40%")
	subsets, err := division.Divide(9, []division.Share{
		{Name: "east", Replicas: &east},
		{Name: "west", Replicas: &west},
	})
	if err != nil {
		panic(err)
	}
	zones := []division.Share{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}
	for _, subset := range subsets.Assignments {
		domains, err := division.Divide(subset.Replicas, zones)
		if err != nil {
			panic(err)
		}
		fmt.Println(subset.Name, subset.Replicas, domains.Assignments)
	}
	// Output:
	// east 5 [{zone-a 2} {zone-b 2} {zone-c 1}]
	// west 4 [{zone-a 2} {zone-b 1} {zone-c 1}]
}

// Two subsets of at most 2 replicas each hold 4. For a total of 5 the spec is
// infeasible: the counts still add up to the total, and Unmet says which
// share had to give way.
func ExampleDivide_unmet() {
	maxTwo := int32(2)
	shares := []division.Share{
		{Name: "east", MaxReplicas: &maxTwo},
		{Name: "west", MaxReplicas: &maxTwo},
	}
	for _, total := range []int32{3, 4, 5} {
		r, err := division.Divide(total, shares)
		if err != nil {
			panic(err)
		}
		fmt.Println(total, r.Assignments, r.Unmet)
	}
	// Output:
	// 3 [{east 2} {west 1}] []
	// 4 [{east 2} {west 2}] []
	// 5 [{east 3} {west 2}] [share "east": 3 assigned, above its allowed 2: the shares can hold only 4 of the total of 5]
}
