// Package member is fleetset's member side: what runs in every member
// cluster, beside the scheduler plugins, to keep the fleet's promise that one
// identity never runs in two clusters without ever stopping a workload
// because the hub is silent.
//
// It is made of six parts, one package each:
//
//   - contact: the member's own heartbeat to the hub (a Lease in its cluster
//     namespace on the hub, written with the add-on's hub credentials) and
//     the Monitor that measures, on this process's monotonic clock, how long
//     ago the member last reached the hub;
//   - peers: a small HTTP endpoint that tells other members whether this one
//     reaches the hub, and the client that asks them;
//   - fence: the decision (in contact, holding, fenced) and the Fencer that
//     stops the pods of failover-protected placements once fenced;
//   - claims: the controller that grows a delivered StatefulSet's claims to
//     its SubsetPlacement's spec.claimStorage and deletes the StatefulSet,
//     orphaning its pods, for the work agent to re-create it with the larger
//     claim templates (a StatefulSet's claim templates are immutable). It
//     needs no hub and runs unless --member-claim-expansion=false;
//   - roles: the role controller, which learns the role of each instance of
//     a SubsetPlacement with spec.roles (from its role probe, or from the
//     label fleetset.io/role the workload sets), labels the pods with it and
//     sums the roles up in the placement's status for the work agent to feed
//     back to the hub. It needs no hub and runs unless --member-roles=false;
//   - updater: the role-ordered update controller, which replaces the
//     outdated pods of a SubsetPlacement's StatefulSet (on OnDelete) during a
//     role-ordered rollout, as the placement's spec.update says: by role
//     updatePriority, then the highest ordinal, within maxUnavailable, and
//     the leader last, only when the hub says Update (it asks the leader for
//     a switchover with an annotation when the hub says Switchover). It needs
//     no hub and runs unless --member-role-updates=false.
//
// The rules follow the systems the field trusts: the kubelet never kills
// pods because its control plane is silent; client-go leader election
// measures expiry on its own observed, monotonic time, never on a remote
// timestamp; medik8s self-node-remediation fences only when its peers
// confirm that it, not the control plane, is cut off; the node lifecycle
// controller stops evicting when most nodes are lost at once.
//
// Component (component.go) wires them together for fleetset-scheduler:
// cmd/scheduler builds it from the --member-* flags and hands it to the
// plugin registry; the SubsetPlacement plugin starts it over the
// scheduler's pod informer, clientset and SubsetPlacement cache. With two
// scheduler replicas, heartbeat, peer endpoint and fencing run in each (each
// must know whether it may schedule, and a fence must never wait for an
// election); the claims, roles and updater controllers run only in the
// holder of the Lease fleetset-member-controllers, over one StatefulSet
// informer and one event broadcaster (member/internal/wiring).
package member
