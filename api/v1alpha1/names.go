package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// MaxStatefulSetNameLength is the longest StatefulSet name a subset may
// have (<fleetset>-<subset>): the StatefulSet controller labels each pod
// controller-revision-hash=<statefulset>-<hash of up to 10 characters>, a
// label value of at most 63 characters, and names it
// <statefulset>-<ordinal>, a DNS label (its hostname) of at most 63. A
// longer name gets a StatefulSet no pod of which is ever created; at this
// length every int32 ordinal (10 digits at most) still fits.
const MaxStatefulSetNameLength = 52

// maxNameLength is the longest ManifestWork name (a DNS subdomain).
const maxNameLength = 253

// ManifestWorkName returns the name of the ManifestWork of FleetSet
// namespace/name in every member cluster's namespace on the hub:
// "<namespace>.<name>" (OCM style; namespaces hold no dot, so it is unique),
// cut to 253 characters with a hash suffix if longer. Hub and members both
// use it: the member reads its own work to confirm a fenced placement.
func ManifestWorkName(namespace, name string) string {
	return cutName(namespace + "." + name)
}

// FleetDNSWorkName returns the name of the k-th fleet DNS ManifestWork of
// FleetSet namespace/name in a member cluster's namespace on the hub:
// "<namespace>.<name>.fleet-dns-<k>", cut like ManifestWorkName. The hub
// writes these works only for fleets over MaxInlineFleetDNSInstances
// instances (see FleetDNSBucketsPerWork).
func FleetDNSWorkName(namespace, name string, k int) string {
	return cutName(namespace + "." + name + ".fleet-dns-" + strconv.Itoa(k))
}

// cutName returns n, cut to 253 characters with a hash suffix if longer.
func cutName(n string) string {
	if len(n) <= maxNameLength {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxNameLength-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// TenantWorkPrefix begins the name of every tenant work.
const TenantWorkPrefix = "fleetset-tenant-"

// TenantWorkName returns the name of the tenant work of hub namespace
// namespace in a member cluster's namespace on the hub:
// "fleetset-tenant-<namespace>" (at most 16+63 characters). That work,
// applied with the work agent's own identity, creates the namespace and its
// executor (ExecutorServiceAccountName) before the namespace's FleetSet works,
// which run as that executor, can be applied.
func TenantWorkName(namespace string) string { return TenantWorkPrefix + namespace }
