package v1alpha1

import "slices"

// Cordoning a member cluster for one FleetSet (spec.topology.cordonedClusters,
// written by `kubectl fleetset cordon`) is kubectl cordon's contract for a
// FleetSet and a cluster: no new instance of the FleetSet goes there, and
// what runs there keeps running.
//
//   - division: a subset whose cluster is cordoned holds at most the
//     replicas status.subsets records for it on that cluster (none: 0);
//     it may shrink, never grow, and the replicas it cannot take go to the
//     other subsets by their shares (see CordonCap). When the caps and the
//     other subsets' maxReplicas cannot hold spec.replicas, the division
//     overflows as it does for maxReplicas and reports DivisionInfeasible;
//   - failover: a cordoned cluster is never a relocation target.
//
// Uncordoning removes the cluster from the list; the next division gives
// its subsets their full shares again.

// Cordoned reports whether cluster is in CordonedClusters.
func (t *FleetTopology) Cordoned(cluster string) bool {
	return slices.Contains(t.CordonedClusters, cluster)
}

// CordonCap returns the most replicas subset s may hold while its spec
// cluster is cordoned, and whether it is: the replicas status records for
// the subset when it runs on that cluster now, else 0.
func (fs *FleetSet) CordonCap(s Subset) (int32, bool) {
	if !fs.Spec.Topology.Cordoned(s.Cluster) {
		return 0, false
	}
	for _, ss := range fs.Status.Subsets {
		if ss.Name == s.Name && ss.Cluster == s.Cluster {
			return ss.Replicas, true
		}
	}
	return 0, true
}
