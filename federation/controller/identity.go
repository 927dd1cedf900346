package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// EventIdentityRecorded: the hub recorded a FleetSet's owner identity
// (annotation fleetset.io/identity) from its UID.
const EventIdentityRecorded = "IdentityRecorded"

// recordIdentity sets the annotation fleetset.io/identity of fs to its UID
// when fs carries none, so that the owner identity of everything delivered
// for fs (label fleetset.io/owner-uid) is kept in fs's own metadata and
// survives a backup and restore of the hub, which gives fs a new UID
// (docs/operations.md, "Restoring the hub from a backup"). For a FleetSet
// delivered before the annotation existed the value is the UID its objects
// already carry, so nothing changes on the members. It reports whether it
// wrote fs (the reconcile then ends; the write's event plans again), and
// returns the patch's error.
func (r *FleetSetReconciler) recordIdentity(ctx context.Context, fs *fleetv1.FleetSet) (bool, error) {
	if _, ok := fs.Annotations[fleetv1.AnnotationIdentity]; ok || fs.UID == "" {
		return false, nil
	}
	patch := client.MergeFromWithOptions(fs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if fs.Annotations == nil {
		fs.Annotations = map[string]string{}
	}
	fs.Annotations[fleetv1.AnnotationIdentity] = string(fs.UID)
	if err := r.Patch(ctx, fs, patch); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.expectations.expectWrite(r.owner(fs), kindFleetSet, fs)
	r.Recorder.Eventf(fs, "Normal", EventIdentityRecorded,
		"Recorded owner identity %s (annotation %s): the label %s of every object delivered for this FleetSet; keep it in backups of the hub", fs.UID, fleetv1.AnnotationIdentity, fleetv1.LabelOwnerUID)
	return true, nil
}
