// Package roles detects the role of each instance of a FleetSet with roles
// (api/v1alpha1/roles.go) in a member cluster, and sums the roles up in the
// status of each SubsetPlacement, for the work agent to feed back to the hub.
//
// For every SubsetPlacement P with spec.roles, the instances are the pods
// labelled fleetset.io/placement=<P> in P's namespace that are Running, have
// a pod IP, are not being deleted, and are controlled by P's delivered
// StatefulSet (ownerReference controller=true with its UID, named
// <statefulset>-<ordinal>; member/internal/ownership): a pod carrying the
// labels without that owner is never probed, labelled nor counted. While P's
// StatefulSet is not known (not yet in the cache, or being re-created) and
// no pod is known to be its instance, P's status is held as it is.
//
// # The probe
//
// With spec.roles.probe, the Controller asks each instance, every
// periodSeconds, GET http://<pod IP>:<port><path> (timeoutSeconds, no proxy,
// no redirect followed, no keep-alive); a 2xx answer's trimmed body is the
// role name.
//
//   - A name among spec.roles.roles: the pod's labels fleetset.io/role=<name>
//     and fleetset.io/access-mode=<the role's accessMode, None when unset> are
//     set with a JSON merge patch of metadata.labels (and the pod's UID as a
//     precondition), only when they differ.
//   - Another name: a Warning event UnknownRole on the pod, once per name in
//     a row; the labels are left as they are.
//   - A pod with spec.hostNetwork is not sent the HTTP probe (its IP is the
//     node's): a Warning event RoleProbeFailed at once says so.
//   - A failure (no answer, an error, a timeout, a status outside 2xx): the
//     labels are left as they are (the instance keeps its last role); after
//     failureThreshold failures in a row, one Warning event RoleProbeFailed,
//     not repeated until the instance answers again.
//
// Probes go through a delaying work queue, one key per pod, served by a
// fixed pool of workers (Workers); a key is never probed by two workers at
// once, so a slow instance holds one worker for at most timeoutSeconds and
// never delays the probes of others beyond the pool's size.
//
// # The label contract
//
// Without a probe, fleetset only reads fleetset.io/role: the workload sets it
// on its own pods (it needs patch on its pods; the add-on's admission policy
// lets anyone allowed to patch a pod write fleetset.io/role and
// fleetset.io/access-mode, and no other fleetset.io/ label).
//
// # Status
//
// For every P with spec.roles, P's status (the status subresource) is
// written with a JSON merge patch, only when it differs:
//
//   - roles: "<pod>=<role>" for every instance whose fleetset.io/role names
//     one of spec.roles.roles, sorted by pod name, joined by commas;
//   - leaders: the pods among them holding the role with isLeader, sorted,
//     joined by commas;
//   - observedGeneration: P's generation.
//
// A placement whose spec.roles is removed gets its status cleared. The status
// follows pod events (the scheduler's pod informer) within the queue's
// latency, and every Resync anyway.
//
// Both replicas of fleetset-scheduler run the Controller (it does not wait
// for the scheduler's leader election): both probe, and their writes are the
// same merge patches, computed from the same cluster state.
package roles
