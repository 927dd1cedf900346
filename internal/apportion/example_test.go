package apportion_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fleetset/fleetset/internal/apportion"
)

// A subset with domains zone-a 60% and zone-b 40%: seat k is the domain of
// ordinal offset k, and the first n seats are the division of n replicas,
// so scaling never moves an ordinal.
func ExampleSeats() {
	seats, err := apportion.NewSeats("spec.domains", []apportion.Share{
		{Name: "zone-b", Replicas: ptr.To(intstr.FromString("40%"))},
		{Name: "zone-a", Replicas: ptr.To(intstr.FromString("60%"))},
	})
	if err != nil {
		panic(err)
	}
	for k := range int64(10) {
		d, _ := seats.NameOf(k)
		counts, _ := seats.Counts(k + 1)
		fmt.Printf("ordinal %d → %s  (%d replicas: %v)\n", k, d, k+1, counts)
	}
	// Output:
	// ordinal 0 → zone-a  (1 replicas: [1 0])
	// ordinal 1 → zone-b  (2 replicas: [1 1])
	// ordinal 2 → zone-a  (3 replicas: [2 1])
	// ordinal 3 → zone-b  (4 replicas: [2 2])
	// ordinal 4 → zone-a  (5 replicas: [3 2])
	// ordinal 5 → zone-a  (6 replicas: [4 2])
	// ordinal 6 → zone-b  (7 replicas: [4 3])
	// ordinal 7 → zone-a  (8 replicas: [5 3])
	// ordinal 8 → zone-b  (9 replicas: [5 4])
	// ordinal 9 → zone-a  (10 replicas: [6 4])
}

// Dividing 10 replicas over three subsets: ints are exact, percents share
// what the ints leave, and an unset share takes an even part of the rest;
// the tie at 3.5 each goes to the name first in order.
func ExampleDivide() {
	r, err := apportion.Divide(10, []apportion.Share{
		{Name: "east", Replicas: ptr.To(intstr.FromInt32(3))},
		{Name: "west", Replicas: ptr.To(intstr.FromString("50%"))},
		{Name: "north"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Assignments)
	// Output: [{east 3} {west 3} {north 4}]
}
