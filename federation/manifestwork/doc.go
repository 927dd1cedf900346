// Package manifestwork renders what fleetset-hub delivers to member clusters
// as Open Cluster Management ManifestWorks, and reads back what the work
// agents report. Rendering and reading are pure; ApplyTo is its one write.
//
// Files by concern: names.go (object and work names, owner labels),
// manifestwork.go (rendering), feedback.go (what the work agent reports:
// statusFeedback and the Applied condition), lease.go (the resync work),
// encode.go (manifest encoding and the spec hash), apply.go (create or
// update).
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
// Every manifest is applied with server-side apply (force), so member-side
// defaults and other field owners are left alone. The StatefulSet asks for
// statusFeedback of replicas, readyReplicas, updatedReplicas,
// availableReplicas, currentRevision, updateRevision, its fleetset.io/revision
// annotation, generation and observedGeneration; Feedback reads it back.
//
// One more ManifestWork per cluster, ResyncWork, carries the resync Lease
// (see the contract in package api/v1alpha1).
package manifestwork
