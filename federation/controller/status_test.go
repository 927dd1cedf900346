package controller

import (
	"slices"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// feedbackWork returns the FleetSet db/mydb's work in cluster with the
// StatefulSet of subset reporting replicas, ready, updated and available.
func feedbackWork(cluster, subset string, replicas, ready, updated, available int64, applied metav1.ConditionStatus) *workv1.ManifestWork {
	v := func(name string, n int64) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(n)}}
	}
	w := &workv1.ManifestWork{}
	w.Namespace, w.Name = cluster, manifestwork.WorkName("db", "mydb")
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: manifestwork.StatefulSetName("mydb", subset), Namespace: "db"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			v(manifestwork.FeedbackReplicas, replicas), v(manifestwork.FeedbackReadyReplicas, ready),
			v(manifestwork.FeedbackUpdatedReplicas, updated), v(manifestwork.FeedbackAvailableReplicas, available)}},
	}}
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: applied, Reason: "r", Message: "quota exceeded"}}
	return w
}

// TestFoldStatus checks the status folding table-wise: feedback into
// status.subsets and totals, and the Degraded, Progressing and Ready
// conditions from the plan, the feedback and the problems.
func TestFoldStatus(t *testing.T) {
	fs := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb", Generation: 3},
		Spec: fleetv1.FleetSetSpec{UpdateStrategy: fleetv1.FleetSetUpdateStrategy{Type: fleetv1.ManualUpdateStrategyType}}}
	subsets := []subsetPlan{
		{planned: plan.Subset{Name: "east", Cluster: "east", Replicas: 5}, clusterExists: true, clusterAvailable: true},
		{planned: plan.Subset{Name: "west", Cluster: "west", Replicas: 4, Partition: 1}, clusterExists: true, clusterAvailable: true},
	}
	type cond struct {
		status metav1.ConditionStatus
		reason string
		msg    string // substring
	}
	tests := []struct {
		name                                   string
		works                                  []*workv1.ManifestWork
		problems                               []problem
		wantReplicas, wantReady                int32
		wantDegraded, wantProgress, wantReady2 cond
	}{
		{
			name:         "no feedback yet: waiting",
			wantDegraded: cond{metav1.ConditionFalse, fleetv1.ReasonAsExpected, ""},
			wantProgress: cond{metav1.ConditionTrue, fleetv1.ReasonWaitingForFeedback, "subset east on cluster east"},
			wantReady2:   cond{metav1.ConditionFalse, fleetv1.ReasonReplicasNotReady, "subset east on cluster east: 0/5 ready"},
		},
		{
			name:         "all reported and ready: complete and ready",
			works:        []*workv1.ManifestWork{feedbackWork("east", "east", 5, 5, 5, 5, metav1.ConditionTrue), feedbackWork("west", "west", 4, 4, 3, 4, metav1.ConditionTrue)},
			wantReplicas: 9, wantReady: 9,
			wantDegraded: cond{metav1.ConditionFalse, fleetv1.ReasonAsExpected, ""},
			wantProgress: cond{metav1.ConditionFalse, fleetv1.ReasonComplete, ""},
			wantReady2:   cond{metav1.ConditionTrue, fleetv1.ReasonAllReplicasReady, ""},
		},
		{
			name:         "west behind its partition: rolling out, not ready",
			works:        []*workv1.ManifestWork{feedbackWork("east", "east", 5, 5, 5, 5, metav1.ConditionTrue), feedbackWork("west", "west", 4, 2, 1, 2, metav1.ConditionTrue)},
			wantReplicas: 9, wantReady: 7,
			wantDegraded: cond{metav1.ConditionFalse, fleetv1.ReasonAsExpected, ""},
			wantProgress: cond{metav1.ConditionTrue, fleetv1.ReasonRollingOut, "subset west on cluster west: 4/4 replicas, 1/3 updated"},
			wantReady2:   cond{metav1.ConditionFalse, fleetv1.ReasonReplicasNotReady, "subset west on cluster west: 2/4 ready"},
		},
		{
			name:         "work not applied and a cluster unavailable: ApplyFailed first, both named",
			works:        []*workv1.ManifestWork{feedbackWork("east", "east", 5, 5, 5, 5, metav1.ConditionFalse), feedbackWork("west", "west", 4, 4, 3, 4, metav1.ConditionTrue)},
			problems:     []problem{{Reason: fleetv1.ReasonClusterUnavailable, Subset: "west", Cluster: "west", Message: "ManagedCluster is not Available"}},
			wantReplicas: 9, wantReady: 9,
			wantDegraded: cond{metav1.ConditionTrue, fleetv1.ReasonApplyFailed, "subset east on cluster east: work agent reports ManifestWork not applied: r: quota exceeded; subset west on cluster west: ManagedCluster is not Available"},
			wantProgress: cond{metav1.ConditionFalse, fleetv1.ReasonComplete, ""},
			wantReady2:   cond{metav1.ConditionFalse, fleetv1.ReasonDegraded, "see condition Degraded"},
		},
		{
			name:         "a negative count fed back: ignored, not summed, Degraded InvalidFeedback",
			works:        []*workv1.ManifestWork{feedbackWork("east", "east", 5, -3, 5, -3, metav1.ConditionTrue), feedbackWork("west", "west", 4, 4, 3, 4, metav1.ConditionTrue)},
			wantReplicas: 4, wantReady: 4,
			wantDegraded: cond{metav1.ConditionTrue, fleetv1.ReasonInvalidFeedback, "subset east on cluster east: status fed back for StatefulSet mydb-east ignored: readyReplicas -3 is negative"},
			wantProgress: cond{metav1.ConditionTrue, fleetv1.ReasonWaitingForFeedback, "subset east on cluster east"},
			wantReady2:   cond{metav1.ConditionFalse, fleetv1.ReasonDegraded, "see condition Degraded"},
		},
		{
			name:         "a count past int32 (cut to 5 it would look ready): ignored",
			works:        []*workv1.ManifestWork{feedbackWork("east", "east", 5, 1<<32+5, 5, 1<<32+5, metav1.ConditionTrue), feedbackWork("west", "west", 4, 4, 3, 4, metav1.ConditionTrue)},
			wantReplicas: 4, wantReady: 4,
			wantDegraded: cond{metav1.ConditionTrue, fleetv1.ReasonInvalidFeedback, "Replicas 4294967301 is outside int32"},
			wantProgress: cond{metav1.ConditionTrue, fleetv1.ReasonWaitingForFeedback, "subset east on cluster east"},
			wantReady2:   cond{metav1.ConditionFalse, fleetv1.ReasonDegraded, "see condition Degraded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &state{fs: fs, workName: manifestwork.WorkName(fs.Namespace, fs.Name), subsets: slices.Clone(subsets), problems: tt.problems,
				existingWorks: map[types.NamespacedName]*workv1.ManifestWork{}}
			for _, w := range tt.works {
				st.existingWorks[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}] = w
			}
			st.observeWorks()
			status := &fleetv1.FleetSetStatus{}
			foldSubsets(st, status)
			setConditions(st, status)
			if status.Replicas != tt.wantReplicas || status.ReadyReplicas != tt.wantReady || len(status.Subsets) != 2 {
				t.Errorf("replicas %d ready %d subsets %d, want %d, %d, 2", status.Replicas, status.ReadyReplicas, len(status.Subsets), tt.wantReplicas, tt.wantReady)
			}
			for typ, want := range map[string]cond{fleetv1.ConditionDegraded: tt.wantDegraded, fleetv1.ConditionProgressing: tt.wantProgress, fleetv1.ConditionReady: tt.wantReady2} {
				c := apimeta.FindStatusCondition(status.Conditions, typ)
				if c == nil || c.Status != want.status || c.Reason != want.reason || !strings.Contains(c.Message, want.msg) || c.ObservedGeneration != 3 {
					t.Errorf("%s = %+v, want %s/%s containing %q at generation 3", typ, c, want.status, want.reason, want.msg)
				}
			}
		})
	}
}

// TestProblemEvents: a lasting Degraded is reported once, a changed one again.
func TestProblemEvents(t *testing.T) {
	degraded := func(msg string) *fleetv1.FleetSetStatus {
		return &fleetv1.FleetSetStatus{Conditions: []metav1.Condition{{Type: fleetv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: fleetv1.ReasonClusterUnavailable, Message: msg}}}
	}
	if got := problemEvents(&fleetv1.FleetSetStatus{}, degraded("a")); len(got) != 1 {
		t.Errorf("new Degraded: %d events, want 1", len(got))
	}
	if got := problemEvents(degraded("a"), degraded("a")); len(got) != 0 {
		t.Errorf("unchanged Degraded: %d events, want 0", len(got))
	}
	if got := problemEvents(degraded("a"), degraded("b")); len(got) != 1 {
		t.Errorf("changed Degraded: %d events, want 1", len(got))
	}
}
