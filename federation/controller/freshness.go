package controller

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// errStaleFleetSet is returned by writeWorks when the cached FleetSet it
// planned from is not the apiserver's current one: nothing was written.
var errStaleFleetSet = errors.New("the cached FleetSet is older than the apiserver's")

// current reports whether fs, as read from the cache, is the FleetSet the
// apiserver holds now: the same resourceVersion, read live (metadata only)
// through APIReader. Without an APIReader it reports true.
//
// The failover state machine lives in status.subsets (cluster, phase,
// epoch), and a reconcile writes ManifestWorks before it writes status. A
// reconcile planned from an older FleetSet (a process resumed after a
// SIGSTOP, whose informers have not yet delivered what happened meanwhile;
// an expectation that expired) would hand a subset to a cluster on a grant
// the hub has since superseded, and learn of it only when its status write
// conflicted, after the works were out. So every reconcile that is about to
// write works first checks that its FleetSet is current; the status write
// then holds it to that resourceVersion (an update with it as the
// precondition). Only this process writes status (leader election), so
// what the check confirmed cannot change before the works are written but
// by a spec edit, which the next reconcile delivers. This is the
// read-your-writes check the apiserver cannot make for a cached read: a
// quorum read compared with the cache (the stale-read problem of
// kubernetes/kubernetes#59848). It returns the live read's error.
func (r *FleetSetReconciler) current(ctx context.Context, fs *fleetv1.FleetSet) (bool, error) {
	if r.APIReader == nil {
		return true, nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(fleetv1.GroupVersion.WithKind("FleetSet"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(fs), live); err != nil {
		return false, fmt.Errorf("reading FleetSet %s live before writing its ManifestWorks: %w", client.ObjectKeyFromObject(fs), err)
	}
	if live.ResourceVersion != fs.ResourceVersion {
		staleReads.Inc()
		return false, nil
	}
	return true, nil
}
