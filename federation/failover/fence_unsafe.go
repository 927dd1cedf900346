//go:build fleetset_unsafe_nofence

package failover

// UnsafeNoFence is true only in a test build made with
// `-tags fleetset_unsafe_nofence` (`make chaos-unsafe`): Plan relocates a
// lost cluster's subsets once the toleration is over, without waiting for
// the member's fence deadline. It exists so that the chaos run
// (e2e/chaos) can show that its dual-running checker catches a broken
// fence; such a build runs one identity in two clusters and must never be
// shipped. fleetset-hub logs a warning at start when it is set.
const UnsafeNoFence = true
