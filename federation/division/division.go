// Package division divides the replicas of a FleetSet over shares. The hub
// uses the same function twice: spec.replicas over the subsets, then each
// subset's count over its domains.
//
// # Shares
//
// Each share claims replicas in one of three ways:
//   - an int: exactly that many replicas;
//   - a percentage ("0%" to "100%", whole numbers): that part of the flexible
//     pool, the replicas left after the ints. Percentages are apportioned
//     jointly over the pool, never rounded share by share;
//   - nil: an even part of what the percentages leave (100% − Σ%).
//
// If no share is nil, the percentages are normalised to their sum (30% and
// 30% split the pool evenly); if they sum to 100%, nil shares get nothing but
// their minReplicas. minReplicas and maxReplicas clamp a share, and what a
// clamp frees or takes goes to or comes from the other flexible shares.
//
// # Algorithm
//
// Divide defines one infinite sequence of seats and gives the first total
// seats; a share's count is the number of seats it holds. Every stage deals
// seats in the order of the quota-method sequence of ordinalmap.Sequencer
// (Steiner and Yeomans 1993; Balinski and Young, "The quota method of
// apportionment", 1975), over shares sorted by name:
//
//  1. Demand seats: ints and minReplicas, dealt by the sequence over those
//     demands, until every share holds its demand. If the demands exceed the
//     total, each share thus gets a within-quota part of its demand.
//  2. Flexible seats: the sequence over the percentage/nil weights runs on;
//     a share counts the seats the sequence gives it, clamped to
//     [minReplicas, maxReplicas], so a step that lands on a share still within
//     its minReplicas or already at its maxReplicas deals no seat. Shares at
//     their maxReplicas are thus skipped and the others keep their ratios.
//  3. Overflow seats: once every share of positive weight is at its
//     maxReplicas, the rest goes by the same weights, above maxReplicas; with
//     no positive weight at all (only ints and 0% shares), to every share
//     evenly.
//
// Raising the total only appends seats, so no count ever drops: the house
// monotonicity whose absence was karmada-io/karmada#6735, which Karmada fixed
// with Webster's divisor method (house monotone, but not always within
// quota).
//
// # Guarantees
//
// For valid input, Divide guarantees:
//   - the counts sum to the total and none is negative;
//   - ints are exact and every share is within [minReplicas, maxReplicas]
//     whenever that is feasible: Σints + ΣminReplicas ≤ total and the shares
//     can hold the total; otherwise Result.Unmet names each share affected;
//   - house monotone: raising the total never lowers any share's count;
//   - deterministic and independent of the order of the input: shares are
//     handled by name and ties go to the larger remainder, then the larger weight, then the lower name;
//   - within quota: when no minReplicas or maxReplicas binds, each flexible
//     share gets ⌊q⌋ or ⌈q⌉ of its exact part q of the pool, and demands that
//     exceed the total are cut to ⌊q⌋ or ⌈q⌉ of their proportional part q.
//
// It does not guarantee quota when minReplicas or maxReplicas binds, nor
// that the counts follow the ratios of ints and minReplicas above them. It is
// not population monotone: when one share's weight grows relative to
// another's, the first may still lose a replica to the second. By Balinski
// and Young's impossibility theorem no method is both population monotone
// and within quota.
//
// Divide costs O(n·(log total + 100·n)) for n shares, plus O(n·total) when
// the demands exceed the total.
package division

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fleetset/fleetset/plugins/ordinalmap"
)

// MaxTotal is the largest total, in replicas, that Divide accepts; it bounds
// the work of dividing an over-committed total.
const MaxTotal = 1 << 20

// Share is one claim on the replicas: a subset of a FleetSet or a domain of a
// subset.
type Share struct {
	// Name identifies the share; non-empty and unique among the shares.
	Name string
	// Replicas is an int (exact replicas, ≥ 0), a percentage of the flexible
	// pool ("0%" to "100%"), or nil for an even part of what the percentages
	// leave.
	Replicas *intstr.IntOrString
	// MinReplicas, if set, is the fewest replicas the share takes (≥ 0).
	MinReplicas *int32
	// MaxReplicas, if set, is the most replicas the share takes
	// (≥ MinReplicas).
	MaxReplicas *int32
}

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

