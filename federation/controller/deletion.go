package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Deletion: a FleetSet's ManifestWorks deleted once the FleetSet is gone
// (collect, the background cascade) or while its deletion waits on
// finalizers (finalize).

// finalize handles a FleetSet whose deletion waits on finalizers (another
// controller's, or fleetset.io/manifestworks, which hubs before this one
// added): it deletes the FleetSet's ManifestWorks at once and, once none is
// left, removes fleetset.io/manifestworks if present. A work whose agent
// never confirms deletion (a detached cluster) holds that finalizer until
// OCM cleans the cluster's namespace.
func (r *FleetSetReconciler) finalize(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	left, err := r.deleteWorks(ctx, client.ObjectKeyFromObject(fs), fs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !controllerutil.ContainsFinalizer(fs, fleetv1.FleetSetFinalizer) {
		return ctrl.Result{}, nil
	}
	if left > 0 {
		// The ManifestWork watch requeues when they are gone; poll as well.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(fs, fleetv1.FleetSetFinalizer)
	if err := r.Update(ctx, fs); err != nil {
		return ctrl.Result{}, err
	}
	r.expectations.expectWrite(r.owner(fs), kindFleetSet, fs)
	return ctrl.Result{}, nil
}

// collect deletes the ManifestWorks of FleetSet key, which is gone: the
// background cascade of its deletion. It returns the first delete's error.
func (r *FleetSetReconciler) collect(ctx context.Context, key types.NamespacedName) error {
	gone := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := r.deleteWorks(ctx, key, gone)
	return err
}

// deleteWorks deletes, up to MaxParallelWrites at a time (writeAll), the
// ManifestWorks of FleetSet key that are not being deleted yet, and emits
// one WorksDeleted event on fs naming their clusters. It returns how many of
// its works the cache held (being deleted or not) and an error naming the
// first work it failed to delete.
func (r *FleetSetReconciler) deleteWorks(ctx context.Context, key types.NamespacedName, fs *fleetv1.FleetSet) (int, error) {
	works, err := r.ownedWorks(ctx, key)
	if err != nil {
		return 0, err
	}
	remove := deletable(works, nil)
	_, deleted := r.writeAll(ctx, fs, workChanges{remove: remove, ownerDeleted: true}, EventWorksDeleted)
	var failed error
	for i, w := range remove {
		if deleted[i] != nil {
			failed = fmt.Errorf("deleting ManifestWork %s: %w", client.ObjectKeyFromObject(w), deleted[i])
			break
		}
	}
	return len(works), failed
}
