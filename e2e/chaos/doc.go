// Package chaos is fleetset's seeded fault-injection run on the local fleet
// (issue 26, `make chaos`): a schedule of faults and FleetSet operations
// drawn from a seed (Draw), one-second samples of every member and the hub
// (History), and checkers over the recorded history (Check) for the
// invariants fleetset promises:
//
//   - no pod name Running in two clusters (fencing);
//   - no PersistentVolumeClaim of a FleetSet deleted while the FleetSet
//     exists;
//   - no instance Running in a zone other than its ordinal's domain;
//   - at most maxUnavailable instances made unavailable during a rollout,
//     outside what the active faults took down (counted apart);
//   - after the last fault and operation, every FleetSet converges within a
//     stated bound;
//   - no member fences unless a fault isolated it (a hub outage, stale
//     peers or not, fences nothing);
//   - a hub restored from a backup (new FleetSet UIDs) stops or replaces
//     no pod.
//
// The checkers are pure functions of a History, unit-tested with recorded
// histories in `go test ./...`; the run itself is TestChaos, behind the
// build tag chaos (run_test.go), which writes bin/chaos/<seed>/report.md,
// summary.json and history.json.gz. docs/development.md ("Chaos") says how to
// run it.
package chaos
