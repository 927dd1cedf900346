package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// TestWorkEventsSurviveStatusConflict: the ManifestWorks written in a
// reconcile get their event, one WorksApplied naming every cluster, even
// when the status write that follows fails with a conflict (events used to
// wait for the status write and were lost).
func TestWorkEventsSurviveStatusConflict(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	fs, objs := eastWestFleet(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(fs).
		WithIndex(&fleetv1.FleetSet{}, ClusterIndex, clustersOf).
		WithIndex(&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				return apierrors.NewConflict(schema.GroupResource{Group: "fleetset.io", Resource: "fleetsets"}, obj.GetName(), nil)
			},
		}).Build()
	rec := record.NewFakeRecorder(20)
	r := &FleetSetReconciler{Client: c, Recorder: rec}
	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)})
	if !apierrors.IsConflict(err) {
		t.Fatalf("Reconcile error = %v, want the status conflict", err)
	}
	close(rec.Events)
	var applied []string
	for e := range rec.Events {
		if strings.Contains(e, EventWorksApplied) {
			applied = append(applied, e)
		}
	}
	want := "Normal " + EventWorksApplied + " ManifestWork db.mydb: created in 2 clusters (east, west)"
	if len(applied) != 1 || applied[0] != want {
		t.Errorf("%s events = %q, want one: %q", EventWorksApplied, applied, want)
	}
	var works workv1.ManifestWorkList
	if err := c.List(context.Background(), &works, client.HasLabels{fleetv1.LabelOwnerName}); err != nil || len(works.Items) != 2 {
		t.Errorf("works = %d (%v), want 2 written", len(works.Items), err)
	}
}

// TestUpdatedWorkKeepsItsFeedback: a reconcile that rewrites a ManifestWork
// (here: a scale) still folds the work's statusFeedback into the FleetSet's
// status in the same reconcile, instead of losing it with the old object.
func TestUpdatedWorkKeepsItsFeedback(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{
			Replicas: 3,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}},
			Topology:       fleetv1.FleetTopology{Subsets: []fleetv1.Subset{{Name: "east", Cluster: "east"}}},
			UpdateStrategy: fleetv1.FleetSetUpdateStrategy{Type: fleetv1.ManualUpdateStrategyType},
		},
	}
	available := []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "Available"}}
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Status: clusterv1.ManagedClusterStatus{Conditions: available}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(fs, mc, globalSet(), boundTo("db", "global"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}}).
		WithObjects(appliedTenantWorks(t, "db", mc.Name)...).WithStatusSubresource(fs, &workv1.ManifestWork{}).
		WithIndex(&fleetv1.FleetSet{}, ClusterIndex, clustersOf).WithIndex(&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf).Build()
	r := &FleetSetReconciler{Client: c, Recorder: record.NewFakeRecorder(20)}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// The agent reports 3 ready; then the user scales to 4, which rewrites the work.
	w := feedbackWork("east", "east", 3, 3, 3, 3, metav1.ConditionTrue)
	got := &workv1.ManifestWork{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	got.Status = w.Status
	if err := c.Status().Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	cur := &fleetv1.FleetSet{}
	if err := c.Get(context.Background(), req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Replicas = 4
	if err := c.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.ReadyReplicas != 3 || cur.Status.Subsets[0].Replicas != 4 {
		t.Errorf("after the scale: readyReplicas %d, subset replicas %d; want the fed-back 3 kept and 4 desired", cur.Status.ReadyReplicas, cur.Status.Subsets[0].Replicas)
	}
}

// globalSet is OCM's ManagedClusterSet "global": every cluster.
func globalSet() *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "global"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}
}

// boundTo is a ManagedClusterSetBinding of set in namespace ns, Bound.
func boundTo(ns, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
		Status: clusterv1beta2.ManagedClusterSetBindingStatus{Conditions: []metav1.Condition{{
			Type: clusterv1beta2.ClusterSetBindingBoundType, Status: metav1.ConditionTrue, Reason: "Bound"}}}}
}

