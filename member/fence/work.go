package fence

import (
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// WorkHolds reports whether ManifestWork w holds SubsetPlacement
// namespace/name with spec.fencing.epoch at epoch or above: the hub still
// places it here, at the fenced epoch or a later grant. A work being deleted
// holds nothing (the work agent has yet to remove what the hub took away).
func WorkHolds(w *workv1.ManifestWork, namespace, name string, epoch int64) bool {
	if !w.DeletionTimestamp.IsZero() {
		return false
	}
	var sp fleetv1.SubsetPlacement
	i, err := envelope.Find(w, envelope.Key{Kind: "SubsetPlacement", Namespace: namespace, Name: name}, &sp)
	return i >= 0 && err == nil && sp.Spec.Fencing != nil && sp.Spec.Fencing.Epoch >= epoch
}
