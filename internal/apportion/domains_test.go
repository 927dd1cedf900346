package apportion

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestDomainSeats: the ordinal → domain map of spec.domains is nil for no
// domains, takes domains by name (list order does not matter), holds the
// division of n in its first n seats, and names spec.domains in errors.
func TestDomainSeats(t *testing.T) {
	if s, err := DomainSeats(nil); s != nil || err != nil {
		t.Errorf("DomainSeats(nil) = %v, %v; want nil, nil", s, err)
	}
	ds := []fleetv1.DomainShare{{Name: "zone-c", Replicas: num(2)}, {Name: "zone-b", Replicas: pct("70%")}, {Name: "zone-a"}}
	seats, err := DomainSeats(ds)
	if err != nil {
		t.Fatal(err)
	}
	reversed, err := DomainSeats([]fleetv1.DomainShare{ds[2], ds[1], ds[0]})
	if err != nil {
		t.Fatal(err)
	}
	for n := int32(0); n <= 100; n++ {
		div, err := Divide(n, DomainShares(ds))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int32{}
		for _, a := range div.Assignments {
			want[a.Name] = a.Replicas
		}
		got := map[string]int32{"zone-a": 0, "zone-b": 0, "zone-c": 0}
		for k := range int64(n) {
			d, err := seats.NameOf(k)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := reversed.NameOf(k); r != d {
				t.Fatalf("seat %d: %s, but %s with the domains in reverse order", k, d, r)
			}
			got[d]++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("first %d seats differ from the division of %d (-division,+seats):\n%s", n, n, diff)
		}
	}
	if _, err := DomainSeats([]fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-a"}}); err == nil || !strings.Contains(err.Error(), "spec.domains") {
		t.Errorf("DomainSeats(duplicate names) error = %v, want one naming spec.domains", err)
	}
}

// TestSubsetShares: a subset's share carries its name, replicas,
// minReplicas and maxReplicas, in spec order.
func TestSubsetShares(t *testing.T) {
	ss := []fleetv1.Subset{{Name: "west", Replicas: pct("40%"), MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(9))}, {Name: "east"}}
	want := []Share{{Name: "west", Replicas: pct("40%"), MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(9))}, {Name: "east"}}
	if diff := cmp.Diff(want, SubsetShares(ss)); diff != "" {
		t.Errorf("SubsetShares (-want,+got):\n%s", diff)
	}
	if got := DomainShares(nil); got != nil {
		t.Errorf("DomainShares(nil) = %v, want nil", got)
	}
}
