package controlplane

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GlobalClusterSet is the ManagedClusterSet holding every cluster (an empty
// label selector), as OCM's registration controller keeps it on a hub.
const GlobalClusterSet = "global"

// BindClusterSet binds ManagedClusterSet set to namespace with a
// ManagedClusterSetBinding named after the set, and marks it Bound, as OCM's
// registration controller does on a real hub (tests run none). The set
// GlobalClusterSet is created when missing; another set must exist. c's
// scheme must hold open-cluster-management.io/api cluster/v1beta2.
func BindClusterSet(ctx context.Context, c client.Client, namespace, set string) error {
	if set == GlobalClusterSet {
		g := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: GlobalClusterSet},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}
		if err := c.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ManagedClusterSet %s: %w", set, err)
		}
	}
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	if err := c.Create(ctx, b); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ManagedClusterSetBinding %s/%s: %w", namespace, set, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: clusterv1beta2.ClusterSetBindingBoundType,
		Status: metav1.ConditionTrue, Reason: "ClusterSetBound", Message: "bound by the test"})
	if err := c.Status().Update(ctx, b); err != nil {
		return fmt.Errorf("marking ManagedClusterSetBinding %s/%s Bound: %w", namespace, set, err)
	}
	return nil
}
