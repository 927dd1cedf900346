package manifestwork

import "fmt"

// Validate checks what the work agent fed back of one StatefulSet before
// the hub uses it: status is reported by the member cluster, and a member
// that is wrong or compromised must not inflate a FleetSet's status, its
// scale subresource or a rollout's progress. desired is the StatefulSet's
// spec.replicas as the hub delivered it. It returns nil, or an error naming
// the first value out of bounds:
//   - generation and observedGeneration are reported, ≥ 1, and equal (the
//     status is of the delivered spec; a stale one is not used);
//   - every count is ≥ 0 and ≤ desired (so ≤ int32);
//   - readyReplicas ≥ availableReplicas (an instance is available only once
//     ready, as the StatefulSet controller counts).
//   - no count was reported outside int32 (Malformed).
func (f StatefulSetFeedback) Validate(desired int32) error {
	if f.Malformed != "" {
		return fmt.Errorf("%s", f.Malformed)
	}
	if f.Generation <= 0 || f.ObservedGeneration <= 0 {
		return fmt.Errorf("generation %d / observedGeneration %d not reported", f.Generation, f.ObservedGeneration)
	}
	if f.ObservedGeneration != f.Generation {
		return fmt.Errorf("observedGeneration %d is not generation %d: the status is of an older spec", f.ObservedGeneration, f.Generation)
	}
	for _, c := range []struct {
		name string
		v    int32
	}{
		{FeedbackReplicas, f.Replicas},
		{FeedbackReadyReplicas, f.ReadyReplicas},
		{FeedbackUpdatedReplicas, f.UpdatedReplicas},
		{FeedbackAvailableReplicas, f.AvailableReplicas},
	} {
		switch {
		case c.v < 0:
			return fmt.Errorf("%s %d is negative", c.name, c.v)
		case c.v > desired:
			return fmt.Errorf("%s %d exceeds the delivered replicas %d", c.name, c.v, desired)
		}
	}
	if f.AvailableReplicas > f.ReadyReplicas {
		return fmt.Errorf("%s %d exceeds %s %d", FeedbackAvailableReplicas, f.AvailableReplicas, FeedbackReadyReplicas, f.ReadyReplicas)
	}
	return nil
}
