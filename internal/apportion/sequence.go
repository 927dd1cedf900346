package apportion

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fleetset/fleetset/internal/names"
)

// MaxTotal is the largest number of seats, in replicas, that Divide deals
// and Seats answers for; it bounds the work of one division.
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

// stage is where a Sequence is in its three stages (see the package
// documentation).
type stage int

const (
	stageDemand stage = iota
	stageFlexible
	stageOverflow
)

// Sequence is the seat sequence of one spec: Next returns, seat after seat,
// the share that receives it, so the first n seats are the division of n
// replicas and seat k (from 0) is the domain of ordinal offset k. A Sequence
// is not safe for concurrent use; Seats wraps one for concurrent lookups.
type Sequence struct {
	shares  []share // sorted by name
	weights []int64 // flexible weights, by position in shares
	counts  []int64 // seats held, by position in shares
	dealt   int64
	stage   stage
	seq     *sequencer // the quota sequence of the current stage (segment)
	// absorb is, per share, how many picks of the flexible sequence still go
	// to seats the share already holds for its minReplicas.
	absorb []int64
	// active is, per share, whether it still takes flexible seats: positive
	// weight and below maxReplicas.
	active []bool
	demand int64 // Σ ints and minReplicas
}

// NewSequence validates shares and returns their Sequence before its first
// seat. Errors name the share (by input index) and field: empty, repeated or
// unnamed shares, negative counts, bad percentages or a sum over 100%, and
// ints or minReplicas outside [minReplicas, maxReplicas].
func NewSequence(shares []Share) (*Sequence, error) {
	return newSequence("shares", shares)
}

// newSequence is NewSequence with errors naming the shares field (e.g.
// "spec.domains").
func newSequence(field string, shares []Share) (*Sequence, error) {
	ss, err := parse(field, shares)
	if err != nil {
		return nil, err
	}
	s := &Sequence{
		shares:  ss,
		weights: flexibleWeights(ss),
		counts:  make([]int64, len(ss)),
		absorb:  make([]int64, len(ss)),
		active:  make([]bool, len(ss)),
	}
	demands := make([]int64, len(ss))
	for i, sh := range ss {
		demands[i] = sh.lo
		s.demand += sh.lo
		s.absorb[i] = sh.lo
		s.active[i] = s.weights[i] > 0 && sh.lo < sh.hi
	}
	if s.demand > 0 {
		if s.seq, err = newSequencer(demands); err != nil {
			return nil, err
		}
		return s, nil
	}
	return s, s.startFlexible()
}

// Len returns the number of shares.
func (s *Sequence) Len() int { return len(s.shares) }

// Name returns the name of share i, where i is a value Next returns; shares
// are indexed in name order.
func (s *Sequence) Name(i int) string { return s.shares[i].name }

// InputIndex returns the position, in the slice given to NewSequence, of
// share i (in name order).
func (s *Sequence) InputIndex(i int) int { return s.shares[i].index }

// Next deals the next seat and returns the index, in name order, of the
// share that receives it; the three stages are in the package documentation.
func (s *Sequence) Next() int {
	for {
		switch s.stage {
		case stageDemand:
			// deal moves to stage 2 on the seat that completes the demands.
			return s.deal(s.seq.Next())
		case stageFlexible:
			i := s.seq.Next()
			if s.absorb[i] > 0 {
				s.absorb[i]--
				continue
			}
			s.deal(i)
			if s.counts[i] >= s.shares[i].hi {
				s.active[i] = false
				_ = s.startFlexible()
			}
			return i
		case stageOverflow:
			return s.deal(s.seq.Next())
		}
	}
}

// deal gives a seat to share i, moves to stage 2 when it completes the
// demands, and returns i.
func (s *Sequence) deal(i int) int {
	s.counts[i]++
	s.dealt++
	if s.stage == stageDemand && s.dealt == s.demand {
		_ = s.startFlexible()
	}
	return i
}

// startFlexible starts a segment of stage 2 over the shares still active,
// or stage 3 when none is. The weights it passes are never all zero, so it
// never fails; the error is kept for safety.
func (s *Sequence) startFlexible() error {
	weights := make([]int64, len(s.shares))
	any := false
	for i := range s.shares {
		if s.active[i] {
			weights[i], any = s.weights[i], true
		}
	}
	if !any {
		return s.startOverflow()
	}
	s.stage = stageFlexible
	var err error
	s.seq, err = newSequencer(weights)
	return err
}

// startOverflow starts stage 3.
func (s *Sequence) startOverflow() error {
	weights := slices.Clone(s.weights)
	if !slices.ContainsFunc(weights, func(w int64) bool { return w > 0 }) {
		for i := range weights {
			weights[i] = 1
		}
	}
	s.stage = stageOverflow
	var err error
	s.seq, err = newSequencer(weights)
	return err
}

// parse validates shares and returns them sorted by name; errors name the
// shares field as field.
func parse(field string, shares []Share) ([]share, error) {
	var errs []error
	if len(shares) == 0 {
		errs = append(errs, fmt.Errorf("%s: must not be empty", field))
	}
	ss := make([]share, len(shares))
	all := make([]string, len(shares))
	for i, in := range shares {
		all[i] = in.Name
	}
	nameErrs := names.Check(field, all)
	var percents int64
	for i, in := range shares {
		path := fmt.Sprintf("%s[%d]", field, i)
		s := share{name: in.Name, index: i, kind: kindRest, hi: math.MaxInt64}
		if nameErrs[i] != nil {
			errs = append(errs, nameErrs[i])
		}
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
		errs = append(errs, fmt.Errorf("%s: percentages sum to %d%%, must not exceed 100%%", field, percents))
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
