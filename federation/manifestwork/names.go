package manifestwork

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// The names below are package envelope's, kept here for the hub's callers.

// WorkName returns the name of the ManifestWork of FleetSet namespace/name in
// every member cluster: v1alpha1.ManifestWorkName.
func WorkName(namespace, name string) string {
	return fleetv1.ManifestWorkName(namespace, name)
}

// StatefulSetName is envelope.StatefulSetName: "<fleetset>-<subset>".
func StatefulSetName(fleetSet, subset string) string {
	return envelope.StatefulSetName(fleetSet, subset)
}

// FleetViewName is envelope.FleetViewName: "<fleetset>-fleet".
func FleetViewName(fleetSet string) string { return envelope.FleetViewName(fleetSet) }

// ServiceName is envelope.ServiceName: spec.serviceName, or the FleetSet's name.
func ServiceName(fs *fleetv1.FleetSet) string { return envelope.ServiceName(fs) }

// OwnerLabels is envelope.OwnerLabels: the labels of FleetSet namespace/name's works.
func OwnerLabels(namespace, name string) map[string]string {
	return envelope.OwnerLabels(namespace, name)
}

// Owner is envelope.Owner: the FleetSet a ManifestWork belongs to.
func Owner(w metav1.Object) (owner types.NamespacedName, ok bool) { return envelope.Owner(w) }
