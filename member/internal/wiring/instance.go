package wiring

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// The member controllers never trust a pod's labels alone: labels are
// written by whoever may create or patch pods in the namespace (a member
// namespace editor), so fleetset.io/placement, fleetset.io/set and
// apps.kubernetes.io/pod-index only select candidates. A pod is an
// instance of a placement only when the placement's delivered StatefulSet
// (DeliveredStatefulSet) is its controller (ownership.NotInstance). The add-on's
// admission policy refuses forged labels at admission; this is the second
// layer, for a cluster without it or a policy that let one through.

// DeliveredStatefulSet returns the StatefulSet the hub delivered for
// placement sp: the one of sp's name and namespace that sp owns
// (NotOwned); nil and why not when there is none (not in the cache yet,
// deleted and not yet re-created, or someone else's).
func DeliveredStatefulSet(lister appslisters.StatefulSetLister, sp *fleetv1.SubsetPlacement) (*appsv1.StatefulSet, string) {
	if lister == nil {
		return nil, "no StatefulSet informer"
	}
	sts, err := lister.StatefulSets(sp.Namespace).Get(sp.Name)
	if err != nil {
		return nil, fmt.Sprintf("StatefulSet %s/%s: %v", sp.Namespace, sp.Name, err)
	}
	if why := NotOwned(sp, sts); why != "" {
		return nil, fmt.Sprintf("StatefulSet %s/%s is not the placement's: %s", sp.Namespace, sp.Name, why)
	}
	return sts, ""
}
