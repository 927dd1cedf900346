package v1alpha1

// The platform team's tenancy settings on the hub: set on a FleetSet's hub
// namespace (a cluster-scoped object a namespace's own admins cannot edit),
// never on the FleetSet.
const (
	// LabelPodSecurityLevel, on a FleetSet's hub namespace, is the most
	// permissive Pod Security level (privileged, baseline or restricted)
	// the FleetSets of that namespace may run at; unset:
	// DefaultPodSecurityLevel. A FleetSet's spec.podSecurityLevel may only
	// equal it or be stricter.
	LabelPodSecurityLevel = "fleetset.io/pod-security-level"
)

// ReservedNamespaces are the hub namespaces whose FleetSets the hub never
// delivers (a FleetSet's member namespace is its hub namespace's name): the
// members' system namespaces, fleetset's own and OCM's. An entry ending in
// "*" is a prefix. The hub's --reserved-namespaces adds to them.
var ReservedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", ResyncLeaseNamespace, "open-cluster-management*"}
