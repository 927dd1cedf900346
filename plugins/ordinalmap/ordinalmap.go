// Package ordinalmap maps the ordinals of a StatefulSet to failure domains so
// that the spread over the domains is balanced at every size.
//
// Ordinals are taken as offsets from the set's first ordinal (pod-index −
// ordinalStart = 0, 1, 2, ...). Domains carry integer weights, normally their
// replica counts (callers without counts pass 1 for every domain). With
// W = Σw, the map guarantees, for every k ≥ 1, that the offsets [0, k) give
// domain i at least ⌊k·w_i/W⌋ and at most ⌈k·w_i/W⌉ instances (within
// quota), and exactly w_i at k = W. Hence the spread stays balanced at every
// size, removing the highest ordinals (scale-down) keeps it balanced, and an
// ordinal always maps to the same domain, so a re-created pod returns to the
// domain that holds its volume.
//
// The sequence is built by earliest-due-date sequencing with quota windows,
// after Steiner and Yeomans, "Level schedules for mixed-model, just-in-time
// processes", Management Science 39(6), 1993: at step k a domain is eligible
// for its next instance only if that keeps it within its upper quota
// ⌈k·w_i/W⌉, and among eligible domains the one whose next instance is due
// earliest (seat j of domain i is due by step ⌈j·W/w_i⌉, its lower quota)
// gets it. Equal deadlines go to the domain furthest below its exact share (largest
// remainder), then to the larger weight, then to the domain listed first.
// The counts of every prefix form a house-monotone, within-quota
// apportionment, the guarantees of Balinski and Young's quota method
// ("The quota method of apportionment", American Mathematical Monthly 82(7),
// 1975). Sequencer exposes the same engine for other apportionments, such as
// the hub's division of replicas.
//
// The sequence repeats with period W/gcd(w); Map precomputes one period, so
// lookups cost O(1).
package ordinalmap

import (
	"errors"
	"fmt"
)

// MaxPeriod is the largest period, in ordinals (the sum of the weights
// divided by their gcd), that New accepts; one period is held in memory.
const MaxPeriod = 1 << 20

// Domain is one failure domain and its weight.
type Domain struct {
	// Name identifies the domain, e.g. a zone; non-empty and unique in a Map.
	Name string
	// Weight is the domain's share, in replicas (≥ 0); a domain of weight 0
	// never receives an ordinal.
	Weight int64
}

// Map is an immutable ordinal → domain map. It is safe for concurrent use.
type Map struct {
	names []string
	// perPeriod[i] is how many offsets of one period map to domain i.
	perPeriod []int64
	// period[o] is the index of the domain of offset o, for o in [0, W).
	period []int32
}

// New returns the map for domains, in which ties between equal claims go to
// the domain listed first: reordering domains may change the map.
//
// It returns an error if domains is empty, a name is empty or repeated, a
// weight is negative, all weights are zero, or the period exceeds MaxPeriod.
func New(domains []Domain) (*Map, error) {
	if len(domains) == 0 {
		return nil, errors.New("domains: must not be empty")
	}
	names := make([]string, len(domains))
	weights := make([]int64, len(domains))
	seen := make(map[string]bool, len(domains))
	for i, d := range domains {
		switch {
		case d.Name == "":
			return nil, fmt.Errorf("domains[%d].name: must not be empty", i)
		case seen[d.Name]:
			return nil, fmt.Errorf("domains[%d].name: duplicate name %q", i, d.Name)
		case d.Weight < 0:
			return nil, fmt.Errorf("domains[%d].weight: must not be negative, got %d", i, d.Weight)
		}
		seen[d.Name] = true
		names[i], weights[i] = d.Name, d.Weight
	}
	seq, err := NewSequencer(weights)
	if err != nil {
		return nil, fmt.Errorf("domains: %w", err)
	}
	if seq.Period() > MaxPeriod {
		return nil, fmt.Errorf("domains: period of %d ordinals (sum of weights / their gcd) exceeds the maximum of %d", seq.Period(), MaxPeriod)
	}
	m := &Map{
		names:     names,
		perPeriod: make([]int64, len(domains)),
		period:    make([]int32, seq.Period()),
	}
	for o := range m.period {
		i := seq.Next()
		m.period[o] = int32(i)
		m.perPeriod[i]++
	}
	return m, nil
}

// IndexOf returns the index, in the domains given to New, of the domain of
// ordinal offset (pod-index − ordinalStart). It returns an error if offset is
// negative.
func (m *Map) IndexOf(offset int64) (int, error) {
	if offset < 0 {
		return 0, fmt.Errorf("offset: must not be negative, got %d", offset)
	}
	return int(m.period[offset%int64(len(m.period))]), nil
}

// DomainOf returns the name of the domain of ordinal offset (pod-index −
// ordinalStart). It returns an error if offset is negative.
func (m *Map) DomainOf(offset int64) (string, error) {
	i, err := m.IndexOf(offset)
	if err != nil {
		return "", err
	}
	return m.names[i], nil
}

// Counts returns, in the order of the domains given to New, how many of the
// ordinal offsets [0, n) each domain holds: the spread of a set of n
// replicas. n ≤ 0 gives all zeros. It costs O(len(domains) + n mod period).
func (m *Map) Counts(n int64) []int64 {
	counts := make([]int64, len(m.names))
	if n <= 0 {
		return counts
	}
	periods, rest := n/int64(len(m.period)), n%int64(len(m.period))
	for i, c := range m.perPeriod {
		counts[i] = periods * c
	}
	for _, i := range m.period[:rest] {
		counts[i]++
	}
	return counts
}