// Divide divides total replicas over shares as the package documentation
// describes.
//
// It returns an error, naming the share and field, if total is negative or
// above MaxTotal, shares is empty, a name is empty or repeated, a count is
// negative, a percentage is malformed or outside 0%..100%, the percentages
// sum to more than 100%, minReplicas exceeds maxReplicas, or an int is
// outside [minReplicas, maxReplicas].
func Divide(total int32, shares []Share) (Result, error) {
	ss, err := parse(total, shares)
	if err != nil {
		return Result{}, err
	}
	counts, unmet, err := divide(int64(total), ss)
	if err != nil {
		return Result{}, err
	}
	assignments := make([]Assignment, len(shares))
	for i, s := range ss {
		assignments[s.index] = Assignment{Name: s.name, Replicas: int32(counts[i])}
	}
	return Result{Assignments: assignments, Unmet: unmet}, nil
}

// kind is how a share claims replicas.
type kind int

const (
	kindInt kind = iota
	kindPercent
	kindRest
)

// share is a validated Share.
type share struct {
	name  string
	index int // position in the input
	kind  kind
	// percent is the claim of a kindPercent share.
	percent int64
	// lo and hi bound the share's count: [int, int] for kindInt,
	// [minReplicas, maxReplicas] otherwise; hi is math.MaxInt64 if unbounded.
	lo, hi int64
}

