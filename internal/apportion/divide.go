package apportion

import (
	"fmt"
	"math"
)

// Assignment is the number of replicas given to one share.
type Assignment struct {
	// Name is the share's name.
	Name string
	// Replicas is the share's count.
	Replicas int32
}

// Result is a division of a total.
type Result struct {
	// Assignments holds one entry per share, in input order; their Replicas
	// sum to the total.
	Assignments []Assignment
	// Unmet describes, one entry per share in name order, each share whose
	// int, minReplicas or maxReplicas (or 0%) could not be honoured because
	// the spec is infeasible for this total. It is empty when the spec is
	// feasible.
	Unmet []string
}

// Divide divides total replicas over shares: the counts of the first total
// seats of the shares' Sequence. It costs O(total) Sequence seats.
//
// It returns an error, naming the share and field, if total is negative or
// above MaxTotal, or the shares are invalid (see NewSequence).
func Divide(total int32, shares []Share) (Result, error) {
	if total < 0 {
		return Result{}, fmt.Errorf("total: must not be negative, got %d", total)
	}
	if total > MaxTotal {
		return Result{}, fmt.Errorf("total: %d exceeds the maximum of %d replicas", total, MaxTotal)
	}
	s, err := NewSequence(shares)
	if err != nil {
		return Result{}, err
	}
	for range total {
		s.Next()
	}
	return s.result(), nil
}

// result returns the division the seats dealt so far make, and what of the
// spec they could not honour.
func (s *Sequence) result() Result {
	r := Result{Assignments: make([]Assignment, len(s.shares))}
	var capacity int64
	for i, sh := range s.shares {
		r.Assignments[sh.index] = Assignment{Name: sh.name, Replicas: int32(s.counts[i])}
		switch {
		case s.weights[i] == 0:
			capacity += sh.lo
		case sh.hi == math.MaxInt64:
			capacity = math.MaxInt64
		case capacity < math.MaxInt64:
			capacity += sh.hi
		}
	}
	for i, sh := range s.shares {
		switch c := s.counts[i]; {
		case c < sh.lo:
			r.Unmet = append(r.Unmet, fmt.Sprintf("share %q: %d assigned, below its required %d: ints and minReplicas add up to %d, above the total of %d",
				sh.name, c, sh.lo, s.demand, s.dealt))
		case c > sh.hi || (c > sh.lo && s.weights[i] == 0):
			allowed := sh.hi
			if s.weights[i] == 0 {
				allowed = sh.lo
			}
			r.Unmet = append(r.Unmet, fmt.Sprintf("share %q: %d assigned, above its allowed %d: the shares can hold only %d of the total of %d",
				sh.name, c, allowed, capacity, s.dealt))
		}
	}
	return r
}
