package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// TestObserveWorks: each subset's plan carries the FleetSet's work in its
// cluster and its StatefulSet's feedback there, and follows the writes of
// the reconcile (a rewritten work attached anew, a deleted one detached);
// without a plan (invalid spec), feedback is read from the works.
func TestObserveWorks(t *testing.T) {
	fs := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"}}
	east := feedbackWork("east", "east", 3, 3, 3, 3, metav1.ConditionTrue)
	west := feedbackWork("west", "west", 2, 1, 2, 1, metav1.ConditionTrue)
	st := &state{fs: fs, workName: manifestwork.WorkName("db", "mydb"), existingWorks: map[types.NamespacedName]*workv1.ManifestWork{
		client.ObjectKeyFromObject(east): east, client.ObjectKeyFromObject(west): west}}
	st.subsets = []subsetPlan{
		{planned: plan.Subset{Name: "east", Cluster: "east", BlockSize: 1000, Replicas: 3}},
		{planned: plan.Subset{Name: "west", Cluster: "west", BlockSize: 1000, Replicas: 3}},
		{planned: plan.Subset{Name: "north", Cluster: "east", BlockSize: 1000, Replicas: 3}},  // shares east's work, reports nothing
		{planned: plan.Subset{Name: "south", Cluster: "south", BlockSize: 1000, Replicas: 3}}, // no work
	}
	type view struct {
		work  *workv1.ManifestWork
		ready int32 // -1: no feedback
	}
	check := func(when string, want ...view) {
		t.Helper()
		for i, sp := range st.subsets {
			ready := int32(-1)
			if sp.feedback != nil {
				ready = sp.feedback.ReadyReplicas
			}
			if sp.work != want[i].work || ready != want[i].ready {
				t.Errorf("%s: subset %s: work %p, ready %d; want %p, %d", when, sp.planned.Name, sp.work, ready, want[i].work, want[i].ready)
			}
		}
	}
	st.observeWorks()
	check("observed", view{east, 3}, view{west, 1}, view{east, -1}, view{nil, -1})

	rewritten := east.DeepCopy()
	rewritten.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values[1].Value.Integer = ptr.To[int64](2) // ready
	rewritten.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values[3].Value.Integer = ptr.To[int64](2) // available
	st.recordWrites([]*workv1.ManifestWork{rewritten}, []types.NamespacedName{client.ObjectKeyFromObject(west)})
	check("after the writes", view{rewritten, 2}, view{nil, -1}, view{rewritten, -1}, view{nil, -1})

	for _, tc := range []struct {
		subset, cluster string
		want            bool
	}{{"east", "east", true}, {"west", "west", false}, {"north", "east", false}} {
		if got := st.feedbackReported(fleetv1.SubsetStatus{Name: tc.subset, Cluster: tc.cluster}); got != tc.want {
			t.Errorf("planned: feedbackReported(%s) = %v, want %v", tc.subset, got, tc.want)
		}
	}
	unplanned := &state{fs: fs, workName: st.workName, existingWorks: map[types.NamespacedName]*workv1.ManifestWork{client.ObjectKeyFromObject(west): west}}
	for _, tc := range []struct {
		subset, cluster string
		want            bool
	}{{"west", "west", true}, {"east", "west", false}, {"east", "east", false}} {
		if got := unplanned.feedbackReported(fleetv1.SubsetStatus{Name: tc.subset, Cluster: tc.cluster}); got != tc.want {
			t.Errorf("invalid spec: feedbackReported(%s in %s) = %v, want %v", tc.subset, tc.cluster, got, tc.want)
		}
	}
}
