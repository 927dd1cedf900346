package v1alpha1

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// The resync lease contract.
//
// fleetset-hub keeps one coordination.k8s.io/v1 Lease, ResyncLeaseNamespace /
// ResyncLeaseName, in every member cluster that hosts a subset of some
// FleetSet. It delivers the Lease through its own per-cluster ManifestWork
// (ResyncWorkName, in the namespace named after the ManagedCluster), with
//   - spec.holderIdentity: the hub's identity (fleetset-hub --hub-identity),
//   - spec.leaseDurationSeconds: fleetset-hub --lease-duration (seconds,
//     default 60),
//   - spec.renewTime: renewed by the hub every third of leaseDurationSeconds
//     while, and only while, the ManagedCluster's
//     ManagedClusterConditionAvailable condition is True, and the cluster
//     holds no copy of a subset that moved away from it.
//
// The same work delivers the peers' URLs (PeersConfigMapName).
//
// The resync lease fences nothing: fencing is the member's own decision
// (member.go), and a silent hub never stops a workload. It tells in-cluster
// actors (a database operator, a quorum leader, a failover script) whether
// the hub has been delivering to their cluster: the lease is expired when
// now > renewTime + leaseDurationSeconds, or when it is missing. An expired
// lease means the cluster's view of the fleet (the <fleetset>-fleet
// ConfigMap, partitions, replica counts) may be stale, so actors make no
// fleet-wide decision — no promotion of a new primary for the whole fleet,
// no change of quorum membership, no fencing of peers in other clusters —
// and act only within their own cluster until it is renewed. An expired
// lease is a reason to hold, never to stop: the hub's controller may simply
// be down. Compare clocks with a margin for skew between hub and member
// clusters. Whether this cluster itself reaches the hub is the member's
// record, the Lease MemberLeaseName beside it, renewed by the member's own
// clock; a fleet-wide decision also checks the subset's epoch in the fleet
// view (FleetViewSubset.Epoch).
const (
	// ResyncLeaseNamespace is the namespace of the resync Lease in every
	// member cluster.
	ResyncLeaseNamespace = "fleetset-system"
	// ResyncLeaseName is the name of the resync Lease in every member cluster.
	ResyncLeaseName = "fleetset-resync"
	// ResyncWorkName is the name of the per-cluster ManifestWork, shared by all
	// FleetSets, that carries the resync Lease and its namespace.
	ResyncWorkName = "fleetset-resync"
	// ExecutorNamespace is the member namespace of every executor
	// ServiceAccount (ExecutorServiceAccountName): the add-on's own, which
	// is reserved (no FleetSet is delivered there), so no tenant pod can
	// name an executor: a pod may only use a ServiceAccount of its own
	// namespace.
	ExecutorNamespace = "fleetset-system"
	// ExecutorServiceAccountPrefix begins the name of every executor
	// ServiceAccount (ExecutorServiceAccountName). The member admission
	// policy refuses pods whose serviceAccountName begins with it or is
	// LegacyExecutorServiceAccount.
	ExecutorServiceAccountPrefix = "fleetset-executor-"
	// LegacyExecutorServiceAccount is the executor ServiceAccount's name in
	// each tenant namespace before issue 48 (<namespace>/fleetset-work-executor):
	// a pod of that namespace could run as it. The hub no longer creates
	// it; the tenant work that did drops it, so OCM's work agent deletes it.
	LegacyExecutorServiceAccount = "fleetset-work-executor"
	// ExecutorClusterRole is the add-on's ClusterRole for the delivered kinds
	// (namespaced only), bound per tenant namespace, never cluster-wide.
	ExecutorClusterRole = "fleetset-work-executor"
	// ExecutorRoleBinding is the RoleBinding, in each tenant namespace, of
	// that namespace's executor (ExecutorServiceAccountName, in
	// ExecutorNamespace) to ExecutorClusterRole.
	ExecutorRoleBinding = "fleetset-work-executor"
	// DefaultResyncLeaseDurationSeconds is the default leaseDurationSeconds of
	// the resync Lease, in seconds.
	DefaultResyncLeaseDurationSeconds = 60
)

// FleetView is the membership of a whole FleetSet, as delivered to every
// member cluster in the ConfigMap <fleetset>-fleet under FleetViewKey (JSON),
// so that in-cluster leaders can reason about peers in other clusters.
//
// +kubebuilder:object:generate=false
type FleetView struct {
	// FleetSet is the FleetSet's name; Namespace its namespace on the hub and
	// in every member cluster.
	FleetSet  string `json:"fleetSet"`
	Namespace string `json:"namespace"`
	// Replicas is spec.replicas of the FleetSet.
	Replicas int32 `json:"replicas"`
	// Subsets are every subset of the FleetSet, in spec order.
	Subsets []FleetViewSubset `json:"subsets"`
	// ServiceName is the headless Service governing the StatefulSets in
	// every member cluster.
	ServiceName string `json:"serviceName,omitempty"`
	// Instances are every desired instance of the FleetSet, in ordinal
	// order, with where it runs; empty when the fleet has more than
	// MaxFleetViewInstances replicas (the ConfigMap must stay under 1 MiB;
	// the subsets' blocks and domains still say it all).
	Instances []FleetViewInstance `json:"instances,omitempty"`
	// Leaders are the instances holding the leader role as the members
	// last reported (one, unless the fleet is split: then every holder).
	Leaders []LeaderStatus `json:"leaders,omitempty"`
}

