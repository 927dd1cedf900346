package subsetplacement

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// The plugin's part in fencing is a gate: PreFilter asks the member
// component's Gate (member.Gate, answered by package member/fence) whether a
// placement with spec.fencing may be scheduled, and the pods it turned away
// are re-queued when the verdict changes. Deciding, and deleting the pods
// of a fenced member, is the member component's (member/fence's Fencer).

// fence reports whether the member component fences the pod's placement
// now, and why. The pod is recorded for re-queueing before the gate is
// asked: a change seen after the question finds it recorded, and one seen
// before is what the answer reflects, so a fenced pod never waits for an
// event already past.
func (pl *SubsetPlacement) fence(pod *v1.Pod, sp *fleetv1.SubsetPlacement) (string, bool) {
	if pl.gate == nil {
		return "", false
	}
	key := pod.Namespace + "/" + pod.Name
	pl.fencedMu.Lock()
	pl.fenced[key] = pod
	pl.fencedMu.Unlock()
	ok, reason := pl.gate.Allows(sp)
	if ok {
		pl.fencedMu.Lock()
		if pl.fenced[key] == pod {
			delete(pl.fenced, key)
		}
		pl.fencedMu.Unlock()
	}
	return reason, !ok
}

// gateChanged runs when the member component's verdict changes (or a
// placement's fence is lifted): it moves every pod it fenced back to the
// active queue, where PreFilter asks the gate again. This is the plugin's
// re-queueing on fencing, done from the member component rather than
// through EventsToRegister: no cluster event marks the end of a fence.
func (pl *SubsetPlacement) gateChanged(logger klog.Logger) {
	pl.fencedMu.Lock()
	pods := pl.fenced
	if len(pods) == 0 || pl.activator == nil {
		pl.fencedMu.Unlock()
		return // nothing fenced yet: also true at start, before the queue exists
	}
	pl.fenced = map[string]*v1.Pod{}
	pl.fencedMu.Unlock()
	logger.V(4).Info("Fencing verdict changed: re-queueing fenced pods", "pods", len(pods))
	pl.activator.Activate(logger, pods)
}
