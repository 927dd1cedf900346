package v1alpha1

const (
	// LabelSet names the FleetSet a StatefulSet, Pod or SubsetPlacement belongs to.
	LabelSet = "fleetset.io/set"
	// LabelSubset names the subset (one StatefulSet in one member cluster).
	LabelSubset = "fleetset.io/subset"
	// LabelPlacement names the SubsetPlacement, in the pod's namespace, that
	// fleetset-scheduler enforces for a pod. Pods without it are not managed by
	// the fleetset plugins.
	LabelPlacement = "fleetset.io/placement"
	// LabelPodIndex is the native StatefulSet ordinal label (Kubernetes ≥ 1.28,
	// KEP-4017); its value is the pod's ordinal as a decimal integer.
	LabelPodIndex = "apps.kubernetes.io/pod-index"

	// DefaultTopologyKey is the node label whose values are the domains when a
	// placement or FleetSet does not name another one.
	DefaultTopologyKey = "topology.kubernetes.io/zone"

	// SchedulerName is the schedulerName pods use to opt in to fleetset-scheduler.
	SchedulerName = "fleetset-scheduler"
)
