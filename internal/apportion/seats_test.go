package apportion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomShares returns 1–6 shares in random order with ints, percents,
// unset shares, and sometimes minReplicas and maxReplicas.
func randomShares(r *rand.Rand) []Share {
	shares := make([]Share, 1+r.IntN(6))
	percents := 0
	for i := range shares {
		shares[i].Name = fmt.Sprintf("s%d", r.IntN(1000)*10+i)
		switch r.IntN(3) {
		case 0:
			shares[i].Replicas = num(int32(r.IntN(20)))
		case 1:
			if p := r.IntN(61); percents+p <= 100 {
				percents += p
				shares[i].Replicas = pct(fmt.Sprintf("%d%%", p))
			}
		}
		if shares[i].Replicas == nil || shares[i].Replicas.IntVal == 0 && shares[i].Replicas.StrVal != "" {
			if r.IntN(4) == 0 {
				shares[i].MinReplicas = ptr(int32(r.IntN(5)))
			}
			if r.IntN(4) == 0 {
				shares[i].MaxReplicas = ptr(int32(5 + r.IntN(30)))
			}
		}
	}
	return shares
}

// TestSeatsAreDivision checks that the seat sequence and Divide are one
// thing: for random specs and every n in 0..200, the first n seats hold
// exactly Divide(n), whatever the order of the shares.
func TestSeatsAreDivision(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for range 300 {
		shares := randomShares(r)
		seats, err := NewSeats("shares", shares)
		if err != nil {
			t.Fatalf("%v: %v", shares, err)
		}
		shuffled := slices.Clone(shares)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		other, err := NewSeats("shares", shuffled)
		if err != nil {
			t.Fatal(err)
		}
		names := seats.Names()
		for n := int32(0); n <= 200; n++ {
			div, err := Divide(n, shares)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			for _, a := range div.Assignments {
				if a.Replicas > 0 {
					want[a.Name] = int64(a.Replicas)
				}
			}
			counts, err := seats.Counts(int64(n))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for i, c := range counts {
				if c > 0 {
					got[names[i]] = c
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%v, n=%d: seats differ from Divide (-divide,+seats):\n%s", shares, n, diff)
			}
			if n > 0 {
				a, _ := seats.NameOf(int64(n - 1))
				b, _ := other.NameOf(int64(n - 1))
				if a != b {
					t.Fatalf("%v: seat %d is %s, but %s with the shares reordered", shares, n-1, a, b)
				}
			}
		}
	}
}

func TestSeatsConcurrent(t *testing.T) {
	seats, err := NewSeats("spec.domains", []Share{{Name: "zone-a", Replicas: pct("60%")}, {Name: "zone-b"}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, 5000)
	ref, _ := NewSequence([]Share{{Name: "zone-a", Replicas: pct("60%")}, {Name: "zone-b"}})
	for k := range want {
		want[k] = ref.Name(ref.Next())
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := len(want) - 1 - g; k >= 0; k -= 7 {
				if got, err := seats.NameOf(int64(k)); err != nil || got != want[k] {
					t.Errorf("seat %d: got %q, %v; want %q", k, got, err, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := seats.Of(MaxTotal); err == nil {
		t.Errorf("Of(MaxTotal) succeeded, want an error")
	}
	if _, err := seats.Of(-1); err == nil {
		t.Errorf("Of(-1) succeeded, want an error")
	}
}

func BenchmarkSeatsOf(b *testing.B) {
	seats, _ := NewSeats("spec.domains", []Share{{Name: "zone-a", Replicas: pct("50%")}, {Name: "zone-b", Replicas: pct("30%")}, {Name: "zone-c"}})
	_, _ = seats.Of(999)
	var k int64
	for b.Loop() {
		_, _ = seats.Of(k % 1000)
		k++
	}
}
