package v1alpha1

import "strconv"

// Fleet DNS: one name per instance, resolved in every member cluster.
//
// Every instance of a FleetSet is named <pod>.<serviceName>.<namespace>.svc
// (plus the cluster domain), the name the pod has for itself through its
// hostname and subdomain (the StatefulSet's governing Service). The governing
// Service is the same headless Service in every member; each member's stock
// EndpointSlice controller publishes its own pods in it, and fleetset adds
// the fleet's other instances as EndpointSlices of the same Service, so the
// cluster's stock CoreDNS answers for every instance of the fleet:
//
//  1. The member component (leader only) publishes the member's own
//     instances to the hub: one EndpointSlice per FleetSet, named
//     MemberEndpointsName, labelled LabelMemberEndpoints, in the member's
//     cluster namespace on the hub (the only namespace its add-on
//     credentials reach). Each endpoint carries the pod's addresses, its
//     hostname (the pod name) and the pod's readiness and termination, as
//     the EndpointSlice controller computes them.
//  2. The hub accepts from cluster C only the instances of subsets it
//     places on C now (every other report, stale or forged, is ignored) and
//     renders, into each member's ManifestWork, the accepted instances of
//     the other clusters as EndpointSlices of the governing Service
//     (FleetDNSSliceName, FleetDNSManagedBy), bucketed by ordinal so that an
//     instance is always in the same slice and moves between addresses in
//     one update: it never resolves to two addresses.
//  3. Silence keeps records: a member that stops reporting (cut off, hub
//     outage) leaves its last report on the hub, and nothing on a member
//     changes while the hub is down.
const (
	// LabelMemberEndpoints marks the EndpointSlices members publish on the
	// hub (value "true"); the hub caches and watches only those.
	LabelMemberEndpoints = "fleetset.io/member-endpoints"
	// FleetDNSManagedBy is the endpointslice.kubernetes.io/managed-by value
	// of the EndpointSlices the hub delivers to members: not the
	// EndpointSlice controller's, which leaves them alone.
	FleetDNSManagedBy = "fleet-dns.fleetset.io"
	// FleetDNSBucket is how many ordinals one delivered EndpointSlice
	// covers: slice k holds the remote instances with ordinals in
	// [k*FleetDNSBucket, (k+1)*FleetDNSBucket). It equals the
	// EndpointSlice API's limit of 1000 endpoints per slice.
	FleetDNSBucket = 1000
	// MaxFleetDNSInstances is the most instances whose records the hub
	// delivers for one FleetSet (the largest fleet measured: 10 clusters,
	// docs/benchmarks.md). Above it, no record is delivered and the
	// FleetSet's Degraded condition says so (ReasonFleetDNSTooLarge).
	MaxFleetDNSInstances = 10000
	// MaxInlineFleetDNSInstances is the most instances a fleet may have for
	// its records to travel in each member's ManifestWork itself: the
	// largest work of such a fleet is within OCM's 500 KiB manifest limit
	// (federation/manifestwork TestRecordsFitOCMLimits). A larger fleet's
	// records travel in fleet DNS works instead (FleetDNSWorkName), and its
	// members' ManifestWorks carry none.
	MaxInlineFleetDNSInstances = 2000
	// FleetDNSBucketsPerWork is how many EndpointSlices (ordinal buckets of
	// FleetDNSBucket) one fleet DNS work carries: work k the slices of
	// buckets [k*FleetDNSBucketsPerWork, (k+1)*FleetDNSBucketsPerWork), so a
	// record stays in one work while the fleet keeps its size class. Two
	// full slices of the longest hostnames (63 characters) are about
	// 350 KB, within OCM's 500 KiB.
	FleetDNSBucketsPerWork = 2
	// LabelWorkPart marks the ManifestWorks of a FleetSet that carry only a
	// part of what its members need (value WorkPartFleetDNS): no
	// StatefulSet, so neither failover nor the resync lease waits for them.
	LabelWorkPart = "fleetset.io/work-part"
	// WorkPartFleetDNS is the LabelWorkPart value of fleet DNS works.
	WorkPartFleetDNS = "fleet-dns"
	// ReasonFleetDNSTooLarge: the fleet has more than MaxFleetDNSInstances
	// instances, and the hub delivers no fleet DNS record.
	ReasonFleetDNSTooLarge = "FleetDNSTooLarge"
)

// MemberEndpointsName returns the name of the EndpointSlice a member
// publishes on the hub for FleetSet namespace/name: "<namespace>.<name>".
func MemberEndpointsName(namespace, name string) string {
	return namespace + "." + name
}

// FleetDNSSliceName returns the name of the k-th EndpointSlice the hub
// delivers for Service service: "<service>-fleet-<k>".
func FleetDNSSliceName(service string, k int) string {
	return service + "-fleet-" + strconv.Itoa(k)
}
