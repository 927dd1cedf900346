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
	// LabelCluster names, on every pod, the ManagedCluster the pod runs in
	// (SubsetPlacement spec.cluster). fleetset-scheduler sets it when it
	// binds the pod, as it sets LabelDomain, so a relocation or an upgrade
	// never changes a pod template for it.
	LabelCluster = "fleetset.io/cluster"
	// LabelDomain names, on every pod, the domain (value of the topology
	// key) its ordinal belongs to: the domain the seat sequence gives the
	// ordinal, known before the pod is scheduled. fleetset-scheduler sets it
	// when it binds the pod; with the pod's other labels it is readable
	// through the downward API (fieldRef metadata.labels['fleetset.io/domain']
	// as an env var, or a downwardAPI volume).
	LabelDomain = "fleetset.io/domain"
	// LabelPodIndex is the native StatefulSet ordinal label (Kubernetes ≥ 1.28,
	// KEP-4017); its value is the pod's ordinal as a decimal integer.
	LabelPodIndex = "apps.kubernetes.io/pod-index"

	// DefaultTopologyKey is the node label whose values are the domains when a
	// placement or FleetSet does not name another one.
	DefaultTopologyKey = "topology.kubernetes.io/zone"

	// SchedulerName is the schedulerName pods use to opt in to fleetset-scheduler.
	SchedulerName = "fleetset-scheduler"
)

// Labels and annotations fleetset-hub puts on the ManifestWorks it writes.
const (
	// LabelManagedBy, with value ManagedByHub, marks every ManifestWork
	// fleetset-hub writes; the hub caches and watches only those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByHub is the value of LabelManagedBy on the hub's ManifestWorks.
	ManagedByHub = "fleetset-hub"
	// LabelOwnerNamespace names the namespace of the FleetSet a ManifestWork
	// belongs to.
	LabelOwnerNamespace = "fleetset.io/owner-namespace"
	// LabelOwnerName names the FleetSet a ManifestWork belongs to.
	LabelOwnerName = "fleetset.io/owner-name"
	// LabelResync marks the per-cluster resync lease ManifestWork (value "true").
	LabelResync = "fleetset.io/resync"
	// LabelTenant marks a tenant work (TenantWorkName); its value is the hub
	// namespace the work bootstraps in the member.
	LabelTenant = "fleetset.io/tenant"
	// AnnotationPodSecurityLevel, on a FleetSet's ManifestWork, is the
	// FleetSet's effective Pod Security level (the namespace's platform
	// ceiling and spec.podSecurityLevel): the level the tenant work labels
	// the member namespace with when it creates it.
	AnnotationPodSecurityLevel = "fleetset.io/pod-security-level"
	// AnnotationSpecHash is the hash of the ManifestWork's rendered spec and
	// labels; the hub rewrites a ManifestWork only when it differs.
	AnnotationSpecHash = "fleetset.io/spec-hash"
	// AnnotationRevision is set by fleetset-hub on every subset's StatefulSet
	// (not its pod template, so it never restarts a pod): the fleet revision,
	// FleetSet status.updateRevision, whose template the StatefulSet
	// carries. It is fed back to the hub, which counts an instance as updated
	// only on that revision.
	AnnotationRevision = "fleetset.io/revision"
	// AnnotationDependencies is set by fleetset-hub on a subset's pod
	// template when ConfigMaps or Secrets are delivered with it
	// (spec.dependencies Auto): the hash of their content. A changed
	// ConfigMap or Secret changes it, so the StatefulSet controller replaces
	// the pods, as far as the fleet rollout's partition lets it.
	AnnotationDependencies = "fleetset.io/dependencies-hash"
	// AnnotationFailback on a FleetSet (any value) asks the hub to bring its
	// relocated subsets home, with failover.failback Manual; the hub removes
	// it once they are home.
	AnnotationFailback = "fleetset.io/failback"
	// AnnotationOrdinalStarts records, on a FleetSet's ManifestWork, the
	// ordinalStart of each subset it carries ("east=0,west=1000"), so that the
	// hub recovers the sticky ordinal blocks if status.subsets was lost.
	AnnotationOrdinalStarts = "fleetset.io/ordinal-starts"
	// LabelOwnerUID on every object fleetset-hub delivers to a member (the
	// Service, the fleet view ConfigMap, each SubsetPlacement and
	// StatefulSet) is the UID of the FleetSet it belongs to. The add-on's
	// admission policy fleetset-never-adopt refuses to write an object so
	// labelled over an existing one that carries another FleetSet's UID or
	// none (an object someone else made): fleetset never adopts, changes or,
	// later, deletes what is not its own.
	LabelOwnerUID = "fleetset.io/owner-uid"
	// AnnotationIdentity on a FleetSet is its owner identity: the value
	// fleetset-hub writes as LabelOwnerUID on everything it delivers for the
	// FleetSet. The hub sets it, once, to the FleetSet's UID; after that it
	// is part of the FleetSet's metadata, so a FleetSet restored from a
	// backup (same namespace and name, a new UID) carries it and takes its
	// own objects back, while a FleetSet newly created with the name of a
	// deleted one gets a new identity and adopts nothing. See
	// docs/operations.md, "Restoring the hub from a backup".
	AnnotationIdentity = "fleetset.io/identity"
	// AnnotationRestoreConfirmed on a restored FleetSet (any value)
	// confirms that its subsets run on the clusters its spec names (none
	// is relocated), releasing the hold ReasonRestoreHeld of a FleetSet
	// restored without status and without its ManifestWorks.
	AnnotationRestoreConfirmed = "fleetset.io/restore-confirmed"
	// AnnotationDeletionPolicy records, on a FleetSet's ManifestWork, the
	// FleetSet's resolved spec.deletionPolicy (Retain or Delete), so that the
	// hub honours it when it deletes the work after the FleetSet is gone.
	AnnotationDeletionPolicy = "fleetset.io/deletion-policy"

	// FleetSetFinalizer holds a FleetSet until the hub has deleted its
	// ManifestWorks.
	FleetSetFinalizer = "fleetset.io/manifestworks"

	// FleetViewKey is the key, in the fleet view ConfigMap <fleetset>-fleet,
	// of the JSON-encoded FleetView.
	FleetViewKey = "fleet.json"
)
