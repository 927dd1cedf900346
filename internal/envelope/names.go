package envelope

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// StatefulSetName returns the name of the StatefulSet, SubsetPlacement and
// placement label of a subset: "<fleetset>-<subset>".
func StatefulSetName(fleetSet, subset string) string {
	return fleetSet + "-" + subset
}

// FleetViewName returns the name of the fleet view ConfigMap: "<fleetset>-fleet".
func FleetViewName(fleetSet string) string {
	return fleetSet + "-fleet"
}

// ServiceName returns the headless Service of a FleetSet: spec.serviceName,
// or the FleetSet's name when unset.
func ServiceName(fs *fleetv1.FleetSet) string {
	if fs.Spec.ServiceName != "" {
		return fs.Spec.ServiceName
	}
	return fs.Name
}

// OwnerLabels returns the labels that mark a ManifestWork as belonging to
// FleetSet namespace/name.
func OwnerLabels(namespace, name string) map[string]string {
	return map[string]string{
		fleetv1.LabelManagedBy:      fleetv1.ManagedByHub,
		fleetv1.LabelOwnerNamespace: namespace,
		fleetv1.LabelOwnerName:      name,
	}
}

// Owner returns the FleetSet a ManifestWork belongs to, from OwnerLabels;
// ok is false unless both the namespace and the name label are set.
func Owner(w metav1.Object) (owner types.NamespacedName, ok bool) {
	l := w.GetLabels()
	ns, name := l[fleetv1.LabelOwnerNamespace], l[fleetv1.LabelOwnerName]
	if ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
