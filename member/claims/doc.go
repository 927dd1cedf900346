// Package claims grows the volume claims of a delivered StatefulSet when its
// FleetSet asks for more storage.
//
// A StatefulSet's volumeClaimTemplates are immutable: when a FleetSet's claim
// template grows (1Gi → 2Gi), OCM's work agent cannot update the subset's
// StatefulSet and its apply is refused, again at every retry. The hub also
// writes the desired storage of each claim template into the SubsetPlacement
// of the same name (spec.claimStorage), which applies fine. The Controller of
// this package, in every member, finishes the change:
//
//  1. it expands every existing claim of the StatefulSet made from a template
//     that should be larger (the PVC <template>-<statefulset>-<ordinal>, for
//     the ordinals of the placement's block), patching
//     spec.resources.requests.storage, when the claim's StorageClass allows
//     expansion;
//  2. it deletes the StatefulSet with propagationPolicy Orphan and a UID
//     precondition: its pods, claims and ControllerRevisions stay, the pods
//     keep running. The work agent creates the StatefulSet again, with the
//     larger claim template, at its next retry, and the StatefulSet
//     controller adopts the pods (their revision hash depends on the pod
//     template only, so none is restarted).
//
// No pod and no claim is ever deleted; nothing is shrunk.
//
// # State machine
//
// The controller keeps no state of its own (but a cache of what it already
// checked): every step is read from the cluster, so it may stop at any point
// and resume. For a placement P with spec.claimStorage and the StatefulSet S
// of the same name in its namespace:
//
//   - No S, or S being deleted: wait (the work agent re-creates S; the
//     garbage collector is orphaning S's dependents).
//   - S or P without the label fleetset.io/set, different fleetset.io/set
//     values, or different fleetset.io/owner-uid values where both carry
//     one: S is not P's; touch nothing (a Warning event NotOwned when a
//     template differs from P).
//   - Some claim template of S is larger than P asks (a shrink): a Warning
//     event ClaimShrinkRefused; touch nothing. A StatefulSet's claims are
//     never shrunk.
//   - Expand: for each claim template T named in P, each existing claim of
//     S from T whose request is smaller than P asks is patched to P's value
//     (with its UID and resourceVersion as preconditions). Before any patch,
//     each such claim's StorageClass is checked: a claim without a class, a
//     missing class, or a class without allowVolumeExpansion stops the
//     placement here with a Warning event ClaimExpansionNotAllowed naming
//     the class and the claim, and S is not replaced (re-checked at every
//     resync, so fixing the class resumes it). A claim that is not Bound
//     cannot be resized (the apiserver refuses): it is skipped, with a
//     Warning event ClaimsPending, and retried at every resync. A Normal
//     event ClaimsExpanded lists the claims patched.
//   - Replace: if some claim template of S is smaller than P asks, S is
//     deleted (Orphan, UID precondition), with a Normal event
//     StatefulSetReplaced. The next S the work agent creates carries P's
//     storage.
//   - Done: every template of S matches P and every claim is at least P's
//     storage. The controller remembers this for (P's UID and generation,
//     S's UID) and checks the claims again only when one of them changes.
//
// Because the claims are checked whether or not S's template is already
// large enough, an interrupted run (a crash between the patches and the
// delete, a claim created by the old S between them, a claim that was
// Pending) is finished by the next pass over the new S.
//
// A crash between step 1 and step 2 leaves larger claims under the old S:
// the next pass finds nothing to patch and deletes S. Two replicas of
// fleetset-scheduler may run the controller at once: the preconditions make
// the second write of each step a conflict, which it skips.
//
// The work agent (OCM v1.2.0) retries a failed apply with a rate-limited
// backoff (5 ms doubling up to 1000 s), so S reappears within that backoff
// of the delete; while it is absent the pods run unowned and no pod is
// created or replaced.
package claims
