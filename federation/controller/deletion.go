package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// Deletion: a FleetSet's ManifestWorks deleted once the FleetSet is gone
// (collect, the background cascade) or while its deletion waits on
// finalizers (finalize).

// finalize handles a FleetSet whose deletion waits on finalizers (another
// controller's, or fleetset.io/manifestworks): it deletes the FleetSet's ManifestWorks at once and, once none is
// left, removes fleetset.io/manifestworks if present. A work whose agent
// never confirms deletion (a detached cluster) holds that finalizer until
// OCM cleans the cluster's namespace.
func (r *FleetSetReconciler) finalize(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	left, _, err := r.deleteWorks(ctx, client.ObjectKeyFromObject(fs), fs)
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
// background cascade of its deletion. It asks to run again while works
// wait to be orphaned (deletionPolicy Retain), and returns the first
// delete's error.
func (r *FleetSetReconciler) collect(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	gone := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	fleetDNSRecords.DeleteLabelValues(key.Namespace, key.Name)
	forgetConditions(key)
	r.conflictStreaks.reset(key)
	_, orphaning, err := r.deleteWorks(ctx, key, gone)
	if err == nil && orphaning > 0 {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return ctrl.Result{}, err
}

// deleteWorks deletes the ManifestWorks of FleetSet key not being deleted
// yet (writeAll: one WorksDeleted event on fs). A work with deletionPolicy
// Retain is first set to deleteOption Orphan and deleted only once applied
// so, or the StatefulSets would go with it; those are counted in the second
// result. It returns how many works the cache held and the first error.
func (r *FleetSetReconciler) deleteWorks(ctx context.Context, key types.NamespacedName, fs *fleetv1.FleetSet) (int, int, error) {
	works, err := r.ownedWorks(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	var remove []*workv1.ManifestWork
	orphaning := 0
	var failed error
	for _, w := range deletable(works, keptWorks{}) {
		if w.Annotations[fleetv1.AnnotationDeletionPolicy] != string(fleetv1.DeletionRetain) {
			remove = append(remove, w)
			continue
		}
		o := w.Spec.DeleteOption
		switch {
		case o == nil || o.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan:
			if err := r.orphanOnDelete(ctx, fs, w); err != nil && failed == nil {
				failed = fmt.Errorf("orphaning ManifestWork %s: %w", client.ObjectKeyFromObject(w), err)
			}
			orphaning++
		case !manifestwork.AppliedAtGeneration(w):
			orphaning++ // the agent has not yet let go of its objects
		default:
			remove = append(remove, w)
		}
	}
	_, deleted := r.writeAll(ctx, fs, workChanges{remove: remove}, EventWorksDeleted)
	for i, w := range remove {
		if deleted[i] != nil && failed == nil {
			failed = fmt.Errorf("deleting ManifestWork %s: %w", client.ObjectKeyFromObject(w), deleted[i])
		}
	}
	return len(works), orphaning, failed
}
