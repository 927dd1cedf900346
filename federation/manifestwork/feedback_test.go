package manifestwork

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// TestAppliedConditions: what the work agent's Applied condition says of a
// work at generation 2 — applied at its generation, applied at an older
// one, failed, or not reported yet.
func TestAppliedConditions(t *testing.T) {
	applied := func(status metav1.ConditionStatus, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: workv1.WorkApplied, Status: status, ObservedGeneration: gen, Reason: "r", Message: "m"}}
	}
	for _, tc := range []struct {
		name           string
		conditions     []metav1.Condition
		wantApplied    bool
		wantNotApplied bool
	}{
		{"no report", nil, false, false},
		{"only Available reported", []metav1.Condition{{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 2}}, false, false},
		{"Applied at the generation", applied(metav1.ConditionTrue, 2), true, false},
		{"Applied at an older generation", applied(metav1.ConditionTrue, 1), false, false},
		{"Applied False", applied(metav1.ConditionFalse, 2), false, true},
		{"Applied False at an older generation", applied(metav1.ConditionFalse, 1), false, true},
		{"Applied Unknown", applied(metav1.ConditionUnknown, 2), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: workv1.ManifestWorkStatus{Conditions: tc.conditions}}
			if got := AppliedAtGeneration(w); got != tc.wantApplied {
				t.Errorf("AppliedAtGeneration = %v, want %v", got, tc.wantApplied)
			}
			c := NotApplied(w)
			if (c != nil) != tc.wantNotApplied {
				t.Fatalf("NotApplied = %+v, want a condition: %v", c, tc.wantNotApplied)
			}
			if c != nil && (c.Type != workv1.WorkApplied || c.Reason != "r" || c.Message != "m") {
				t.Errorf("NotApplied = %+v, want the Applied condition with its reason and message", c)
			}
		})
	}
}
