package apportion

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Seats answers "which share holds seat k" for one spec, concurrently: the
// ordinal map of a SubsetPlacement, where seat k is the domain of ordinal
// offset k (pod-index − ordinalStart). It deals the Sequence lazily and keeps
// what it dealt, so a lookup below the largest offset asked so far costs
// O(1) and takes no lock.
type Seats struct {
	mu    sync.Mutex // serialises growth
	seq   *Sequence
	seats atomic.Pointer[[]int32] // seats[k] = share index (name order)
}

// NewSeats returns the seat lookup of shares; errors are NewSequence's, with
// the shares named by field (e.g. "spec.domains").
func NewSeats(field string, shares []Share) (*Seats, error) {
	seq, err := newSequence(field, shares)
	if err != nil {
		return nil, err
	}
	s := &Seats{seq: seq}
	s.seats.Store(&[]int32{})
	return s, nil
}

// Names returns the share names in name order; Of returns indices into it.
func (s *Seats) Names() []string {
	names := make([]string, s.seq.Len())
	for i := range names {
		names[i] = s.seq.Name(i)
	}
	return names
}

// Of returns the index, in name order, of the share holding seat k (from 0).
// It returns an error if k is negative or not below MaxTotal.
func (s *Seats) Of(k int64) (int, error) {
	if k < 0 || k >= MaxTotal {
		return 0, fmt.Errorf("seat %d: must be in [0, %d)", k, MaxTotal)
	}
	if seats := *s.seats.Load(); k < int64(len(seats)) {
		return int(seats[k]), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seats := *s.seats.Load()
	if k >= int64(len(seats)) {
		// Grow geometrically so n lookups of rising k cost O(n) seats.
		n := min(max(k+1, 2*int64(len(seats)), 64), MaxTotal)
		grown := make([]int32, len(seats), n)
		copy(grown, seats)
		for int64(len(grown)) < n {
			grown = append(grown, int32(s.seq.Next()))
		}
		s.seats.Store(&grown)
		seats = grown
	}
	return int(seats[k]), nil
}

// NameOf returns the name of the share holding seat k (from 0); errors are
// Of's.
func (s *Seats) NameOf(k int64) (string, error) {
	i, err := s.Of(k)
	if err != nil {
		return "", err
	}
	return s.seq.Name(i), nil
}

// Counts returns, in name order, how many of seats [0, n) each share holds:
// the division of n replicas. n ≤ 0 gives all zeros; errors are Of's for
// seat n−1.
func (s *Seats) Counts(n int64) ([]int64, error) {
	counts := make([]int64, s.seq.Len())
	if n <= 0 {
		return counts, nil
	}
	if _, err := s.Of(n - 1); err != nil {
		return nil, err
	}
	for _, i := range (*s.seats.Load())[:n] {
		counts[i]++
	}
	return counts, nil
}
