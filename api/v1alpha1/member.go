package v1alpha1

import "time"

// The member's heartbeat and fencing contract (the failure model is in
// docs/failover.md).
//
// fleetset's member component (run by fleetset-scheduler in every member
// cluster, installed by the fleetset add-on) reaches the hub with the
// add-on's own hub credentials and renews a Lease HeartbeatLeaseName in its
// cluster namespace on the hub every third of its heartbeat timeout. The hub
// notes when it observes each renewal on its own clock; it never compares
// renewTime with its time.
//
// The member measures, on its local monotonic clock, the time since its last
// successful heartbeat was sent. Past the heartbeat timeout, and only when
// its own latest attempt failed, it asks its peers (the other members'
// components, at the addresses the hub delivers in the ConfigMap
// PeersConfigMapName of ResyncLeaseNamespace):
//   - its last successful heartbeat reported no peer (AnnotationMemberPeers
//     0): it cannot tell its isolation from a hub outage; it holds, and the
//     hub does not relocate its subsets;
//   - a peer still reaches the hub, or no peer answers: this member is the
//     one cut off, and it fences: it schedules no pod of a placement with
//     spec.fencing and, fenceGraceSeconds later, deletes their running pods;
//   - the peers that answer lost the hub too, and with this member they are
//     more than half of all members: the hub itself is down; it holds, and
//     every pod keeps running.
//
// A member confirms that it is cut off over one more round of questions,
// FenceConfirmation later, before it fences.
//
// The hub relocates a lost cluster's subset only after that cluster's fence
// deadline as the member computes it, counted from the hub's own observation
// of the last heartbeat (or the end of the last full disruption): heartbeat
// timeout + FenceConfirmation + fenceGraceSeconds + the largest
// terminationGracePeriodSeconds of the pod template + RelocationMarginSeconds
// (the fence part the longest of the spec's, the member's last report,
// AnnotationMemberFenceSeconds, and what the hub delivered and the member
// may have applied since, AnnotationDeliveredFenceSeconds), or at once on a
// positive confirmation (the ManagedCluster tainted TaintOutOfService; a
// deleted ManagedCluster confirms nothing and waits for the deadline, from
// the hub's record of its member's heartbeats). It relocates nothing while
// more than half of the member clusters, or of a FleetSet's clusters, are
// lost at once.
//
// A placement fenced on a member stays fenced after the member reaches the
// hub again, until the hub confirms the placement is still this cluster's at
// the same epoch (the placement in the hub's ManifestWork for this cluster)
// or delivers it anew with a higher epoch; the record is the annotation
// AnnotationFencedEpoch on the SubsetPlacement.
//
// Epochs are fencing tokens: a member never runs a placement below the
// highest epoch it ran it at (AnnotationMemberEpochs), and the hub raises a
// subset's epoch to the highest its members report before it delivers it.
const (
	// HeartbeatLeaseName is the member's heartbeat Lease, in the namespace
	// named after its ManagedCluster on the hub.
	HeartbeatLeaseName = "fleetset-member"
	// MemberLeaseName is the member's own record of its last contact with
	// the hub, a Lease in ResyncLeaseNamespace of the member cluster, renewed
	// (renewTime: the member's wall clock) after each successful heartbeat.
	// In-cluster actors may read it: expired (now > renewTime +
	// leaseDurationSeconds, by the member cluster's clock) means the member
	// has not reached the hub for its heartbeat timeout.
	MemberLeaseName = "fleetset-member"
	// MemberControllersLeaseName is the leader-election Lease, in
	// ResyncLeaseNamespace of the member cluster, of the member component's
	// controllers (claims, roles, updater): with several fleetset-scheduler
	// replicas, only its holder runs them.
	MemberControllersLeaseName = "fleetset-member-controllers"
	// LabelHeartbeat marks heartbeat Leases on the hub (value "true"); the
	// hub watches only those.
	LabelHeartbeat = "fleetset.io/member-heartbeat"
	// AnnotationPeerURL on a heartbeat Lease is the URL at which other
	// members ask this one whether it reaches the hub, as the replica that
	// wrote the last heartbeat advertises it; the hub reads it only when
	// AnnotationPeerURLs is absent (a member before it).
	AnnotationPeerURL = "fleetset.io/peer-url"
	// AnnotationMemberState and AnnotationMemberReason on a heartbeat Lease
	// are the member's own state (InContact, Holding, Fenced) and why, as it
	// last reported them.
	AnnotationMemberState  = "fleetset.io/member-state"
	AnnotationMemberReason = "fleetset.io/member-reason"
	// AnnotationMemberPeers on a heartbeat Lease (and on the member's
	// record Lease) is how many peers the member knew when it wrote it (a
	// decimal count). A member whose last successful heartbeat reported 0
	// never fences on hub silence: it cannot tell its own isolation from a
	// hub outage. The hub, reading the same count, never relocates its
	// subsets then (RelocationHeld), unless the cluster carries
	// TaintOutOfService. Absent (a member before this rule): the member
	// fences when no peer answers, and the hub relocates as before.
	AnnotationMemberPeers = "fleetset.io/member-peers"
	// AnnotationMemberFenceSeconds on a heartbeat Lease is the longest time,
	// in whole seconds, the member would take from the start of a fence
	// until the last fenced pod has stopped, as it enforces it: the largest
	// fenceGraceSeconds of its placements plus the largest
	// terminationGracePeriodSeconds of their pods. The hub counts the
	// larger of it and the FleetSet's spec into the fence deadline, so that
	// lowering either in the spec during a cut, or pods with a longer grace
	// (old revisions, a subset patch), never relocate before the member has
	// fenced. Absent: the spec alone.
	AnnotationMemberFenceSeconds = "fleetset.io/member-fence-seconds"
	// AnnotationDeliveredFenceSeconds on a FleetSet's ManifestWork for a
	// member is the longest fence, in whole seconds (a placement's
	// fenceGraceSeconds plus its StatefulSet template's
	// terminationGracePeriodSeconds, default 30), that an earlier spec of
	// the work delivered and the member may still enforce: the hub writes
	// it with every new spec, from the spec it replaces, and keeps the older
	// value too while the work agent had not reported the replaced spec
	// Applied. Until the agent reports the current spec Applied, the hub
	// counts the larger of it and the current spec's fence into the fence
	// deadline: a member cut off after it applied a longer grace, and
	// before a heartbeat reported it (AnnotationMemberFenceSeconds),
	// enforces that grace whatever the spec says afterwards. Written by
	// the hub only; kept on the work, so a restarted hub reads it too.
	AnnotationDeliveredFenceSeconds = "fleetset.io/delivered-fence-seconds"
	// AnnotationMemberFencedPlacements on a heartbeat Lease is how many
	// SubsetPlacements carry a fence record the member has not lifted yet
	// (a decimal count): while it is above 0, the hub stamps
	// AnnotationMemberAck on the member's ManifestWorks at every heartbeat.
	// Absent: 0.
	AnnotationMemberFencedPlacements = "fleetset.io/member-fenced-placements"
	// AnnotationMemberEpochs on a heartbeat Lease is the member's record of
	// the highest fencing epoch it has run each placement at (the member
	// ConfigMap fleetset-system/fleetset-epochs): a JSON object of
	// "<namespace>.<placement>.<owner identity>" to the epoch. A member
	// holds a placement delivered below its record; the hub raises a
	// subset's epoch to the highest any member reports, and moves it to
	// the member that ran it there, before it delivers anything (a hub
	// restored from a backup older than a relocation). Absent: nothing
	// reported (a member before it).
	AnnotationMemberEpochs = "fleetset.io/member-epochs"
	// AddOnName is the name of fleetset's OCM add-on: its
	// ClusterManagementAddOn, and the ManagedClusterAddOn that enables it
	// in a cluster's namespace. While the ClusterManagementAddOn exists,
	// a cluster without the ManagedClusterAddOn (or with it being deleted)
	// is no member: the hub deletes its heartbeat Lease and stops listing
	// it as a peer.
	AddOnName = "fleetset"
	// AnnotationMemberAlive on the member's record Lease (MemberLeaseName,
	// in the member cluster) is when the member component last ran a
	// heartbeat attempt, successful or not (RFC 3339, the member's clock):
	// a process that restarts reads from it how long no process watched,
	// and fences on start as a thawed one does when that gap is over the
	// heartbeat timeout while it was out of contact for timeout + one
	// confirmation (FenceConfirmation). Absent (a member before it): no
	// fence on start.
	AnnotationMemberAlive = "fleetset.io/member-alive"
	// AnnotationMemberAck on a FleetSet's ManifestWork for a member is the
	// member's heartbeat renewTime (RFC 3339, microseconds, as the member
	// wrote it) that the hub had read when it wrote the work: a hub
	// acknowledgement of that heartbeat. The hub serializes the
	// reconciles of one FleetSet, so every decision it made from a read
	// of the member's Lease older than that renewTime is already in the
	// work (or was never written). A member lifts a fence record only on
	// a work that holds the placement and whose acknowledgement is at or
	// after the first heartbeat of its return: a work the hub is about to
	// replace, from a decision taken while the member was lost, is never
	// enough.
	AnnotationMemberAck = "fleetset.io/member-ack"
	// AnnotationPeerURLs on a heartbeat Lease is the JSON object of the
	// member component's replicas (by holder identity) to their peer URL
	// and the time the replica last wrote it ({"url": ..., "seen": RFC
	// 3339}): every replica keeps its own entry and drops those not
	// rewritten for a heartbeat timeout, so the hub lists every live
	// replica's URL and the list does not change at each beat.
	AnnotationPeerURLs = "fleetset.io/peer-urls"
	// PeersConfigMapName is the ConfigMap, in ResyncLeaseNamespace of every
	// member, in which the hub delivers the peers' URLs (key PeersKey: a JSON
	// object of cluster name to URL), with the resync lease's ManifestWork.
	PeersConfigMapName = "fleetset-peers"
	// PeersKey is the key of the peers' JSON in PeersConfigMapName (one URL
	// per cluster, the first of PeersAllKey's, for members before it).
	PeersKey = "peers.json"
	// PeersAllKey is the key, in PeersConfigMapName, of the JSON object of
	// cluster name to every URL of its member component's replicas
	// (sorted); a member asks each until one answers.
	PeersAllKey = "peers-all.json"
	// AnnotationFencedEpoch on a SubsetPlacement records that the member
	// fenced it at that epoch (spec.fencing.epoch); see the contract above.
	AnnotationFencedEpoch = "fleetset.io/fenced-epoch"
	// TaintOutOfService on a ManagedCluster (spec.taints, any effect) is an
	// operator's confirmation that the cluster runs none of its pods any
	// more (it is powered off, or its pods were stopped by hand): the hub
	// relocates its subsets without waiting for the fence deadline, as
	// node.kubernetes.io/out-of-service does for a node (KEP-2268).
	TaintOutOfService = "fleetset.io/out-of-service"
	// DefaultHeartbeatTimeoutSeconds is the member's heartbeat timeout when
	// unset, in seconds.
	DefaultHeartbeatTimeoutSeconds = 60
	// RelocationMarginSeconds is added to a lost member's fence deadline
	// before the hub relocates its subsets, in seconds: it covers the
	// member's peer poll, its fencer's sweep and the hub's own observation
	// delay.
	RelocationMarginSeconds = 10
)

// FenceConfirmation is how long a member that finds itself cut off keeps
// confirming it with its peers before it fences: one heartbeat period, a
// third of its heartbeat timeout.
func FenceConfirmation(heartbeatTimeout time.Duration) time.Duration {
	return heartbeatTimeout / 3
}
