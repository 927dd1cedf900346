package fence

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// defaultTerminationGrace is the API's default terminationGracePeriodSeconds.
const defaultTerminationGrace = 30

// EnforcedSeconds returns the longest time, in seconds, this member would
// take from the start of a fence until the last pod it fences has stopped:
// over the placements with spec.fencing, their graceSeconds plus the
// largest terminationGracePeriodSeconds of the pods the fence would delete
// (their own, which the kubelet honours: old revisions and subset patches
// included; the API default, 30, when unset or when none runs yet). It returns -1 when no placement has fencing,
// and the placements' list error. The heartbeat reports it
// (v1alpha1.AnnotationMemberFenceSeconds), and the hub waits for at least
// that long: the member enforces what it has, not the hub's spec of today.
func (f *Fencer) EnforcedSeconds(ctx context.Context) (int64, error) {
	var list fleetv1.SubsetPlacementList
	if err := f.Placements.List(ctx, &list); err != nil {
		return -1, fmt.Errorf("listing SubsetPlacements: %w", err)
	}
	out := int64(-1)
	for i := range list.Items {
		sp := &list.Items[i]
		if sp.Spec.Fencing == nil {
			continue
		}
		term := int64(defaultTerminationGrace)
		pods, err := f.Pods.Pods(sp.Namespace).List(labels.Everything())
		if err != nil {
			return -1, fmt.Errorf("listing pods in %s: %w", sp.Namespace, err)
		}
		seen := false
		for _, p := range pods {
			if !instanceOf(p, sp.Name) {
				continue
			}
			g := int64(defaultTerminationGrace)
			if p.Spec.TerminationGracePeriodSeconds != nil {
				g = *p.Spec.TerminationGracePeriodSeconds
			}
			if !seen || g > term {
				term, seen = g, true
			}
		}
		out = max(out, int64(sp.Spec.Fencing.GraceSeconds)+term)
	}
	return out, nil
}