// MaxFleetViewInstances is the most instances a fleet view lists.
const MaxFleetViewInstances = 1000

// FleetViewInstance is one instance in a FleetView.
//
// +kubebuilder:object:generate=false
type FleetViewInstance struct {
	// Name is the pod's name, <fleetset>-<subset>-<ordinal>.
	Name string `json:"name"`
	// Ordinal is the instance's ordinal.
	Ordinal int32 `json:"ordinal"`
	// Subset and Cluster are its subset and the ManagedCluster that runs it.
	Subset  string `json:"subset"`
	Cluster string `json:"cluster"`
	// Domain is the domain its ordinal belongs to (the seat sequence of the
	// subset's domains); empty for a subset without domains.
	Domain string `json:"domain,omitempty"`
	// DNSName is its stable name, <pod>.<serviceName>.<namespace>.svc,
	// resolvable in its own cluster.
	DNSName string `json:"dnsName"`
	// Role is the role its member last reported for it (spec.roles);
	// empty when none.
	Role string `json:"role,omitempty"`
	// Claims is ClaimsFresh when the instance's subset was relocated or
	// moved away from the claims it was created with, and it runs on fresh
	// ones; OldClaimsCluster then names the cluster where the old ones stay
	// (fleetset never deletes them). Empty: it runs on the claims it was
	// created with (as far as the hub knows: a volume replaced in place is
	// the member's memberJoin reason FreshVolume).
	Claims           string `json:"claims,omitempty"`
	OldClaimsCluster string `json:"oldClaimsCluster,omitempty"`
}

// ClaimsFresh is FleetViewInstance.Claims of an instance on fresh claims.
const ClaimsFresh = "Fresh"

// FleetViewSubset is one subset in a FleetView.
//
// +kubebuilder:object:generate=false
type FleetViewSubset struct {
	// Name of the subset; its StatefulSet is <fleetset>-<name>.
	Name string `json:"name"`
	// Cluster is the ManagedCluster running the subset.
	Cluster string `json:"cluster"`
	// OrdinalStart and OrdinalEnd bound the subset's ordinal block
	// [OrdinalStart, OrdinalEnd); its instances hold ordinals
	// [OrdinalStart, OrdinalStart+Replicas).
	OrdinalStart int32 `json:"ordinalStart"`
	OrdinalEnd   int32 `json:"ordinalEnd"`
	// Replicas is the subset's desired replicas.
	Replicas int32 `json:"replicas"`
	// Partition is how many of the subset's lowest instances stay on the old
	// revision.
	Partition int32 `json:"partition"`
	// Epoch is the subset's fencing epoch (FleetSet status.subsets[].epoch):
	// it grows by one at every move to another cluster. An actor that saw a
	// higher epoch for the subset elsewhere must stand down.
	Epoch int64 `json:"epoch,omitempty"`
}

// LeaseEnd returns when a resync Lease (or the member's own Lease
// MemberLeaseName) with spec s expires: renewTime + leaseDurationSeconds.
// ok is false when either field is unset; such a Lease counts as expired.
func LeaseEnd(s *coordinationv1.LeaseSpec) (end time.Time, ok bool) {
	if s == nil || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	return s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second), true
}

// LeaseExpired reports whether a Lease renewed at renewTime with
// leaseDurationSeconds duration is expired at now (the rule of the contract
// above: now > renewTime + leaseDurationSeconds). A zero renewTime (no Lease,
// or no renewTime) is expired. The clocks of the writer and of now are
// different machines': callers that act on the answer add a margin for skew.
func LeaseExpired(renewTime time.Time, duration time.Duration, now time.Time) bool {
	return renewTime.IsZero() || now.After(renewTime.Add(duration))
}

// ExecutorServiceAccountName returns the name of the ServiceAccount, in
// ExecutorNamespace, that the FleetSet ManifestWorks of hub namespace
// namespace run as on every member (spec.executor):
// "fleetset-executor-<namespace>", at most 18+63 characters (a
// namespace is a DNS label), a valid ServiceAccount name. The hub's tenant
// work (TenantWorkName) creates it with a RoleBinding in namespace to
// ExecutorClusterRole; OCM's work agent checks its rights
// (SubjectAccessReviews) before applying each object, so a FleetSet's work
// writes only its own namespace. It lives outside every tenant namespace so
// that no tenant pod can run as it.
func ExecutorServiceAccountName(namespace string) string {
	return ExecutorServiceAccountPrefix + namespace
}
