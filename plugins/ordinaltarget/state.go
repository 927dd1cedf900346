package ordinaltarget

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// preFilterStateKey is the cycle-state key under which SubsetPlacement's
// PreFilter stores the pod's Target, once per cycle, so that the cycle's
// later extension points (SubsetPlacement's Filter, OrdinalSpread's
// PreScore) do not resolve the placement again. It is apart from each
// plugin's own "PreFilter"+Name key.
const preFilterStateKey fwk.StateKey = "PreFilterOrdinalTarget"

// preFilterState is the cycle-state entry under preFilterStateKey.
type preFilterState struct {
	target *Target
}

// Clone returns the same state: a Target is read-only once built.
func (s *preFilterState) Clone() fwk.StateData { return s }

// WritePreFilterState stores t, the pod's Target, in the cycle state; the
// PreFilter that resolved it calls it once per cycle.
func WritePreFilterState(cycleState fwk.CycleState, t *Target) {
	cycleState.Write(preFilterStateKey, &preFilterState{target: t})
}

// GetPreFilterState returns the Target stored in the cycle state by
// WritePreFilterState. ok is false when there is none (SubsetPlacement is
// not in the profile, or its PreFilter skipped the pod); err is set when
// another type is stored under the key.
func GetPreFilterState(cycleState fwk.CycleState) (t *Target, ok bool, err error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		return nil, false, nil // fwk.ErrNotFound is the only error Read returns
	}
	s, isTarget := c.(*preFilterState)
	if !isTarget {
		return nil, false, fmt.Errorf("cycle state %q holds %T, want the fleetset target", preFilterStateKey, c)
	}
	return s.target, true, nil
}
