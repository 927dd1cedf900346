package manifestwork

import (
	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// WorkName returns the name of the ManifestWork of FleetSet namespace/name in
// every member cluster: v1alpha1.ManifestWorkName.
func WorkName(namespace, name string) string {
	return fleetv1.ManifestWorkName(namespace, name)
}

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
