package manifestwork

import (
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
)

// drainWork is a work at generation 3 holding StatefulSet db-east with
// spec.replicas specReplicas, Applied at appliedGen, with the StatefulSet's
// fed-back generation, observedGeneration and status.replicas (no feedback
// when gen is 0).
func drainWork(specReplicas int, appliedGen, gen, observed, replicas int64) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{
		Raw: []byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db-east"},"spec":{"replicas":%d}}`, specReplicas))}}}
	apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "r", ObservedGeneration: appliedGen})
	if gen > 0 {
		v := func(name string, n int64) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(n)}}
		}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: "db-east"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{v(FeedbackReplicas, replicas), v(FeedbackGeneration, gen), v(FeedbackObservedGeneration, observed)}},
		}}
	}
	return w
}

// TestDrained: a failing-back subset's StatefulSet counts as drained only
// when it is held at replicas 0, the work is applied at its generation and
// the member reports, for its current spec, that no pod is left.
func TestDrained(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *workv1.ManifestWork
		sts  string
		want bool
	}{
		{"drained", drainWork(0, 3, 7, 7, 0), "db-east", true},
		{"pods still terminating", drainWork(0, 3, 7, 7, 2), "db-east", false},
		{"status of an older spec", drainWork(0, 3, 7, 6, 0), "db-east", false},
		{"work not applied at its generation", drainWork(0, 2, 7, 7, 0), "db-east", false},
		{"held with replicas 3", drainWork(3, 3, 7, 7, 0), "db-east", false},
		{"no feedback yet", drainWork(0, 3, 0, 0, 0), "db-east", false},
		{"not held", drainWork(0, 3, 7, 7, 0), "db-west", false},
	} {
		if got := Drained(tc.w, tc.sts); got != tc.want {
			t.Errorf("%s: Drained = %v, want %v", tc.name, got, tc.want)
		}
	}
}
