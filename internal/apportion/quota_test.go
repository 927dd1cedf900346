package apportion

import (
	"math/rand/v2"
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
		{name: "weights 60:40 as Webster", weights: []int64{60, 40}, want: []int{0, 1, 0, 1, 0, 0, 1, 0, 1, 0}},
		{name: "weights 2:2 tie to the lower index", weights: []int64{2, 2}, want: []int{0, 1, 0, 1}},
		{name: "weights 0:5", weights: []int64{0, 5}, want: []int{1, 1, 1}},
		// At 6 seats 70:20:10 is 4,1,1 (Webster and Hamilton agree); the
		// earliest-deadline order gave 5,1,0.
		{name: "weights 70:20:10", weights: []int64{70, 20, 10}, want: []int{0, 0, 1, 0, 0, 2, 0, 1, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newSequencer(tt.weights)
			if err != nil {
				t.Fatalf("newSequencer: %v", err)
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

func TestNewSequencerErrors(t *testing.T) {
	for name, weights := range map[string][]int64{
		"empty":    nil,
		"negative": {1, -1},
		"all zero": {0, 0},
		"overflow": {1 << 62, 1 << 62, 1<<62 - 1},
	} {
		if _, err := newSequencer(weights); err == nil {
			t.Errorf("%s: newSequencer(%v) succeeded, want an error", name, weights)
		}
	}
}

// webster returns the counts of Webster's divisor method (Sainte-Laguë) for
// house sizes 0..n as a house-monotone sequence: each seat to the largest
// w/(2x+1), ties to the lower index. Independent of sequencer.
func webster(weights []int64, n int) [][]int64 {
	x := make([]int64, len(weights))
	out := [][]int64{append([]int64(nil), x...)}
	for range n {
		best := -1
		for i, w := range weights {
			if w == 0 {
				continue
			}
			if best < 0 || w*(2*x[best]+1) > weights[best]*(2*x[i]+1) {
				best = i
			}
		}
		x[best]++
		out = append(out, append([]int64(nil), x...))
	}
	return out
}

// TestSequencerQuotaAndWebster measures the quota method over random weight
// vectors (1–6 shares, weights 0–100) at every house size 0–100: it must
// never leave quota, must be house monotone (one seat per step, by
// construction of Next), and must equal Webster wherever Webster's pick was
// eligible. It logs how often its counts differ from Webster's.
func TestSequencerQuotaAndWebster(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const vectors, sizes = 2000, 100
	var divisions, differ, violations, websterOut int
	for range vectors {
		weights := make([]int64, 1+r.IntN(6))
		var sum int64
		for i := range weights {
			weights[i] = int64(r.IntN(101))
			sum += weights[i]
		}
		if sum == 0 {
			weights[0], sum = 1, 1
		}
		s, err := newSequencer(weights)
		if err != nil {
			t.Fatal(err)
		}
		web := webster(weights, sizes)
		counts := make([]int64, len(weights))
		for h := int64(1); h <= sizes; h++ {
			counts[s.Next()]++
			divisions++
			same, webIn := true, true
			for i, w := range weights {
				lower, upper := h*w/sum, (h*w+sum-1)/sum
				if counts[i] < lower || counts[i] > upper {
					violations++
					t.Errorf("weights %v, %d seats: share %d holds %d, quota [%d,%d]", weights, h, i, counts[i], lower, upper)
				}
				if web[h][i] < lower || web[h][i] > upper {
					webIn = false
				}
				same = same && counts[i] == web[h][i]
			}
			if !same {
				differ++
			}
			if !webIn {
				websterOut++
			}
		}
	}
	rate := float64(differ) / float64(divisions)
	t.Logf("quota method vs Webster over %d divisions (%d weight vectors × sizes 1–%d): differ in %d (%.2f%%); Webster itself out of quota in %d (%.2f%%); quota violations %d",
		divisions, vectors, sizes, differ, 100*rate, websterOut, 100*float64(websterOut)/float64(divisions), violations)
	if rate > 0.05 {
		t.Errorf("differs from Webster in %.2f%% of divisions, want at most 5%%", 100*rate)
	}
}

// TestSequencerFollowsWebsterWhereEligible checks the rule step by step:
// whenever the seat does not go to Webster's pick (on the current counts),
// giving it to Webster's pick would have broken a quota at some later size.
func TestSequencerFollowsWebsterWhereEligible(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 500 {
		weights := make([]int64, 2+r.IntN(5))
		var sum int64
		for i := range weights {
			weights[i] = int64(1 + r.IntN(100))
			sum += weights[i]
		}
		s, _ := newSequencer(weights)
		for h := int64(1); h <= 60; h++ {
			x := append([]int64(nil), toInt64(s.counts)...)
			web := -1
			for i, w := range weights {
				if x[i]*sum < h*w && (web < 0 || w*(2*x[web]+1) > weights[web]*(2*x[i]+1)) {
					web = i
				}
			}
			got := s.Next()
			if got == web {
				continue
			}
			// Webster's pick must fail Still's test: some size t ≥ h where
			// the lower quotas cannot all be met after it.
			x[web]++
			if feasible(weights, sum, x, h, h+2*sum) {
				t.Fatalf("weights %v, seat %d: went to %d, but Webster's pick %d was eligible", weights, h, got, web)
			}
		}
	}
}

func toInt64(u []uint64) []int64 {
	out := make([]int64, len(u))
	for i, v := range u {
		out[i] = int64(v)
	}
	return out
}

// feasible reports whether counts x at house size h leave every size in
// [h, until] able to meet every lower quota: Σ max(x_j, ⌊t·w_j/W⌋) ≤ t.
func feasible(weights []int64, sum int64, x []int64, h, until int64) bool {
	for t := h; t <= until; t++ {
		var need int64
		for j, w := range weights {
			need += max(x[j], t*w/sum)
		}
		if need > t {
			return false
		}
	}
	return true
}

func BenchmarkSequencerNext(b *testing.B) {
	for _, bc := range []struct {
		name    string
		weights []int64
	}{
		{"3 equal", []int64{1, 1, 1}},
		{"70:20:10", []int64{70, 20, 10}},
		{"6 random", []int64{17, 3, 40, 9, 23, 8}},
		{"1000:1", []int64{1000, 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := newSequencer(bc.weights)
			for b.Loop() {
				s.Next()
			}
		})
	}
}
