package fence

import (
	"encoding/json"

	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// WorkHolds reports whether ManifestWork w holds SubsetPlacement
// namespace/name with spec.fencing.epoch at epoch or above: the hub still
// places it in w's cluster, at the fenced epoch or a later grant. A work
// being deleted holds nothing: the hub took everything in it away, and the
// work agent has not yet removed it from the member. Manifests that do not
// decode are skipped.
func WorkHolds(w *workv1.ManifestWork, namespace, name string, epoch int64) bool {
	if !w.DeletionTimestamp.IsZero() {
		return false
	}
	for _, m := range w.Spec.Workload.Manifests {
		var sp fleetv1.SubsetPlacement
		if err := json.Unmarshal(m.Raw, &sp); err != nil {
			continue
		}
		if sp.Kind != "SubsetPlacement" || sp.Namespace != namespace || sp.Name != name {
			continue
		}
		return sp.Spec.Fencing != nil && sp.Spec.Fencing.Epoch >= epoch
	}
	return false
}
