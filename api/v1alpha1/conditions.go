package v1alpha1

// Condition types of FleetSet status.conditions.
const (
	// ConditionReady is True when every subset's StatefulSet reports all its
	// desired replicas ready and nothing is degraded.
	ConditionReady = "Ready"
	// ConditionProgressing is True while some subset's StatefulSet has not
	// yet reached its desired replicas and revision (or has not reported).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the hub cannot deliver or divide part of
	// the FleetSet; its reason is the most severe problem and its message
	// names every affected subset and cluster.
	ConditionDegraded = "Degraded"
)

// Reasons of the FleetSet conditions, most severe first where they compete
// for Degraded.
const (
	// ReasonInvalidSpec: the spec cannot be divided or rendered, or tenancy
	// refuses it (a reserved namespace, spec.podSecurityLevel above the
	// namespace's platform level, a Secret never copied); the message names
	// the field. Existing ManifestWorks are left as they are.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonClusterNotBound: a subset's cluster or fallback cluster is in no
	// ManagedClusterSet bound to the FleetSet's namespace (a
	// ManagedClusterSetBinding with condition Bound); the message names the
	// cluster and the bindings. Nothing is delivered, changed or deleted
	// anywhere until it is bound: existing ManifestWorks are left as they
	// are.
	ReasonClusterNotBound = "ClusterNotBound"
	// ReasonPodSecurity: spec.template violates the effective Pod Security
	// level (the namespace's platform level or spec.podSecurityLevel; the
	// message names each container and setting). Nothing is delivered or
	// changed; existing ManifestWorks are left as they are.
	ReasonPodSecurity = "PodSecurityViolation"
	// ReasonInvalidFeedback: the status a member's work agent fed back of a
	// subset's StatefulSet cannot be true (a negative count, one over the
	// subset's ordinal block or int32, more available than ready); the hub
	// ignores it (the subset counts as not yet reported) and says why.
	ReasonInvalidFeedback = "InvalidFeedback"
	// ReasonDependencyMissing: a ConfigMap or Secret that the pod template
	// references (spec.dependencies Auto) does not exist in the FleetSet's
	// namespace on the hub (the message names it and where it is
	// referenced). The hub holds: it writes no work, so nothing is removed
	// from any member, until the object exists or is no longer referenced.
	ReasonDependencyMissing = "DependencyMissing"
	// ReasonMultipleLeaders: more than one instance holds the leader role
	// (spec.roles) across the fleet — a split brain; the message names them
	// and their clusters.
	ReasonMultipleLeaders = "MultipleLeaders"
	// ReasonSwitchoverHeld: a role-ordered rollout reached the leader, which
	// has not handed its role over (switchover.policy Required): the
	// rollout holds (Progressing RolloutBlocked with this in its message).
	ReasonSwitchoverHeld = "SwitchoverHeld"
	// ReasonSwitchoverSkipped: the leader did not hand its role over before
	// switchover.deadlineSeconds (policy BestEffort): it is updated anyway.
	ReasonSwitchoverSkipped = "SwitchoverSkipped"
	// ReasonNoLeader: the FleetSet has a leader role and every subset has
	// reported its roles, but no instance holds it.
	ReasonNoLeader = "NoLeader"
	// ReasonMemberLeaveFailed: a subset's scale-down is held because the
	// memberLeave lifecycle action of an instance it removes fails (the
	// member reports why); the rest of the fleet goes on.
	ReasonMemberLeaveFailed = "MemberLeaveFailed"
	// ReasonPlacementEmpty: spec.topology.placementRef's Placement decides no
	// cluster (it is missing, or selects none); existing subsets stay where
	// they are and none is added.
	ReasonPlacementEmpty = "PlacementEmpty"
	// ReasonSubsetNameTooLong: spec.topology.placementRef's Placement
	// decides a cluster whose subset (named after it) would have a
	// StatefulSet name <fleetset>-<cluster> over MaxStatefulSetNameLength:
	// none of its pods could be created, so the subset is not created (the
	// cluster still serves as a fallback of the others).
	ReasonSubsetNameTooLong = "SubsetNameTooLong"
	// ReasonClusterNotFound: a subset names a ManagedCluster that does not
	// exist; its ManifestWork is not written.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonApplyFailed: the hub could not write a ManifestWork, or the work
	// agent reports it not applied.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonWorkTooLarge: a cluster's rendered ManifestWork is over OCM's
	// manifest size limit (500 KiB); the hub does not write it, and the
	// cluster keeps the work it has.
	ReasonWorkTooLarge = "WorkTooLarge"
	// ReasonClusterUnavailable: a subset's ManagedCluster is not Available; its
	// ManifestWork is still written and its resync lease is not renewed.
	ReasonClusterUnavailable = "ClusterUnavailable"
	// ReasonFailingOver: a subset's cluster is lost and the subset will be
	// relocated (failover policy Relocate) once the cluster has been
	// unavailable for tolerationSeconds and its member has certainly fenced
	// itself (its fence deadline, counted from the hub's observation of its
	// last heartbeat); the message says when and why, or that no fallback
	// cluster is available.
	ReasonFailingOver = "FailingOver"
	// ReasonRelocationHeld: a subset's cluster is lost and its relocation is
	// due, but the hub holds it: more than half of the member clusters, or
	// of the FleetSet's clusters, are lost at once (the hub may be the one
	// cut off), or the hub never observed the lost member's heartbeat and
	// so cannot know it fenced itself. The message says which and what
	// confirms the loss (the taint fleetset.io/out-of-service).
	ReasonRelocationHeld = "RelocationHeld"
	// ReasonRestoreHeld: the FleetSet was restored from a backup of the hub
	// (its annotation fleetset.io/identity differs from its UID), its
	// status.subsets is empty and the hub holds no ManifestWork of it, so
	// the hub cannot know where its subsets run (a relocated subset may
	// run on a fallback cluster). Nothing is delivered until the
	// ManifestWorks are restored too or the annotation
	// fleetset.io/restore-confirmed confirms the spec's clusters.
	ReasonRestoreHeld = "RestoreHeld"
	// ReasonFailingBack: a relocated subset is being removed from its
	// fallback cluster before it is delivered home.
	ReasonFailingBack = "FailingBack"
	// ReasonMoving: a subset's spec cluster was edited; it is being removed
	// from its old cluster and is delivered to the new one only once that
	// removal is applied (or the old cluster is confirmed gone or out of
	// service): one identity never runs in both.
	ReasonMoving = "Moving"
	// ReasonFailedOver: a subset runs on a fallback cluster, not its home;
	// the message names both and the epoch.
	ReasonFailedOver = "FailedOver"
	// ReasonOrdinalBlockFull: division gave a subset more replicas than its
	// ordinal block holds (spec.topology.ordinalBlockSize); it was cut.
	ReasonOrdinalBlockFull = "OrdinalBlockFull"
	// ReasonDivisionInfeasible: a subset's or domain's int, minReplicas or
	// maxReplicas could not be honoured for this spec.replicas.
	ReasonDivisionInfeasible = "DivisionInfeasible"

	// ReasonAsExpected is the reason of Degraded=False.
	ReasonAsExpected = "AsExpected"
	// ReasonWaitingForFeedback: a subset's StatefulSet has not reported status yet.
	ReasonWaitingForFeedback = "WaitingForFeedback"
	// ReasonRollingOut: a subset's StatefulSet has not reached its desired
	// replicas or revision.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutUpdating: a RollingUpdate is in progress; the message names
	// the subsets being updated and the fleet counts.
	ReasonRolloutUpdating = "RolloutUpdating"
	// ReasonRolloutPaused: spec.updateStrategy.rollingUpdate.paused holds the
	// rollout before its next instance.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutBlocked: the rollout cannot proceed: a subset being
	// updated is on an unavailable cluster, or has made no progress for
	// progressDeadlineSeconds. It waits; it never skips a subset.
	ReasonRolloutBlocked = "RolloutBlocked"
	// ReasonRolloutPartitioned: the rollout reached
	// rollingUpdate.partition; the remaining instances stay on the old
	// revision until the partition is lowered.
	ReasonRolloutPartitioned = "RolloutPartitioned"
	// ReasonComplete is the reason of Progressing=False.
	ReasonComplete = "Complete"
	// ReasonAllReplicasReady is the reason of Ready=True.
	ReasonAllReplicasReady = "AllReplicasReady"
	// ReasonReplicasNotReady is the reason of Ready=False when replicas are missing.
	ReasonReplicasNotReady = "ReplicasNotReady"
	// ReasonDegraded is the reason of Ready=False when Degraded is True.
	ReasonDegraded = "Degraded"
)
