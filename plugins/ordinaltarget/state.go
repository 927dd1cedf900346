package ordinaltarget

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// StateKey is the cycle-state key under which SubsetPlacement's PreFilter
// stores the pod's Target, so that the cycle's later extension points
// (SubsetPlacement's Filter, OrdinalSpread's PreScore) do not resolve the
// placement again.
const StateKey fwk.StateKey = "fleetset.io/target"

// targetState is the cycle-state entry under StateKey.
type targetState struct {
	target *Target
}

// Clone returns the same state: a Target is read-only once built.
func (s *targetState) Clone() fwk.StateData { return s }

// WriteState stores t in the cycle state under StateKey.
func WriteState(state fwk.CycleState, t *Target) {
	state.Write(StateKey, &targetState{target: t})
}

// ReadState returns the Target stored in the cycle state by WriteState. ok
// is false when there is none (SubsetPlacement is not in the profile, or its
// PreFilter skipped the pod); err is set when another type is stored under
// StateKey.
func ReadState(state fwk.CycleState) (t *Target, ok bool, err error) {
	c, err := state.Read(StateKey)
	if err != nil {
		return nil, false, nil // fwk.ErrNotFound is the only error Read returns
	}
	s, isTarget := c.(*targetState)
	if !isTarget {
		return nil, false, fmt.Errorf("cycle state %q holds %T, want the fleetset target", StateKey, c)
	}
	return s.target, true, nil
}
