package ordinalmap

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Sequencer yields the quota-method seat sequence for fixed non-negative
// integer weights: seat after seat, the index of the weight that receives it.
// Every prefix of k seats gives index i between ⌊k·w_i/W⌋ and ⌈k·w_i/W⌉ seats
// (W = Σw), so the counts of the first k seats are a house-monotone,
// within-quota apportionment of k seats.
//
// The sequence is periodic: after Period() seats every index holds exactly its
// gcd-reduced weight and the state starts over. A Sequencer is not safe for
// concurrent use; Counts does not move the position of Next.
type Sequencer struct {
	weights []uint64 // input weights divided by their gcd
	period  uint64   // sum of weights
	cur     progress // position of Next within the current period
}

// progress is a position inside one period of the sequence.
type progress struct {
	step   uint64   // seats given so far in this period
	counts []uint64 // seats of each index so far in this period
}

// NewSequencer returns a Sequencer positioned before the first seat. weights
// are the shares of the indices (any unit; only their ratios matter); an
// index with weight 0 never receives a seat.
//
// It returns an error if weights is empty, a weight is negative, all weights
// are zero, or their sum after dividing by their gcd exceeds math.MaxInt64.
func NewSequencer(weights []int64) (*Sequencer, error) {
	if len(weights) == 0 {
		return nil, errors.New("weights: must not be empty")
	}
	var g uint64
	for i, w := range weights {
		if w < 0 {
			return nil, fmt.Errorf("weights[%d]: must not be negative, got %d", i, w)
		}
		g = gcd(g, uint64(w))
	}
	if g == 0 {
		return nil, errors.New("weights: at least one must be positive")
	}
	s := &Sequencer{
		weights: make([]uint64, len(weights)),
		cur:     progress{counts: make([]uint64, len(weights))},
	}
	for i, w := range weights {
		s.weights[i] = uint64(w) / g
		s.period += s.weights[i]
		if s.period > math.MaxInt64 {
			return nil, errors.New("weights: sum exceeds the int64 range")
		}
	}
	return s, nil
}

// Period returns the length of the sequence's period in seats: the sum of the
// weights divided by their gcd.
func (s *Sequencer) Period() int64 {
	return int64(s.period)
}

// Next returns the index that receives the next seat and advances the
// sequence by one seat. It costs O(len(weights)).
func (s *Sequencer) Next() int {
	return s.cur.next(s.weights, s.period)
}

// Counts returns, in input order, how many of the first n seats of the
// sequence each index receives; n ≤ 0 gives all zeros. It costs
// O(len(weights)·min(n mod Period(), Period())) and does not change what Next
// returns.
func (s *Sequencer) Counts(n int64) []int64 {
	counts := make([]int64, len(s.weights))
	if n <= 0 {
		return counts
	}
	periods, rest := uint64(n)/s.period, uint64(n)%s.period
	for i, w := range s.weights {
		counts[i] = int64(periods * w) // ≤ n
	}
	p := progress{counts: make([]uint64, len(s.weights))}
	for range rest {
		counts[p.next(s.weights, s.period)]++
	}
	return counts
}

// next gives the next seat to the eligible index with the earliest deadline
// and returns that index. Index i, holding x seats after step k-1, is eligible
// at step k if x+1 ≤ ⌈k·w_i/W⌉ (upper quota); seat x+1 is due by step
// ⌈(x+1)·W/w_i⌉, the last step at which i still meets its lower quota without
// it. Equal deadlines go to the index furthest below its exact share k·w_i/W
// (largest remainder, as Hamilton's and Webster's methods would choose, so 9
// seats at 60:40 split 5:4), then to the larger weight, then to the lower
// index.
//
// Some index is always eligible (Σ⌈k·w_i/W⌉ ≥ k > Σx) and, by Steiner and
// Yeomans, no deadline is ever missed, so every prefix stays within quota.
func (p *progress) next(weights []uint64, period uint64) int {
	k := p.step + 1
	best, bestDue := -1, uint64(0)
	for i, w := range weights {
		x := p.counts[i]
		// x+1 ≤ ⌈k·w/W⌉  ⇔  x < k·w/W  ⇔  x·W < k·w.
		if w == 0 || !mulLess(x, period, k, w) {
			continue
		}
		due := mulCeilDiv(x+1, period, w)
		if best < 0 || due < bestDue {
			best, bestDue = i, due
			continue
		}
		if due == bestDue {
			if c := cmpDeficit(k, w, x, weights[best], p.counts[best], period); c > 0 || (c == 0 && w > weights[best]) {
				best = i
			}
		}
	}
	p.counts[best]++
	p.step = k
	if k == period {
		// Every index now holds exactly its weight: start the next period.
		p.step = 0
		clear(p.counts)
	}
	return best
}

// cmpDeficit compares the deficits k·w1 − x1·W and k·w2 − x2·W (how far two
// eligible indices are below their exact share at step k, in units of 1/W),
// exactly in 128 bits; it returns −1, 0 or +1. Both are positive for
// eligible indices.
func cmpDeficit(k, w1, x1, w2, x2, period uint64) int {
	d1h, d1l := sub128(k, w1, x1, period)
	d2h, d2l := sub128(k, w2, x2, period)
	switch {
	case d1h != d2h:
		return cmpUint(d1h, d2h)
	default:
		return cmpUint(d1l, d2l)
	}
}

// sub128 returns a·b − c·d as a 128-bit (hi, lo) pair; a·b ≥ c·d.
func sub128(a, b, c, d uint64) (uint64, uint64) {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	lo, borrow := bits.Sub64(l1, l2, 0)
	hi, _ := bits.Sub64(h1, h2, borrow)
	return hi, lo
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mulLess reports whether a·b < c·d, computed exactly in 128 bits.
func mulLess(a, b, c, d uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return h1 < h2 || (h1 == h2 && l1 < l2)
}

// mulCeilDiv returns ⌈a·b/c⌉ for a ≤ c, c > 0, computed exactly in 128 bits;
// a ≤ c keeps the quotient within b.
func mulCeilDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, r := bits.Div64(hi, lo, c)
	if r != 0 {
		q++
	}
	return q
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
