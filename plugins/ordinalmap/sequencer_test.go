package ordinalmap

import (
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSequencerNext(t *testing.T) {
	tests := []struct {
		name    string
		weights []int64
		want    []int // indices of seats 1, 2, 3, ...
	}{
		{name: "weights 2:1:1", weights: []int64{2, 1, 1}, want: []int{0, 1, 2, 0, 0, 1, 2, 0}},
		{name: "weights 1:1:2 prefer the larger remainder on equal deadlines", weights: []int64{1, 1, 2}, want: []int{2, 0, 1, 2, 2, 0, 1, 2}},
		{name: "weights 60:40", weights: []int64{60, 40}, want: []int{0, 1, 0, 1, 0, 0, 1, 0, 1, 0}},
		{name: "weights 2:2 go to the lower index on equal deadlines, remainders and weights", weights: []int64{2, 2}, want: []int{0, 1, 0, 1}},
		{name: "weights 0:5", weights: []int64{0, 5}, want: []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSequencer(tt.weights)
			if err != nil {
				t.Fatalf("NewSequencer: %v", err)
			}
			got := make([]int, len(tt.want))
			for i := range got {
				got[i] = s.Next()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("seats (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSequencerCounts(t *testing.T) {
	tests := []struct {
		name    string
		weights []int64
		n       int64
		want    []int64
	}{
		{name: "weights 8:4:0, 10 seats", weights: []int64{8, 4, 0}, n: 10, want: []int64{7, 3, 0}},
		{name: "weights 33:33:34, 10 seats", weights: []int64{33, 33, 34}, n: 10, want: []int64{3, 3, 4}},
		// The period is 2^31+1 seats; counts come from stepping 2^20 seats.
		{name: "weights 2^31:1, 2^20 seats", weights: []int64{1 << 31, 1}, n: 1 << 20, want: []int64{1 << 20, 0}},
		{name: "weights 1:1, 0 seats", weights: []int64{1, 1}, n: 0, want: []int64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSequencer(tt.weights)
			if err != nil {
				t.Fatalf("NewSequencer: %v", err)
			}
			if diff := cmp.Diff(tt.want, s.Counts(tt.n)); diff != "" {
				t.Errorf("Counts(%d) (-want,+got):\n%s", tt.n, diff)
			}
		})
	}
}

// TestSequencerCountsKeepsPosition checks that Counts does not move Next.
func TestSequencerCountsKeepsPosition(t *testing.T) {
	s, err := NewSequencer([]int64{2, 1, 1})
	if err != nil {
		t.Fatalf("NewSequencer: %v", err)
	}
	var got []int
	for range 4 {
		s.Counts(3)
		got = append(got, s.Next())
	}
	if diff := cmp.Diff([]int{0, 1, 2, 0}, got); diff != "" {
		t.Errorf("seats (-want,+got):\n%s", diff)
	}
}

func TestNewSequencerErrors(t *testing.T) {
	tests := []struct {
		name    string
		weights []int64
		want    string
	}{
		{name: "no weights", want: "weights: must not be empty"},
		{name: "weights 1:-2", weights: []int64{1, -2}, want: "weights[1]: must not be negative, got -2"},
		{name: "weights 0:0", weights: []int64{0, 0}, want: "weights: at least one must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSequencer(tt.weights)
			if err == nil {
				t.Fatalf("NewSequencer succeeded, want error %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

// FuzzSequencerWithinQuota checks the first seats of sequences with weights
// up to 2^40, whose products need the 128-bit arithmetic of Next: every
// prefix stays within quota and Counts agrees with Next.
func FuzzSequencerWithinQuota(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x80, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var weights []int64
		for i := 0; i+8 <= len(raw) && len(weights) < 6; i += 8 {
			weights = append(weights, int64(binary.LittleEndian.Uint64(raw[i:])&(1<<40-1)))
		}
		s, err := NewSequencer(weights)
		if err != nil {
			return // empty or all zero
		}
		sum := new(big.Int)
		for _, w := range weights {
			sum.Add(sum, big.NewInt(w))
		}
		steps := min(s.Period(), 2000)
		counts := make([]int64, len(weights))
		lower, upper, kw := new(big.Int), new(big.Int), new(big.Int)
		for k := int64(1); k <= steps; k++ {
			counts[s.Next()]++
			for i, w := range weights {
				kw.Mul(big.NewInt(k), big.NewInt(w))
				lower.Div(kw, sum)
				upper.Add(kw, sum)
				upper.Sub(upper, big.NewInt(1))
				upper.Div(upper, sum)
				if c := big.NewInt(counts[i]); c.Cmp(lower) < 0 || c.Cmp(upper) > 0 {
					t.Fatalf("weights %v: %d seats give index %d %d, want within [%v,%v]", weights, k, i, counts[i], lower, upper)
				}
			}
		}
		if diff := cmp.Diff(counts, s.Counts(steps)); diff != "" {
			t.Fatalf("weights %v: Counts(%d) (-want,+got):\n%s", weights, steps, diff)
		}
	})
}
