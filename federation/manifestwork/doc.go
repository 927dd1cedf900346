// Package manifestwork renders what fleetset-hub delivers to member clusters
// as Open Cluster Management ManifestWorks, and reads back what the work
// agents report. Rendering and reading are pure; ApplyTo is its one write.
// Names, encoding and decoding of manifests are package internal/envelope's,
// shared with the member.
//
// Files: manifestwork.go (Subset, Works, StatefulSet, SubsetPlacement), overrides.go
// (per-subset templates), dependencies.go (ConfigMaps and Secrets delivered
// with the workload), roles.go, fleetview.go, pdb.go, lease.go (the resync
// work), feedback.go and feedback_validate.go (statusFeedback, the Applied
// condition), encode.go (the spec hash), apply.go (create or update),
// names.go (the envelope's names, for the hub's callers).
//
// One ManifestWork per (FleetSet, cluster), named WorkName in the namespace
// named after the ManagedCluster, carries, in apply order:
//   - the FleetSet's namespace (orphaned when the work is deleted, so removing
//     a FleetSet never deletes a namespace);
//   - the headless Service spec.serviceName, selecting fleetset.io/set=<fleetset>;
//   - the fleet view ConfigMap <fleetset>-fleet (v1alpha1.FleetView as JSON);
//   - per subset on that cluster, its SubsetPlacement then its StatefulSet,
//     both named <fleetset>-<subset>.
//
// Every manifest is applied with server-side apply (force), leaving member
// defaults and other field owners alone. The StatefulSet asks for
// statusFeedback of its replica counts, revisions, fleetset.io/revision
// annotation, generation and observedGeneration; Feedback reads it back.
//
// One more ManifestWork per cluster, ResyncWork, carries the resync Lease
// (see the contract in package api/v1alpha1).
package manifestwork
