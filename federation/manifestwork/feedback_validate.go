package manifestwork

import "fmt"

// Validate checks a member's report before the hub uses it, so a wrong or
// compromised member cannot inflate status, scale or rollout progress: no
// count outside int32, every count in [0, block] (block: the subset's ordinal
// block), readyReplicas ≥ availableReplicas. The error names the first
// impossible value; the hub then ignores the whole report.
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
// desired, the subset's replicas (a scale-down's leaving pods do not count);
// replicas, the pods that exist, stays as reported.
func (f StatefulSetFeedback) Clamp(desired int32) StatefulSetFeedback {
	f.ReadyReplicas = min(f.ReadyReplicas, desired)
	f.AvailableReplicas = min(f.AvailableReplicas, desired)
	f.UpdatedReplicas = min(f.UpdatedReplicas, desired)
	return f
}
