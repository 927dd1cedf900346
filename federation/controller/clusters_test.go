package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestReconcileReadsEachClusterOnce: one reconcile reads each ManagedCluster
// once, though tenancy, failover and the cluster check all look at it.
func TestReconcileReadsEachClusterOnce(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(name string, available bool) *clusterv1.ManagedCluster {
		status := metav1.ConditionTrue
		if !available {
			status = metav1.ConditionFalse
		}
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: status, Reason: "Test"}}}}
	}
	global := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "global"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "global"},
		Spec:   clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"},
		Status: clusterv1beta2.ManagedClusterSetBindingStatus{Conditions: []metav1.Condition{{Type: clusterv1beta2.ClusterSetBindingBoundType, Status: metav1.ConditionTrue, Reason: "Test"}}}}
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb", Generation: 1},
		Spec: fleetv1.FleetSetSpec{
			Replicas: 4,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}},
			Topology: fleetv1.FleetTopology{Subsets: []fleetv1.Subset{
				{Name: "east", Cluster: "east", FallbackClusters: []string{"south"}},
				{Name: "west", Cluster: "west", FallbackClusters: []string{"south"}},
			}},
			Failover: &fleetv1.Failover{Policy: fleetv1.FailoverRelocate},
		},
	}
	gets := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(fs, cluster("east", true), cluster("west", false), cluster("south", true), global, binding, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}}).
		WithObjects(appliedTenantWorks(t, "db", "east", "west", "south")...).
		WithStatusSubresource(&fleetv1.FleetSet{}).
		WithIndex(&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*clusterv1.ManagedCluster); ok {
				gets[key.Name]++
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &FleetSetReconciler{Client: c, Recorder: record.NewFakeRecorder(100)}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
		t.Fatal(err)
	}
	var works workv1.ManifestWorkList
	if err := c.List(context.Background(), &works, client.HasLabels{fleetv1.LabelOwnerName}); err != nil || len(works.Items) != 2 {
		t.Fatalf("reconcile wrote %d ManifestWorks (%v), want 2: it did not get past the cluster checks", len(works.Items), err)
	}
	for _, name := range []string{"east", "west", "south"} {
		if gets[name] != 1 {
			t.Errorf("ManagedCluster %s read %d times in one reconcile, want 1", name, gets[name])
		}
	}
}
