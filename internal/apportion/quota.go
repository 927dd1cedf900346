package apportion

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// maxScan bounds, in house sizes, how far ahead Next looks to confirm that a
// seat for a share other than the earliest-due one keeps the future within
// quota (Still's test). Beyond it the earliest-due share, which needs no
// look-ahead, gets the seat; no realistic weights come near it.
const maxScan = 1 << 16

// sequencer deals seats to shares of fixed weights by the quota method of the
// package documentation: among the shares whose seat keeps every present and
// later house within quota (Still's test), Webster's pick, ties to the lower
// index. Not safe for concurrent use.
type sequencer struct {
	weights []uint64 // input weights divided by their gcd
	total   uint64   // W, the sum of weights
	counts  []uint64 // seats held by each share
	seats   uint64   // seats dealt so far
	cands   []int    // scratch: the shares within upper quota
}

// newSequencer returns a sequencer before its first seat. weights are the
// shares' claims in any unit; only their ratios matter, and a share of weight
// 0 never gets a seat.
//
// It returns an error if weights is empty, a weight is negative, all weights
// are zero, or their sum after dividing by their gcd exceeds math.MaxInt64.
func newSequencer(weights []int64) (*sequencer, error) {
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
	s := &sequencer{weights: make([]uint64, len(weights)), counts: make([]uint64, len(weights))}
	for i, w := range weights {
		s.weights[i] = uint64(w) / g
		s.total += s.weights[i]
		if s.total > math.MaxInt64 {
			return nil, errors.New("weights: sum exceeds the int64 range")
		}
	}
	return s, nil
}

// Next deals the next seat and returns the index of the share that gets it.
// It costs O(len(weights)) plus, when Webster's pick is not the share due
// earliest, O(len(weights)) per house size looked ahead (at most W/w of the
// picked share).
func (s *sequencer) Next() int {
	h := s.seats + 1 // the house size after this seat
	s.cands = s.cands[:0]
	best, edd := -1, -1
	var eddDue uint64
	for i, w := range s.weights {
		// Upper quota at h: x+1 ≤ ⌈h·w/W⌉  ⇔  x·W < h·w.
		if w == 0 || !mulLess(s.counts[i], s.total, h, w) {
			continue
		}
		s.cands = append(s.cands, i)
		if best < 0 || s.websterBefore(i, best) {
			best = i
		}
		if due := s.due(i); edd < 0 || due < eddDue {
			edd, eddDue = i, due
		}
	}
	pick := edd
	if best != edd {
		// Still's test: i is eligible iff the first house size t ≥ h at
		// which the lower quotas already use every seat (S(t) = t, see
		// tight) comes no earlier than i's own next due size. Webster's pick
		// is confirmed by looking ahead to its due size only.
		if t, found := s.tight(h, s.due(best)); !found {
			pick = best
		} else {
			for _, i := range s.cands {
				if s.due(i) <= t && s.websterBefore(i, pick) {
					pick = i
				}
			}
		}
	}
	s.counts[pick]++
	s.seats = h
	return pick
}

// websterBefore reports whether Webster's divisor method prefers share i to
// share j for the next seat: w_i/(2x_i+1) > w_j/(2x_j+1), ties to the lower
// index.
func (s *sequencer) websterBefore(i, j int) bool {
	hi1, lo1 := bits.Mul64(s.weights[i], 2*s.counts[j]+1)
	hi2, lo2 := bits.Mul64(s.weights[j], 2*s.counts[i]+1)
	if hi1 != hi2 || lo1 != lo2 {
		return hi1 > hi2 || (hi1 == hi2 && lo1 > lo2)
	}
	return i < j
}

// due returns the house size by which share i needs its next seat to stay
// within lower quota: ⌈(x_i+1)·W/w_i⌉.
func (s *sequencer) due(i int) uint64 {
	return mulCeilDiv(s.counts[i]+1, s.total, s.weights[i])
}

// tight returns the first house size t in [h, limit) at which the seats held
// plus the seats the lower quotas still demand fill the house:
// S(t) = Σ_j max(x_j, ⌊t·w_j/W⌋) = t. Before any such t every share may take
// the seat at h without breaking a later lower quota. found is false when
// there is none below limit; a limit beyond maxScan house sizes is cut to
// h+maxScan and its end reported as tight, which leaves only the
// earliest-due share eligible.
func (s *sequencer) tight(h, limit uint64) (uint64, bool) {
	capped := limit > h+maxScan
	if capped {
		limit = h + maxScan
	}
	for t := h; t < limit; t++ {
		if s.demand(t) >= t {
			return t, true
		}
	}
	return limit, capped
}

// demand returns S(t) = Σ_j max(x_j, ⌊t·w_j/W⌋).
func (s *sequencer) demand(t uint64) uint64 {
	var sum uint64
	for j, w := range s.weights {
		hi, lo := bits.Mul64(t, w)
		q, _ := bits.Div64(hi, lo, s.total)
		sum += max(s.counts[j], q)
	}
	return sum
}

// mulLess reports whether a·b < c·d, computed exactly in 128 bits.
func mulLess(a, b, c, d uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return h1 < h2 || (h1 == h2 && l1 < l2)
}

// mulCeilDiv returns ⌈a·b/c⌉ for c > 0 and a quotient below 2^64, computed
// exactly in 128 bits.
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
