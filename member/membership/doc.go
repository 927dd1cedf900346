// Package membership runs the lifecycle actions that change a workload's
// membership — memberJoin and memberLeave — and rolloutComplete, for the
// instances of the SubsetPlacements with spec.actions in one member
// cluster (api/v1alpha1/lifecycle.go, docs/lifecycle-actions.md).
//
// # memberJoin
//
// An instance has joined when its claims carry the annotation
// fleetset.io/member-joined (the UID of the pod whose memberJoin succeeded)
// at the placement's epoch (fleetset.io/member-joined-epoch, at least the
// placement's spec.actions.epoch); an instance
// without claims when its pod carries that annotation with its own UID.
// For every running instance whose pod condition fleetset.io/member-joined
// (the readiness gate the hub renders) is not True:
//
//   - joined: the condition is set True at once, nothing runs (a restart on
//     a joined claim does not join again);
//   - not joined: memberJoin runs (once the target container runs) with
//     FLEETSET_JOIN_REASON Rejoin (the claims carry fleetset.io/member-left
//     from a ScaledDown leave), FreshVolume (the ordinal joined in this
//     placement before: status.actions.joined), Relocated (the placement
//     has spec.actions.origin) or Moved (epoch above 0 without origin: a
//     spec move or a failback) — memberLeave runs first in the new pod,
//     with the same reason — else FirstStart. On success the claims
//     (or the pod) are annotated, the ordinal added to status.actions.joined
//     and the condition set True. A failure holds the instance not Ready:
//     a Warning event MemberJoinFailed, a retry after a growing delay.
//
// # memberLeave
//
// For every entry of spec.actions.leave not yet in status.actions.left,
// memberLeave runs in the instance's pod (or, target AnyLive, another live
// instance) with FLEETSET_LEAVE_REASON ScaledDown or Purged. On success the
// ordinal is added to status.actions.left (the hub then lowers the
// StatefulSet's replicas), removed from status.actions.joined, and the
// claims lose fleetset.io/member-joined and get fleetset.io/member-left.
// A failure is written to status.actions.leaveFailed (the hub holds the
// scale-down and says so), with a Warning event MemberLeaveFailed.
//
// # rolloutComplete
//
// When spec.actions.rolloutComplete names a revision other than
// status.actions.rolloutComplete, the action runs once, in the placement's
// leader instance (or its lowest running ordinal), with FLEETSET_REVISION;
// on success the revision is written to status.actions.rolloutComplete.
//
// Actions run in goroutines, one per instance and action at a time; the
// placement's sync only decides and starts them.
package membership
