// Package placementqueue holds the work-queue plumbing the member
// component's per-SubsetPlacement controllers (claims, roles, updater)
// share: one key per placement, a sync with rate-limited retries, and a
// periodic pass over the placements a controller cares about.
package placementqueue

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Queue is a rate-limited queue of SubsetPlacement keys.
type Queue = workqueue.TypedRateLimitingInterface[types.NamespacedName]

// ProcessNext takes one key from q and syncs it: an error is logged with
// failure and the key retried with rate limiting, success forgets its
// failures. It returns false once q is shut down.
func ProcessNext(ctx context.Context, q Queue, sync func(context.Context, types.NamespacedName) error, failure string) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).Error(err, failure+"; retrying", "placement", key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// EnqueueMatching lists the SubsetPlacements r holds and adds to q those
// keep accepts; a failed list is logged and skipped (the next pass tries
// again).
func EnqueueMatching(ctx context.Context, r client.Reader, q Queue, keep func(*fleetv1.SubsetPlacement) bool) {
	var list fleetv1.SubsetPlacementList
	if err := r.List(ctx, &list); err != nil {
		klog.FromContext(ctx).Error(err, "Listing SubsetPlacements")
		return
	}
	for i := range list.Items {
		if keep(&list.Items[i]) {
			q.Add(client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
}
