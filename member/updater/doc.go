// Package updater replaces, in a member cluster, the outdated pods of a
// subset in a role-ordered rollout.
//
// When a FleetSet has roles (spec.roles) and rolls out, fleetset-hub renders
// each subset's StatefulSet with updateStrategy OnDelete (the StatefulSet
// controller then creates pods at the update revision but replaces none)
// and writes its instruction into the SubsetPlacement of the same name:
// spec.update, {maxUnavailable, leader Hold | Switchover | Update}. The
// Controller of this package, in every member, carries it out.
//
// For a placement P with spec.update and spec.roles and the StatefulSet S of
// the same name in its namespace:
//
//   - S and P must carry the same fleetset.io/set and fleetset.io/owner-uid
//     labels, S must have updateStrategy OnDelete, and S's status must be up
//     to date (status.observedGeneration = generation, an updateRevision);
//     otherwise nothing is done.
//   - Outdated: the pods whose controller is S (by UID), of S's desired
//     ordinals [ordinals.start, start+replicas), not being deleted, whose
//     label controller-revision-hash is not S's status.updateRevision.
//   - Unavailable: the desired ordinals whose pod is missing, being deleted
//     (or deleted by this process and not yet seen so), or not Running and
//     Ready for S's minReadySeconds.
//   - Budget: spec.update.maxUnavailable minus the unavailable. While it is
//     positive the next outdated pod is deleted, with its UID as a
//     precondition: non-leaders first, by their role's updatePriority
//     (fleetset.io/role looked up in spec.roles.roles; no role or an
//     unknown one is 0), then the highest ordinal. A pod holding the
//     leader role (isLeader) is deleted only when spec.update.leader is
//     Update, and only once no other instance is outdated.
//   - Leader Switchover: an outdated leader is annotated
//     fleetset.io/switchover-requested=<now, RFC 3339>, once (an existing
//     annotation is kept), with a Normal event SwitchoverRequested on the
//     pod and on P; it is never deleted in that mode. Once the workload has
//     moved the leader role, the old leader is a follower like any other.
//     When P has a switchover lifecycle action (spec.actions.actions.
//     switchover), it runs first, in the leader pod, with
//     FLEETSET_CANDIDATE_NAME/FQDN the lowest available ordinal of S on the
//     update revision without the leader role, else the first of
//     spec.actions.candidates (the hub's updated, Ready instances of the
//     fleet), else empty; only once it succeeded is the leader annotated
//     (the record that it was asked), so that the hub's switchover policy
//     and deadline then wait for the role to move as without the action.
//     A failing action holds the leader (Warning events
//     SwitchoverActionFailed, the placement retried with a growing delay).
//
// The StatefulSet controller creates each deleted pod again at the update
// revision; its events (and the pod's readiness) bring the placement back
// here, so the rollout proceeds one budget at a time. Each deletion is a
// Normal event PodReplaced on P and counts in
// fleetset_member_rollout_pod_deletions_total{role}.
//
// Nothing is kept but what was deleted and not yet seen deleted: every pass
// is computed from the cluster (Compute is the pure decision), and before
// deleting, the pods are listed from the API server again and the decision
// is made again, so a cache lagging behind (a pod another replica of the
// scheduler deleted, one that just stopped being Ready) does not overspend
// the budget. Two replicas may still decide in the same instant; the UID
// preconditions make the second delete of the same pod a no-op (NotFound or
// Conflict), but two different pods may then be deleted at once.
//
// An outdated pod that is itself unavailable takes budget like any other:
// with maxUnavailable 1 and a crashing outdated pod, the rollout waits, as
// the StatefulSet controller's own RollingUpdate does.
package updater
