package manifestwork

import "fmt"

// Validate checks what the work agent fed back of one StatefulSet before
// the hub uses it: status is reported by the member cluster, and a member
// that is wrong or compromised must not inflate a FleetSet's status, its
// scale subresource or a rollout's progress. block is the most instances the
// StatefulSet can ever have (its subset's ordinal block, in replicas). It
// returns nil, or an error naming the first value that cannot be true, and
// the hub then ignores the whole report:
//   - no count was reported outside int32 (Malformed);
//   - every count is ≥ 0 and ≤ block;
//   - readyReplicas ≥ availableReplicas (an instance is available only once
//     ready, as the StatefulSet controller counts).
//
// A report that passes is still bounded by the subset's replicas (Clamp)
// before it is summed, and a rollout step uses it only when it is of the
// delivered spec (Current).
func (f StatefulSetFeedback) Validate(block int32) error {
	if f.Malformed != "" {
		return fmt.Errorf("%s", f.Malformed)
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
		case c.v > block:
			return fmt.Errorf("%s %d exceeds the subset's ordinal block of %d", c.name, c.v, block)
		}
	}
	if f.AvailableReplicas > f.ReadyReplicas {
		return fmt.Errorf("%s %d exceeds %s %d", FeedbackAvailableReplicas, f.AvailableReplicas, FeedbackReadyReplicas, f.ReadyReplicas)
	}
	if f.Generation < 0 || f.ObservedGeneration < 0 {
		return fmt.Errorf("negative generation %d or observedGeneration %d", f.Generation, f.ObservedGeneration)
	}
	return nil
}

// Clamp returns f with its ready, available and updated counts cut to
// desired, the subset's replicas: a subset never counts more ready,
// available or updated instances than it is given (while it scales down,
// the extra instances being removed are not counted).
// replicas (pods that exist) is left as reported: it may exceed delivered
// while a scale-down removes pods, and Validate bounds it by the block.
func (f StatefulSetFeedback) Clamp(desired int32) StatefulSetFeedback {
	f.ReadyReplicas = min(f.ReadyReplicas, desired)
	f.AvailableReplicas = min(f.AvailableReplicas, desired)
	f.UpdatedReplicas = min(f.UpdatedReplicas, desired)
	return f
}