// TestRolloutEventsOutliveWorkEvents: after a rolling update's many
// WorksApplied events on one FleetSet, its SubsetUpdated event still passes
// the hub's event correlator (client-go's, as NewEventBroadcaster configures
// it). With client-go's default spam key, the 26th event of an object within
// 5 minutes is dropped whatever its reason.
func TestRolloutEventsOutliveWorkEvents(t *testing.T) {
	obj := corev1.ObjectReference{Kind: "FleetSet", Namespace: "db", Name: "mydb", UID: "u1", APIVersion: fleetv1.GroupVersion.String()}
	event := func(reason, msg string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: reason + msg}, InvolvedObject: obj,
			Reason: reason, Message: msg, Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "fleetset-hub"}}
	}
	for _, tc := range []struct {
		name string
		opts record.CorrelatorOptions
		want bool
	}{
		{"client-go's default key", record.CorrelatorOptions{}, false},
		{"the hub's key", record.CorrelatorOptions{SpamKeyFunc: eventSpamKey}, true},
	} {
		c := record.NewEventCorrelatorWithOptions(tc.opts)
		for i := range 30 {
			c.EventCorrelate(event(EventWorksApplied, fmt.Sprintf("ManifestWork db.mydb: updated in 1 cluster (east) %d", i%3)))
		}
		r, err := c.EventCorrelate(event(EventSubsetUpdated, "Subset east on cluster east updated to revision r2"))
		if err != nil {
			t.Fatal(err)
		}
		if got := !r.Skip; got != tc.want {
			t.Errorf("%s: SubsetUpdated after 30 WorksApplied passed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWorkConflictRetriesWithoutBackoff: a ManifestWork update refused as a
// conflict (the work agent updated the work's status after the cache's
// copy) makes the reconcile run again once the cache catches up
// (RequeueAfter cacheWaitDelay, and the work's event), counted in
// fleetset_hub_manifestwork_write_conflicts_total, not an error: an error
// sends the FleetSet through the workqueue's exponential backoff, which a
// run of conflicts during the agent's status updates grew past a second.
func TestWorkConflictRetriesWithoutBackoff(t *testing.T) {
	conflictOn := "" // the cluster whose work update conflicts
	fs, c := conflictingWorks(t, &conflictOn)
	r := &FleetSetReconciler{Client: c, Recorder: record.NewFakeRecorder(50)}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	scaleTo(t, c, req.NamespacedName, 5)
	conflictOn = "west"
	before := testutil.ToFloat64(workConflicts.WithLabelValues("conflict"))
	res, err := r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != cacheWaitDelay {
		t.Fatalf("Reconcile = %+v, %v; want RequeueAfter %v and no error", res, err, cacheWaitDelay)
	}
	if got := testutil.ToFloat64(workConflicts.WithLabelValues("conflict")) - before; got != 1 {
		t.Errorf("fleetset_hub_manifestwork_write_conflicts_total grew by %v, want 1", got)
	}
	// Once the work's update goes through, the reconcile completes.
	conflictOn = ""
	if res, err := r.Reconcile(ctx, req); err != nil || res.RequeueAfter == cacheWaitDelay {
		t.Fatalf("Reconcile after the conflict = %+v, %v; want done", res, err)
	}
	total := int64(0)
	for _, cl := range []string{"east", "west"} {
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: cl, Name: "db.mydb"}, w); err != nil {
			t.Fatal(err)
		}
		n, ok := manifestwork.HeldReplicas(w, "mydb-"+cl)
		if !ok {
			t.Fatalf("work %s holds no StatefulSet mydb-%s", cl, cl)
		}
		total += int64(n)
	}
	if total != 5 {
		t.Errorf("replicas delivered = %d, want 5", total)
	}
}

// TestWorkConflictStreakIsReported: a conflict that does not clear (another
// writer rewriting the work) runs the reconcile again after cacheWaitDelay
// maxFastConflictRetries times in a row without a status write; from the
// next one on it is reported as a refused write: the conflicted work's
// subset ApplyFailed (Degraded, a Warning event naming the work), the
// status written, the write tried again after writeFailureRetry, and no
// error (no workqueue backoff). A reconcile without a conflict clears the
// problem and ends the streak.
func TestWorkConflictStreakIsReported(t *testing.T) {
	conflictOn := "" // "west" while its work updates conflict
	fs, c := conflictingWorks(t, &conflictOn)
	rec := record.NewFakeRecorder(500)
	r := &FleetSetReconciler{Client: c, Recorder: rec}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	ctx := context.Background()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	degraded := func() *metav1.Condition {
		t.Helper()
		cur := &fleetv1.FleetSet{}
		if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
			t.Fatal(err)
		}
		return apimeta.FindStatusCondition(cur.Status.Conditions, fleetv1.ConditionDegraded)
	}
	const want = "ManifestWork west/db.mydb changed under the hub in more than 10 reconciles in a row"
	scaleTo(t, c, req.NamespacedName, 5)
	conflictOn = "west"
	for round := range 2 { // the second streak starts from 0 again
		for i := 1; i <= maxFastConflictRetries; i++ {
			if res, err := r.Reconcile(ctx, req); err != nil || res.RequeueAfter != cacheWaitDelay {
				t.Fatalf("round %d, conflict %d: Reconcile = %+v, %v; want RequeueAfter %v and no error", round, i, res, err, cacheWaitDelay)
			}
		}
		if d := degraded(); d != nil && d.Status == metav1.ConditionTrue {
			t.Fatalf("round %d: Degraded after %d conflicts: %+v; want none yet", round, maxFastConflictRetries, d)
		}
		res, err := r.Reconcile(ctx, req)
		if err != nil || res.RequeueAfter != writeFailureRetry {
			t.Fatalf("round %d, conflict %d: Reconcile = %+v, %v; want RequeueAfter %v and no error", round, maxFastConflictRetries+1, res, err, writeFailureRetry)
		}
		if d := degraded(); d == nil || d.Status != metav1.ConditionTrue || d.Reason != fleetv1.ReasonApplyFailed || !strings.Contains(d.Message, want) {
			t.Errorf("round %d: Degraded = %+v, want True, %s, naming %q", round, d, fleetv1.ReasonApplyFailed, want)
		}
		if !drainedEventContains(rec, "Warning", want) {
			t.Errorf("round %d: no Warning event naming %q", round, want)
		}
		// Conflicting on: the same problem, no status write, no event.
		before := &fleetv1.FleetSet{}
		if err := c.Get(ctx, req.NamespacedName, before); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		after := &fleetv1.FleetSet{}
		if err := c.Get(ctx, req.NamespacedName, after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("round %d: a further conflicted reconcile rewrote the FleetSet (resourceVersion %s → %s)", round, before.ResourceVersion, after.ResourceVersion)
		}
		if drainedEventContains(rec, "Warning", "") {
			t.Errorf("round %d: a further conflicted reconcile emitted another Warning event", round)
		}
		conflictOn = ""
		if res, err := r.Reconcile(ctx, req); err != nil || res.RequeueAfter == cacheWaitDelay || res.RequeueAfter == writeFailureRetry {
			t.Fatalf("round %d: Reconcile after the conflicts = %+v, %v; want done", round, res, err)
		}
		if d := degraded(); d != nil && d.Status == metav1.ConditionTrue {
			t.Errorf("round %d: still Degraded once the write went through: %+v", round, d)
		}
		scaleTo(t, c, req.NamespacedName, 7)
		conflictOn = "west"
	}
}

