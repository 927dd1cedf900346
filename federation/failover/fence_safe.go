//go:build !fleetset_unsafe_nofence

package failover

// UnsafeNoFence is false in every normal build: a lost cluster's subsets
// are relocated only once the cluster has certainly fenced itself. See
// fence_unsafe.go for the test build that breaks this on purpose.
const UnsafeNoFence = false
