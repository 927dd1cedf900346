package manifestwork

import (
	"math"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

// feedbackWork is a ManifestWork whose work agent reported values for the
// StatefulSet "db-east".
func feedbackWork(vals map[string]int64) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	var fv []workv1.FeedbackValue
	for k, v := range vals {
		fv = append(fv, workv1.FeedbackValue{Name: k, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: "db-east"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: fv},
	}}
	return w
}

func TestFeedbackValidate(t *testing.T) {
	good := map[string]int64{FeedbackReplicas: 3, FeedbackReadyReplicas: 3, FeedbackUpdatedReplicas: 2, FeedbackAvailableReplicas: 3, FeedbackGeneration: 4, FeedbackObservedGeneration: 4}
	with := func(k string, v int64) map[string]int64 {
		m := map[string]int64{}
		for kk, vv := range good {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	cases := []struct {
		name string
		vals map[string]int64
		want string // substring of the error; "" valid
	}{
		{"valid", good, ""},
		{"stale generation is valid (Current says it is stale)", with(FeedbackObservedGeneration, 3), ""},
		{"negative replicas", with(FeedbackReplicas, -1), "replicas -1 is negative"},
		{"negative available", with(FeedbackAvailableReplicas, -5), "availableReplicas -5 is negative"},
		{"over the ordinal block", with(FeedbackReadyReplicas, 1001), "readyReplicas 1001 exceeds the subset's ordinal block of 1000"},
		{"over int32", with(FeedbackAvailableReplicas, math.MaxInt32+2), "availableReplicas 2147483649 is outside int32"},
		{"cut to int32 would look small", with(FeedbackUpdatedReplicas, 1<<32+1), "outside int32"},
		{"below int32", with(FeedbackReplicas, math.MinInt32-1), "outside int32"},
		{"available over ready", with(FeedbackReadyReplicas, 1), "availableReplicas 3 exceeds readyReplicas 1"},
		{"negative generation", with(FeedbackGeneration, -2), "negative generation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := Feedback(feedbackWork(tc.vals))["db-east"]
			if !ok {
				t.Fatal("no feedback decoded")
			}
			err := f.Validate(1000)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// FuzzFeedbackValidate feeds arbitrary int64 values through the decoder:
// whatever Validate accepts and Clamp bounds lies within [0, block] for
// every count and within [0, delivered] for ready, available and updated,
// with ready ≥ available, so no sum or rollout step can be inflated by a
// member.
func FuzzFeedbackValidate(f *testing.F) {
	f.Add(int64(3), int64(3), int64(2), int64(3), int64(4), int64(4), int32(3), int32(1000))
	f.Add(int64(-1), int64(1<<40), int64(2), int64(3), int64(1), int64(1), int32(5), int32(10))
	f.Fuzz(func(t *testing.T, replicas, ready, updated, available, gen, observed int64, delivered, block int32) {
		if delivered < 0 || block < 1 || delivered > block {
			return
		}
		vals := map[string]int64{FeedbackReplicas: replicas, FeedbackReadyReplicas: ready, FeedbackUpdatedReplicas: updated,
			FeedbackAvailableReplicas: available, FeedbackGeneration: gen, FeedbackObservedGeneration: observed}
		fb := Feedback(feedbackWork(vals))["db-east"]
		if fb.Validate(block) != nil {
			return
		}
		for name, v := range map[string]int64{FeedbackReplicas: replicas, FeedbackReadyReplicas: ready, FeedbackUpdatedReplicas: updated, FeedbackAvailableReplicas: available} {
			if v < 0 || v > int64(block) {
				t.Fatalf("Validate accepted %s %d with block %d", name, v, block)
			}
		}
		if available > ready {
			t.Fatalf("Validate accepted available %d > ready %d", available, ready)
		}
		c := fb.Clamp(delivered)
		if c.ReadyReplicas > delivered || c.AvailableReplicas > delivered || c.UpdatedReplicas > delivered || c.AvailableReplicas > c.ReadyReplicas {
			t.Fatalf("Clamp(%d) = %+v", delivered, c)
		}
	})
}

func TestApplyFailures(t *testing.T) {
	w := &workv1.ManifestWork{}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "Namespace", Name: "db"}, Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "Service", Namespace: "db", Name: "mydb"}, Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse, Message: "refused"}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "StatefulSet", Namespace: "db", Name: "mydb-east"}},
	}
	if got := ApplyFailures(w); len(got) != 1 || got[0] != "Service db/mydb: refused" {
		t.Errorf("ApplyFailures = %q, want [Service db/mydb: refused]", got)
	}
}
