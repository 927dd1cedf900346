package framework

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Poll calls cond every interval until it returns true, or returns the last
// reason it gave (or its last error) after timeout. Errors are retried.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		ok, why, err := cond(ctx)
		if err != nil {
			if ctx.Err() == nil { // not the deadline cutting the last call short
				last = err.Error()
			}
			return false, nil
		}
		last = why
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("timed out after %v: %s", timeout, last)
	}
	return nil
}

// BindClusterSet binds OCM's ManagedClusterSet set to hub namespace ns
// (a ManagedClusterSetBinding named after the set, kept if it exists) and
// waits until it is Bound. "global" holds every cluster.
func BindClusterSet(ctx context.Context, hub client.Client, ns, set string, timeout time.Duration) error {
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	if err := hub.Create(ctx, b); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("binding ManagedClusterSet %s to namespace %s: %w", set, ns, err)
	}
	err := Poll(ctx, time.Second, timeout, func(ctx context.Context) (bool, string, error) {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, "", err
		}
		return apimeta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType), fmt.Sprint(b.Status.Conditions), nil
	})
	if err != nil {
		return fmt.Errorf("ManagedClusterSetBinding %s/%s Bound: %w", ns, set, err)
	}
	return nil
}
