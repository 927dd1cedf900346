package v1alpha1

import "slices"

// Cordoning a member cluster for one FleetSet (spec.topology.cordonedClusters,
// written by `kubectl fleetset cordon`) is kubectl cordon's contract for a
// FleetSet and a cluster: no new instance of the FleetSet goes there, and
// what runs there keeps running.
//
//   - division: a subset whose spec cluster, or the cluster it runs on now
//     (status.subsets[].cluster, after a relocation), is cordoned holds at
//     most the replicas status.subsets records for it, wherever it runs
//     (none recorded: 0); it may shrink, never grow, and the replicas it
//     cannot take go to the other subsets by their shares (see CordonCap).
//     Cordoning never removes an instance: cordoning the home cluster a
//     subset was relocated away from keeps the relocated instances where
//     they run. When the caps and the other subsets' maxReplicas cannot
//     hold spec.replicas, the division overflows as it does for
//     maxReplicas and reports DivisionInfeasible;
//   - failover: a cordoned cluster is never a relocation target, and a
//     relocated subset whose home is cordoned does not fail back (it stays
//     where it runs until the home is uncordoned).
//
// Uncordoning removes the cluster from the list; the next division gives
// its subsets their full shares again.

// Cordoned reports whether cluster is in CordonedClusters.
func (t *FleetTopology) Cordoned(cluster string) bool {
	return slices.Contains(t.CordonedClusters, cluster)
}

// CordonCap returns the most replicas subset s may hold while it is
// cordoned, and whether it is: its spec cluster, or the cluster status
// records it running on now, is in CordonedClusters. The cap is the
// replicas status.subsets records for the subset, on whichever cluster it
// runs (a relocated subset's instances run on its fallback cluster: a cap
// of 0 there would remove them), else 0: a subset not yet delivered gets
// no instance on a cordoned cluster.
func (fs *FleetSet) CordonCap(s Subset) (int32, bool) {
	for _, ss := range fs.Status.Subsets {
		if ss.Name != s.Name {
			continue
		}
		if fs.Spec.Topology.Cordoned(s.Cluster) || (ss.Cluster != "" && fs.Spec.Topology.Cordoned(ss.Cluster)) {
			return ss.Replicas, true
		}
		return 0, false
	}
	return 0, fs.Spec.Topology.Cordoned(s.Cluster)
}
