package fence

import (
	"time"

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

// WorkAcknowledges reports whether ManifestWork w carries the hub's
// acknowledgement (v1alpha1.AnnotationMemberAck, an RFC 3339 renewTime) of
// a heartbeat sent at or after returned, compared to the microsecond (a
// Lease's precision). Both times are the member's own clock's. A missing or
// unreadable acknowledgement is none.
func WorkAcknowledges(w *workv1.ManifestWork, returned time.Time) bool {
	s, ok := w.Annotations[fleetv1.AnnotationMemberAck]
	if !ok {
		return false
	}
	ack, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return false
	}
	return !ack.Before(returned.Truncate(time.Microsecond))
}

// Confirms reports whether ManifestWork w lets the member lift the fence
// record of SubsetPlacement namespace/name at epoch: w holds it at epoch or
// above (WorkHolds) and acknowledges a heartbeat the member sent at or
// after returned, the first heartbeat of its return (WorkAcknowledges). A
// work the hub has not rewritten since it read the member back may be one
// it is about to replace with a relocation decided while the member was
// lost; it confirms nothing.
func Confirms(w *workv1.ManifestWork, namespace, name string, epoch int64, returned time.Time) bool {
	return WorkHolds(w, namespace, name, epoch) && WorkAcknowledges(w, returned)
}
