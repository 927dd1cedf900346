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
	// LabelSecretReferences, on a FleetSet's hub namespace, set to
	// SecretReferencesUnchecked, turns off the hub admission policy
	// fleetset-secret-references there (manifests/hub/admission.yaml): by
	// default each write of a FleetSet's spec with spec.dependencies Auto
	// is refused unless its requester may get every Secret the pod
	// template and the subsets' patches reference, since the hub reads and
	// delivers them with its own rights.
	LabelSecretReferences = "fleetset.io/secret-references"
	// SecretReferencesUnchecked is the value of LabelSecretReferences that
	// lets any FleetSet author of the namespace have its Secrets delivered.
	SecretReferencesUnchecked = "unchecked"
)

// ReservedNamespaces are the hub namespaces whose FleetSets the hub never
// delivers (a FleetSet's member namespace is its hub namespace's name): the
// members' system namespaces, fleetset's own and OCM's. An entry ending in
// "*" is a prefix. The hub's --reserved-namespaces adds to them.
var ReservedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", ResyncLeaseNamespace, "open-cluster-management*"}
