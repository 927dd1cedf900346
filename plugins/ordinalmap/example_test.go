package ordinalmap_test

import (
	"fmt"

	"github.com/fleetset/fleetset/plugins/ordinalmap"
)

// A subset of 4 replicas placed zone-a:2, zone-b:1, zone-c:1. Each prefix of
// ordinals is spread as evenly as the weights allow, so scaling down from the
// highest ordinal keeps the spread balanced; the pattern repeats every 4
// ordinals.
func ExampleNew() {
	m, err := ordinalmap.New([]ordinalmap.Domain{
		{Name: "zone-a", Weight: 2},
		{Name: "zone-b", Weight: 1},
		{Name: "zone-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	for offset := int64(0); offset < 6; offset++ {
		zone, _ := m.DomainOf(offset)
		fmt.Printf("ordinal offset %d → %s, replicas per zone %v\n", offset, zone, m.Counts(offset+1))
	}
	// Output:
	// ordinal offset 0 → zone-a, replicas per zone [1 0 0]
	// ordinal offset 1 → zone-b, replicas per zone [1 1 0]
	// ordinal offset 2 → zone-c, replicas per zone [1 1 1]
	// ordinal offset 3 → zone-a, replicas per zone [2 1 1]
	// ordinal offset 4 → zone-a, replicas per zone [3 1 1]
	// ordinal offset 5 → zone-b, replicas per zone [3 2 1]
}

// The pod with apps.kubernetes.io/pod-index 12 of a StatefulSet whose
// spec.ordinals.start is 10 is ordinal offset 2; with equal weights the
// zones take turns.
func ExampleMap_DomainOf() {
	m, err := ordinalmap.New([]ordinalmap.Domain{
		{Name: "zone-a", Weight: 1},
		{Name: "zone-b", Weight: 1},
		{Name: "zone-c", Weight: 1},
	})
	if err != nil {
		panic(err)
	}
	const ordinalStart, podIndex = 10, 12
	zone, err := m.DomainOf(podIndex - ordinalStart)
	if err != nil {
		panic(err)
	}
	fmt.Println(zone)
	// Output: zone-c
}

// The quota-method sequence behind Map, for weights 60:40 (reduced to 3:2):
// every prefix of seats stays within quota, and every 5 seats it starts over.
func ExampleSequencer() {
	s, err := ordinalmap.NewSequencer([]int64{60, 40})
	if err != nil {
		panic(err)
	}
	seats := make([]int, 10)
	for i := range seats {
		seats[i] = s.Next()
	}
	fmt.Println(seats)
	fmt.Println(s.Period(), s.Counts(9))
	// Output:
	// [0 1 0 1 0 0 1 0 1 0]
	// 5 [5 4]
}