// TestForeignWorkIsReportedNotOverwritten: a ManifestWork of the name the
// hub would create that is not the FleetSet's (no owner labels) is never
// overwritten: its subset gets an ApplyFailed problem naming it (Degraded,
// a Warning event), counted as a foreign conflict, and the write is tried
// again after writeFailureRetry (no event of the hub's caches announces its
// removal), not every cacheWaitDelay; once it is gone, the work is created.
func TestForeignWorkIsReportedNotOverwritten(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	fs, objs := eastWestFleet(t)
	foreign := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "west", Name: "db.mydb", Labels: map[string]string{"team": "other"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, foreign)...).WithStatusSubresource(fs, &workv1.ManifestWork{}).
		WithIndex(&fleetv1.FleetSet{}, ClusterIndex, clustersOf).
		WithIndex(&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf).Build()
	rec := record.NewFakeRecorder(50)
	r := &FleetSetReconciler{Client: c, Recorder: rec}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	ctx := context.Background()
	before := testutil.ToFloat64(workConflicts.WithLabelValues("foreign"))
	res, err := r.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != writeFailureRetry {
		t.Fatalf("Reconcile = %+v, %v; want RequeueAfter %v and no error", res, err, writeFailureRetry)
	}
	if got := testutil.ToFloat64(workConflicts.WithLabelValues("foreign")) - before; got != 1 {
		t.Errorf("fleetset_hub_manifestwork_write_conflicts_total{reason=foreign} grew by %v, want 1", got)
	}
	got := &workv1.ManifestWork{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Workload.Manifests) != 0 || got.Labels["team"] != "other" || len(got.Labels) != 1 {
		t.Errorf("the foreign work was changed: labels %v, %d manifests", got.Labels, len(got.Spec.Workload.Manifests))
	}
	cur := &fleetv1.FleetSet{}
	if err := c.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	const want = "ManifestWork west/db.mydb exists and is not this FleetSet's"
	degraded := apimeta.FindStatusCondition(cur.Status.Conditions, fleetv1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != fleetv1.ReasonApplyFailed || !strings.Contains(degraded.Message, want) {
		t.Errorf("Degraded = %+v, want True, %s, naming %q", degraded, fleetv1.ReasonApplyFailed, want)
	}
	if !drainedEventContains(rec, "Warning", want) {
		t.Errorf("no Warning event naming %q", want)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Reconcile(ctx, req); err != nil || res.RequeueAfter == writeFailureRetry {
		t.Fatalf("Reconcile once the foreign work is gone = %+v, %v; want no retry", res, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil || got.Labels[fleetv1.LabelOwnerName] != "mydb" {
		t.Errorf("west's work after the foreign one was deleted: labels %v, %v; want the FleetSet's", got.Labels, err)
	}
}

// drainedEventContains reports whether one of the events rec holds now is
// of eventType and contains text; it empties rec.
func drainedEventContains(rec *record.FakeRecorder, eventType, text string) bool {
	found := false
	for {
		select {
		case e := <-rec.Events:
			if strings.HasPrefix(e, eventType+" ") && strings.Contains(e, text) {
				found = true
			}
		default:
			return found
		}
	}
}

// conflictingWorks returns eastWestFleet's FleetSet and a fake client
// holding its objects (with the reconciler's indexes) on which every update
// of a ManifestWork in cluster *conflictOn (none while empty) is refused as
// a conflict, as when the work agent updated its status first.
func conflictingWorks(t *testing.T, conflictOn *string) (*fleetv1.FleetSet, client.WithWatch) {
	t.Helper()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	fs, objs := eastWestFleet(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(fs, &workv1.ManifestWork{}).
		WithIndex(&fleetv1.FleetSet{}, ClusterIndex, clustersOf).
		WithIndex(&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*workv1.ManifestWork); ok && *conflictOn != "" && obj.GetNamespace() == *conflictOn {
					return apierrors.NewConflict(schema.GroupResource{Group: workv1.GroupName, Resource: "manifestworks"}, obj.GetName(), fmt.Errorf("the object has been modified"))
				}
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	return fs, c
}

// scaleTo sets FleetSet key's spec.replicas to n through c.
func scaleTo(t *testing.T, c client.Client, key types.NamespacedName, n int32) {
	t.Helper()
	cur := &fleetv1.FleetSet{}
	if err := c.Get(context.Background(), key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Replicas = n
	if err := c.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
}

// mydbFleetSet returns FleetSet db/mydb (pods app=mydb, image db:1) of
// replicas over subsets, each named after its cluster.
func mydbFleetSet(replicas int32, clusters ...string) *fleetv1.FleetSet {
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}},
		},
	}
	for _, c := range clusters {
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{Name: c, Cluster: c})
	}
	return fs
}

// eastWestFleet returns mydbFleetSet(3, east, west) and what a hub holds
// for it to be delivered: the FleetSet, its namespace bound to the global
// cluster set, Available ManagedClusters east and west, and an Applied
// tenant work in each.
func eastWestFleet(t testing.TB) (*fleetv1.FleetSet, []client.Object) {
	fs := mydbFleetSet(3, "east", "west")
	available := []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "Available"}}
	objs := []client.Object{fs, globalSet(), boundTo("db", "global"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Status: clusterv1.ManagedClusterStatus{Conditions: available}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "west"}, Status: clusterv1.ManagedClusterStatus{Conditions: available}},
	}
	return fs, append(objs, appliedTenantWorks(t, "db", "east", "west")...)
}