// parse validates shares and returns them sorted by name.
func parse(total int32, shares []Share) ([]share, error) {
	var errs []error
	if total < 0 {
		errs = append(errs, fmt.Errorf("total: must not be negative, got %d", total))
	}
	if total > MaxTotal {
		errs = append(errs, fmt.Errorf("total: %d exceeds the maximum of %d replicas", total, MaxTotal))
	}
	if len(shares) == 0 {
		errs = append(errs, errors.New("shares: must not be empty"))
	}
	ss := make([]share, len(shares))
	seen := make(map[string]bool, len(shares))
	var percents int64
	for i, in := range shares {
		path := fmt.Sprintf("shares[%d]", i)
		s := share{name: in.Name, index: i, kind: kindRest, hi: math.MaxInt64}
		switch {
		case in.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: must not be empty", path))
		case seen[in.Name]:
			errs = append(errs, fmt.Errorf("%s.name: duplicate name %q", path, in.Name))
		}
		seen[in.Name] = true
		switch {
		case in.MinReplicas == nil:
		case *in.MinReplicas < 0:
			errs = append(errs, fmt.Errorf("%s.minReplicas: must not be negative, got %d", path, *in.MinReplicas))
		default:
			s.lo = int64(*in.MinReplicas)
		}
		switch {
		case in.MaxReplicas == nil:
		case *in.MaxReplicas < 0:
			errs = append(errs, fmt.Errorf("%s.maxReplicas: must not be negative, got %d", path, *in.MaxReplicas))
		default:
			s.hi = int64(*in.MaxReplicas)
		}
		if s.lo > s.hi {
			errs = append(errs, fmt.Errorf("%s.minReplicas: %d must not exceed maxReplicas %d", path, s.lo, s.hi))
		}
		if in.Replicas != nil {
			if err := s.parseReplicas(*in.Replicas); err != nil {
				errs = append(errs, fmt.Errorf("%s.replicas: %w", path, err))
			}
		}
		percents += s.percent
		ss[i] = s
	}
	if percents > 100 {
		errs = append(errs, fmt.Errorf("shares: percentages sum to %d%%, must not exceed 100%%", percents))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(ss, func(a, b share) int { return strings.Compare(a.name, b.name) })
	return ss, nil
}

// parseReplicas sets the claim of s from v; s.lo and s.hi hold its
// minReplicas and maxReplicas.
func (s *share) parseReplicas(v intstr.IntOrString) error {
	switch v.Type {
	case intstr.Int:
		n := int64(v.IntVal)
		switch {
		case n < 0:
			return fmt.Errorf("must not be negative, got %d", n)
		case n < s.lo:
			return fmt.Errorf("%d must not be below minReplicas %d", n, s.lo)
		case n > s.hi:
			return fmt.Errorf("%d must not exceed maxReplicas %d", n, s.hi)
		}
		s.kind, s.lo, s.hi = kindInt, n, n
	case intstr.String:
		digits, ok := strings.CutSuffix(v.StrVal, "%")
		if !ok {
			return fmt.Errorf("invalid value %q: must be an integer or a percentage such as \"60%%\"", v.StrVal)
		}
		p, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || digits[0] == '+' {
			return fmt.Errorf("invalid percent %q", v.StrVal)
		}
		if p < 0 || p > 100 {
			return fmt.Errorf("invalid percent %q: must be between 0%% and 100%%", v.StrVal)
		}
		s.kind, s.percent = kindPercent, p
	default:
		return fmt.Errorf("invalid type %d: must be an integer or a string", v.Type)
	}
	return nil
}

// divide returns the counts of the first total seats of the sequence the
// package documentation describes, for ss sorted by name, and what it could
// not honour.
func divide(total int64, ss []share) ([]int64, []string, error) {
	demands := make([]int64, len(ss))
	var demand int64
	for i, s := range ss {
		demands[i] = s.lo
		demand += s.lo
	}
	if total < demand {
		// Stage 1 does not complete.
		counts, err := apportion(demands, total)
		if err != nil {
			return nil, nil, err
		}
		var unmet []string
		for i, s := range ss {
			if counts[i] < s.lo {
				unmet = append(unmet, fmt.Sprintf("share %q: %d assigned, below its required %d: ints and minReplicas add up to %d, above the total of %d",
					s.name, counts[i], s.lo, demand, total))
			}
		}
		return counts, unmet, nil
	}
	weights := flexibleWeights(ss)
	counts, err := fill(total, ss, weights)
	if err != nil {
		return nil, nil, err
	}
	var held int64
	for _, c := range counts {
		held += c
	}
	if held == total {
		return counts, nil, nil
	}
	// Stage 3: nothing has room for the rest.
	if !slices.ContainsFunc(weights, func(w int64) bool { return w > 0 }) {
		for i := range weights {
			weights[i] = 1
		}
	}
	extra, err := apportion(weights, total-held)
	if err != nil {
		return nil, nil, err
	}
	var unmet []string
	for i, s := range ss {
		if extra[i] == 0 {
			continue
		}
		unmet = append(unmet, fmt.Sprintf("share %q: %d assigned, above its allowed %d: the shares can hold only %d of the total of %d",
			s.name, counts[i]+extra[i], counts[i], held, total))
		counts[i] += extra[i]
	}
	return counts, unmet, nil
}

// flexibleWeights returns the weight of each share in the flexible pool:
// p·r for a share of p% when r shares are nil, (100 − Σp) for a nil share,
// p when no share is nil, and 0 for an int.
func flexibleWeights(ss []share) []int64 {
	var rest, percents int64
	for _, s := range ss {
		switch s.kind {
		case kindRest:
			rest++
		case kindPercent:
			percents += s.percent
		}
	}
	weights := make([]int64, len(ss))
	for i, s := range ss {
		switch s.kind {
		case kindPercent:
			weights[i] = s.percent * max(rest, 1)
		case kindRest:
			weights[i] = 100 - percents
		}
	}
	return weights
}

// fill returns the counts after stage 2 of the sequence for a total of at
// least Σlo: the counts clamp(v_i, lo_i, hi_i) at the first point V of the
// flexible sequence (v = the seats it has dealt by then) at which they add up
// to total. If the shares cannot hold total, it returns each share at hi (lo
// for weight 0), which adds up to less than total.
func fill(total int64, ss []share, weights []int64) ([]int64, error) {
	counts := make([]int64, len(ss))
	var capacity int64
	unbounded, positive := false, false
	for i, s := range ss {
		switch {
		case weights[i] == 0:
			capacity += s.lo
		case s.hi == math.MaxInt64:
			unbounded, positive = true, true
		default:
			capacity += s.hi
			positive = true
		}
	}
	if !positive || (!unbounded && capacity <= total) {
		for i, s := range ss {
			counts[i] = s.lo
			if weights[i] > 0 {
				counts[i] = s.hi
			}
		}
		return counts, nil
	}
	seq, err := ordinalmap.NewSequencer(weights)
	if err != nil {
		return nil, err
	}
	held := func(v []int64) int64 {
		var sum int64
		for i, s := range ss {
			sum += min(max(v[i], s.lo), s.hi)
		}
		return sum
	}
	// Find the first number of whole periods q after which the shares hold
	// total. q = total suffices: each share of positive weight has then been
	// dealt at least total seats, so one holds total or all are at hi, which
	// holds more than total.
	period := seq.Period()
	q, qMax := int64(0), total
	for q < qMax {
		mid := q + (qMax-q)/2
		if held(seq.Counts(mid*period)) >= total {
			qMax = mid
		} else {
			q = mid + 1
		}
	}
	// Deal seat by seat through period q; held(0) = Σlo ≤ total covers q = 0.
	v := seq.Counts(max(q-1, 0) * period)
	for n := held(v); n < total; {
		i := seq.Next()
		v[i]++
		if v[i] > ss[i].lo && v[i] <= ss[i].hi {
			n++
		}
	}
	for i, s := range ss {
		counts[i] = min(max(v[i], s.lo), s.hi)
	}
	return counts, nil
}

// apportion returns the counts of the first n seats of the quota-method
// sequence over weights.
func apportion(weights []int64, n int64) ([]int64, error) {
	seq, err := ordinalmap.NewSequencer(weights)
	if err != nil {
		return nil, err
	}
	return seq.Counts(n), nil
}
