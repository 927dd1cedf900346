// Package ordinals assigns each subset of a FleetSet its block of
// fleet-unique ordinals.
//
// # Rule
//
// With block size B (spec.topology.ordinalBlockSize, default 1000), the
// ordinals are cut into blocks [s·B, (s+1)·B), s = 0, 1, 2, ... (slots). Each
// subset owns one slot; its StatefulSet gets spec.ordinals.start = s·B, so its
// instances hold ordinals s·B, s·B+1, ... and the subset never holds more than
// B replicas. A slot is assigned once and is sticky: it is recorded in
// FleetSet status.subsets[].ordinalStart and kept while the subset exists, so
// scaling any subset, adding one or removing another never renumbers an
// instance. A new subset takes the lowest free slot (new subsets in spec
// order); a removed subset frees its slot for later subsets.
//
// Assign is pure and deterministic.
package ordinals

import (
	"fmt"
	"math"

	"github.com/fleetset/fleetset/internal/names"
)

// Subset is one subset to place: its name and the ordinalStart recorded for it
// earlier, if any.
type Subset struct {
	// Name of the subset; non-empty and unique.
	Name string
	// Previous is the ordinalStart the subset held before (from FleetSet
	// status), or nil for a new subset.
	Previous *int32
}

// Block is the ordinal block assigned to one subset.
type Block struct {
	// Name of the subset.
	Name string
	// Start is the first ordinal of the block, a multiple of the block size.
	Start int32
	// Reassigned is true when the subset had a Previous start that could not
	// be kept (not a multiple of the block size, beyond the ordinal range, or
	// already taken by a subset listed earlier) and got a new block.
	Reassigned bool
}

// MaxOrdinal is the largest ordinal a block may hold (StatefulSet ordinals are
// int32).
const MaxOrdinal = math.MaxInt32

// Assign returns one block per subset, in input order, for blocks of
// blockSize ordinals.
//
// Subsets with a Previous start keep it when it is a multiple of blockSize
// whose block fits in [0, MaxOrdinal] and no earlier subset kept the same
// start; the others take the lowest free slots in input order.
//
// It returns an error if blockSize is not positive, a name is empty or
// repeated, or the ordinal range has no free block left.
func Assign(blockSize int32, subsets []Subset) ([]Block, error) {
	if blockSize <= 0 {
		return nil, fmt.Errorf("blockSize: must be positive, got %d", blockSize)
	}
	maxSlot := int64(MaxOrdinal)/int64(blockSize) - 1 // slot s holds ordinals up to (s+1)·B−1 ≤ MaxOrdinal
	taken := make(map[int64]bool, len(subsets))
	all := make([]string, len(subsets))
	for i, s := range subsets {
		all[i] = s.Name
	}
	if err := names.First("subsets", all); err != nil {
		return nil, err
	}
	out := make([]Block, len(subsets))
	for i, s := range subsets {
		out[i].Name = s.Name
		out[i].Start = -1
		if s.Previous == nil {
			continue
		}
		p := int64(*s.Previous)
		slot := p / int64(blockSize)
		if p >= 0 && p%int64(blockSize) == 0 && slot <= maxSlot && !taken[slot] {
			taken[slot] = true
			out[i].Start = int32(p)
			continue
		}
		out[i].Reassigned = true
	}
	next := int64(0)
	for i := range out {
		if out[i].Start >= 0 {
			continue
		}
		for taken[next] {
			next++
		}
		if next > maxSlot {
			return nil, fmt.Errorf("subsets[%d] (%s): no free ordinal block of %d below %d", i, out[i].Name, blockSize, int64(MaxOrdinal))
		}
		taken[next] = true
		out[i].Start = int32(next * int64(blockSize))
	}
	return out, nil
}

// Clamp returns replicas limited to the block size, and whether it was cut.
func Clamp(replicas, blockSize int32) (int32, bool) {
	if replicas > blockSize {
		return blockSize, true
	}
	return replicas, false
}
