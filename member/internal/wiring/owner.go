package wiring

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// NotOwned says why sts is not the StatefulSet of sp, "" when it is: both
// carry fleetset.io/set with the same value and the same
// fleetset.io/owner-uid, or neither carries one. One side alone carrying
// the UID is not owned: the hub labels both in the same rendering, so the
// other was made by someone else (the never-adopt policy's rule).
func NotOwned(sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet) string {
	set, pset := sts.Labels[fleetv1.LabelSet], sp.Labels[fleetv1.LabelSet]
	switch {
	case set == "":
		return "the StatefulSet has no label " + fleetv1.LabelSet
	case pset == "":
		return "the placement has no label " + fleetv1.LabelSet
	case set != pset:
		return fmt.Sprintf("label %s %q, the placement's %q", fleetv1.LabelSet, set, pset)
	}
	if uid, puid := sts.Labels[fleetv1.LabelOwnerUID], sp.Labels[fleetv1.LabelOwnerUID]; uid != puid {
		return fmt.Sprintf("label %s %q, the placement's %q", fleetv1.LabelOwnerUID, uid, puid)
	}
	return ""
}
