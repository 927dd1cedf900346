package ordinalmap

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// domains builds domains "d0", "d1", ... with the given weights.
func domains(weights ...int64) []Domain {
	ds := make([]Domain, len(weights))
	for i, w := range weights {
		ds[i] = Domain{Name: fmt.Sprintf("d%d", i), Weight: w}
	}
	return ds
}

func TestDomainOf(t *testing.T) {
	tests := []struct {
		name    string
		domains []Domain
		// want are the domains of offsets 0, 1, 2, ...
		want []string
	}{
		{
			name:    "equal 3 domains",
			domains: []Domain{{"zone-a", 1}, {"zone-b", 1}, {"zone-c", 1}},
			want:    []string{"zone-a", "zone-b", "zone-c", "zone-a", "zone-b", "zone-c", "zone-a"},
		},
		{
			// a is due first (seat 1 by step 2); at step 3 a and c are both
			// due by step 4 and c, further below its share (0.75 vs 0.5),
			// gets it.
			name:    "weights 2:1:1",
			domains: domains(2, 1, 1),
			want:    []string{"d0", "d1", "d2", "d0", "d0", "d1", "d2", "d0"},
		},
		{
			name:    "weights 4:2:2 reduce to 2:1:1",
			domains: domains(4, 2, 2),
			want:    []string{"d0", "d1", "d2", "d0", "d0", "d1", "d2", "d0"},
		},
		{
			// Steps 1-5: east due by 2, west by 3, east by 4; at step 4 east
			// and west are both due by 5 and west, 0.6 below its share
			// against east's 0.4, gets it; then east.
			name:    "weights 3:2",
			domains: []Domain{{"east", 3}, {"west", 2}},
			want:    []string{"east", "west", "east", "west", "east", "east", "west"},
		},
		{
			name:    "weights 1:0:1 skip the zero",
			domains: domains(1, 0, 1),
			want:    []string{"d0", "d2", "d0", "d2"},
		},
		{
			name:    "single domain",
			domains: domains(7),
			want:    []string{"d0", "d0", "d0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.domains)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := make([]string, len(tt.want))
			for o := range got {
				if got[o], err = m.DomainOf(int64(o)); err != nil {
					t.Fatalf("DomainOf(%d): %v", o, err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("domains of offsets 0..%d (-want,+got):\n%s", len(got)-1, diff)
			}
		})
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		name    string
		domains []Domain
		n       int64
		want    []int64
	}{
		{name: "weights 2:1:1, 0 ordinals", domains: domains(2, 1, 1), n: 0, want: []int64{0, 0, 0}},
		{name: "weights 2:1:1, -1 ordinals", domains: domains(2, 1, 1), n: -1, want: []int64{0, 0, 0}},
		{name: "weights 2:1:1, 3 ordinals", domains: domains(2, 1, 1), n: 3, want: []int64{1, 1, 1}},
		{name: "weights 2:1:1, 4 ordinals", domains: domains(2, 1, 1), n: 4, want: []int64{2, 1, 1}},
		{name: "weights 2:1:1, 1e12+1 ordinals", domains: domains(2, 1, 1), n: 1e12 + 1, want: []int64{5e11 + 1, 2.5e11, 2.5e11}},
		{name: "weights 3:2, 9 ordinals", domains: domains(3, 2), n: 9, want: []int64{5, 4}},
		{name: "weights 6:0:4, 10 ordinals", domains: domains(6, 0, 4), n: 10, want: []int64{6, 0, 4}},
		{name: "equal 3 domains, max int64 ordinals", domains: domains(1, 1, 1), n: math.MaxInt64, want: []int64{math.MaxInt64/3 + 1, math.MaxInt64 / 3, math.MaxInt64 / 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.domains)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tt.want, m.Counts(tt.n)); diff != "" {
				t.Errorf("Counts(%d) (-want,+got):\n%s", tt.n, diff)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		domains []Domain
		want    string
	}{
		{name: "no domains", want: "domains: must not be empty"},
		{name: "empty name", domains: []Domain{{"a", 1}, {"", 1}}, want: "domains[1].name: must not be empty"},
		{name: "duplicate name", domains: []Domain{{"a", 1}, {"a", 2}}, want: `domains[1].name: duplicate name "a"`},
		{name: "negative weight", domains: []Domain{{"a", 1}, {"b", -1}}, want: "domains[1].weight: must not be negative, got -1"},
		{name: "all weights zero", domains: domains(0, 0), want: "domains: weights: at least one must be positive"},
		{name: "sum overflows", domains: domains(math.MaxInt64, 2), want: "domains: weights: sum exceeds the int64 range"},
		{name: "weights 1<<20:1 exceed the period limit", domains: domains(1<<20, 1), want: "domains: period of 1048577 ordinals (sum of weights / their gcd) exceeds the maximum of 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.domains)
			if err == nil {
				t.Fatalf("New succeeded, want error %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNegativeOffset(t *testing.T) {
	m, err := New(domains(1, 1))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := m.DomainOf(-1); err == nil {
		t.Errorf("DomainOf(-1) succeeded, want error")
	}
	if _, err := m.IndexOf(-1); err == nil {
		t.Errorf("IndexOf(-1) succeeded, want error")
	}
}

func TestPeriodLimit(t *testing.T) {
	// Weights whose sum is large but whose gcd brings the period to 3.
	m, err := New(domains(1<<40, 1<<40, 1<<40))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if diff := cmp.Diff([]int64{1, 1, 1}, m.Counts(3)); diff != "" {
		t.Errorf("Counts(3) (-want,+got):\n%s", diff)
	}
	// The largest period allowed.
	if _, err := New(domains(1<<19, 1<<19-1, 1)); err != nil {
		t.Errorf("New with period %d: %v", MaxPeriod, err)
	}
}

// FuzzWithinQuota checks, for weights drawn from the input: every prefix of
// offsets [0, k) is within quota, the counts at k = Σw are exactly the
// weights, Counts agrees with DomainOf, New is deterministic, and the map
// repeats with period Σw / gcd.
func FuzzWithinQuota(f *testing.F) {
	f.Add([]byte{2, 1, 1}, uint8(1))
	f.Add([]byte{3, 2}, uint8(1))
	f.Add([]byte{1, 1, 1}, uint8(1))
	f.Add([]byte{5, 0, 3, 2}, uint8(3))
	f.Add([]byte{7, 13, 1, 29, 2, 0, 31}, uint8(2))
	f.Add([]byte{255, 254, 1, 3}, uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, scale uint8) {
		if len(raw) == 0 || len(raw) > 12 {
			return
		}
		// scale multiplies every weight, to exercise the gcd reduction.
		s := int64(scale%4) + 1
		weights := make([]int64, len(raw))
		var total int64
		for i, b := range raw {
			weights[i] = int64(b) * s
			total += weights[i]
		}
		if total == 0 {
			return
		}
		m, err := New(domains(weights...))
		if err != nil {
			t.Fatalf("New(%v): %v", weights, err)
		}
		again, err := New(domains(weights...))
		if err != nil {
			t.Fatalf("New(%v) again: %v", weights, err)
		}
		period := int64(len(m.period))
		if total%period != 0 {
			t.Fatalf("weights %v: period %d does not divide the sum %d", weights, period, total)
		}
		counts := make([]int64, len(weights))
		for k := int64(1); k <= total+period; k++ {
			i, err := m.IndexOf(k - 1)
			if err != nil {
				t.Fatalf("IndexOf(%d): %v", k-1, err)
			}
			if j, _ := again.IndexOf(k - 1); j != i {
				t.Fatalf("weights %v: offset %d maps to %d, then to %d", weights, k-1, i, j)
			}
			if j, _ := m.IndexOf(k - 1 + period); j != i {
				t.Fatalf("weights %v: offset %d maps to %d but offset %d to %d", weights, k-1, i, k-1+period, j)
			}
			counts[i]++
			for d, w := range weights {
				lower, upper := k*w/total, (k*w+total-1)/total
				if counts[d] < lower || counts[d] > upper {
					t.Fatalf("weights %v: offsets [0,%d) give domain %d %d instances, want within [%d,%d]", weights, k, d, counts[d], lower, upper)
				}
			}
			if k == total {
				if diff := cmp.Diff(weights, counts); diff != "" {
					t.Fatalf("counts at Σw = %d (-want,+got):\n%s", total, diff)
				}
			}
			// Counts costs O(k mod period): check it at powers of two and
			// at the end of each period.
			if k&(k-1) == 0 || k%period == 0 {
				if diff := cmp.Diff(counts, m.Counts(k)); diff != "" {
					t.Fatalf("weights %v: Counts(%d) (-want,+got):\n%s", weights, k, diff)
				}
			}
		}
	})
}

func BenchmarkDomainOf(b *testing.B) {
	m, err := New([]Domain{{"zone-a", 5}, {"zone-b", 3}, {"zone-c", 2}})
	if err != nil {
		b.Fatal(err)
	}
	var offset int64
	for b.Loop() {
		if _, err := m.DomainOf(offset); err != nil {
			b.Fatal(err)
		}
		offset++
	}
}

func BenchmarkNew(b *testing.B) {
	for _, bc := range []struct {
		name    string
		domains []Domain
	}{
		{name: "3 zones, weights 5:3:2", domains: []Domain{{"zone-a", 5}, {"zone-b", 3}, {"zone-c", 2}}},
		{name: "16 domains, period 2000", domains: domains(1, 3, 7, 15, 31, 63, 127, 255, 200, 180, 160, 140, 120, 100, 298, 300)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := New(bc.domains); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
