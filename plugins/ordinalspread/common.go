package ordinalspread

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// setMatcher selects the pods counted as "of the same set" as a pod: in its
// namespace, with the same fleetset.io/set label or, without one, the same
// fleetset.io/placement label, and not terminating.
type setMatcher struct {
	namespace, key, value string
}

// newSetMatcher returns the setMatcher of pod's set.
func newSetMatcher(pod *v1.Pod) setMatcher {
	m := setMatcher{namespace: pod.Namespace, key: fleetv1.LabelPlacement, value: pod.Labels[fleetv1.LabelPlacement]}
	if v, ok := pod.Labels[fleetv1.LabelSet]; ok {
		m.key, m.value = fleetv1.LabelSet, v
	}
	return m
}

// count returns how many pods of the set the node holds.
func (m setMatcher) count(nodeInfo fwk.NodeInfo) int64 {
	var n int64
	for _, pi := range nodeInfo.GetPods() {
		p := pi.GetPod()
		if p.Namespace == m.namespace && p.DeletionTimestamp == nil {
			if v, ok := p.Labels[m.key]; ok && v == m.value {
				n++
			}
		}
	}
	return n
}
