package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// Clusters: what both controllers read of the ManagedClusters (their
// availability and the out-of-service taint), the FleetSet indexes by
// cluster, and the reconcile step that checks each subset's cluster.

// ClusterIndex is the FleetSet field index holding the ManagedClusters a
// FleetSet's subsets use or may be relocated to (clustersOf: the clusters
// of spec.topology.subsets[] and status.subsets[], and fallbackClusters).
const ClusterIndex = "spec.topology.subsets.cluster"

// FleetSet indexes by cluster of the resync lease controller, so that its
// reads do not grow with the FleetSets a cluster holds.
const (
	// liveClusterIndex is ClusterIndex for FleetSets not being deleted.
	liveClusterIndex = "fleetset.io/live-cluster"
	// movedFromIndex holds, per FleetSet, the home clusters of its subsets
	// in failover that run elsewhere.
	movedFromIndex = "fleetset.io/moved-from"
)

// isAvailable reports whether mc's ManagedClusterConditionAvailable is True.
func isAvailable(mc *clusterv1.ManagedCluster) bool {
	return apimeta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
}

// outOfService reports whether mc carries the v1alpha1.TaintOutOfService
// taint: an operator's confirmation that it runs none of its pods.
func outOfService(mc *clusterv1.ManagedCluster) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == fleetv1.TaintOutOfService {
			return true
		}
	}
	return false
}

// availabilityChanged passes ManagedCluster creations and deletions, and
// updates that change the ManagedClusterConditionAvailable status: the
// registration agent updates ManagedCluster status often for other reasons.
func availabilityChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
			n, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
			if !ok1 || !ok2 {
				return true
			}
			// Labels: a cluster joins or leaves a ManagedClusterSet by them.
			return isAvailable(o) != isAvailable(n) || outOfService(o) != outOfService(n) || !maps.Equal(o.Labels, n.Labels)
		},
	}
}

// fleetSetsOnCluster maps a ManagedCluster to the FleetSets with a subset
// there (ClusterIndex).
func (r *FleetSetReconciler) fleetSetsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1.FleetSetList
	// Only the keys are read: the cache's objects, not copies.
	if err := r.List(ctx, &list, client.MatchingFields{ClusterIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing FleetSets on cluster", "cluster", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
	}
	return out
}

// clustersOf is the ClusterIndex function: the clusters a FleetSet's subsets
// use (spec and status) or may be relocated to (fallbackClusters), so the
// hub hears of their availability and keeps their resync leases.
func clustersOf(o client.Object) []string {
	fs, ok := o.(*fleetv1.FleetSet)
	if !ok {
		return nil
	}
	out := fleetSetClusters(fs, true)
	for _, s := range fs.Spec.Topology.Subsets {
		for _, c := range s.FallbackClusters {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// liveClustersOf is the liveClusterIndex function: clustersOf for a
// FleetSet not being deleted.
func liveClustersOf(o client.Object) []string {
	if !o.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return clustersOf(o)
}

// movedFromOf is the movedFromIndex function.
func movedFromOf(o client.Object) []string {
	fs, ok := o.(*fleetv1.FleetSet)
	if !ok {
		return nil
	}
	var out []string
	for _, ss := range fs.Status.Subsets {
		if c := movedFrom(fs, ss); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// movedFrom returns the home cluster of status subset ss of fs when ss is
// in failover and runs elsewhere, else "".
func movedFrom(fs *fleetv1.FleetSet, ss fleetv1.SubsetStatus) string {
	if ss.Failover == "" || ss.Failover == fleetv1.SubsetMoving {
		return "" // a spec move is two-phase: nothing runs in the new cluster yet
	}
	for _, s := range fs.Spec.Topology.Subsets {
		if s.Name == ss.Name {
			if s.Cluster == ss.Cluster {
				return ""
			}
			return s.Cluster
		}
	}
	return ""
}

// fleetSetClusters returns, once each and in order, the clusters of fs's
// subsets in its spec and, with withStatus, in its status.
func fleetSetClusters(fs *fleetv1.FleetSet, withStatus bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, s := range fs.Spec.Topology.Subsets {
		add(s.Cluster)
	}
	if withStatus {
		for _, s := range fs.Status.Subsets {
			add(s.Cluster)
		}
	}
	return out
}

// readClusters reads, once per reconcile, every ManagedCluster the FleetSet
// uses or may use (clustersOf) into st.clusters, where the tenancy, failover
// and cluster checks look them up.
func (r *FleetSetReconciler) readClusters(ctx context.Context, st *state) error {
	st.clusters = map[string]*clusterv1.ManagedCluster{}
	for _, name := range clustersOf(st.fs) {
		mc := &clusterv1.ManagedCluster{}
		switch err := r.Get(ctx, types.NamespacedName{Name: name}, mc); {
		case apierrors.IsNotFound(err):
			mc = nil
		case err != nil:
			return fmt.Errorf("getting ManagedCluster %s: %w", name, err)
		}
		st.clusters[name] = mc
	}
	return nil
}

// checkClusters builds st.subsets from the placed plan, the rendering and
// the failover decision (same order), and records whether each subset's
// cluster exists and is Available (a ClusterNotFound or ClusterUnavailable
// problem otherwise).
func checkClusters(st *state, placed []plan.Subset, rendered []renderedSubset, fo []subsetFailover) {
	for i, p := range placed {
		mc := st.clusters[p.Cluster]
		sp := subsetPlan{planned: p, rendered: rendered[i], subsetFailover: fo[i], clusterExists: mc != nil, clusterAvailable: mc != nil && isAvailable(mc)}
		switch {
		case !sp.clusterExists:
			st.report(subsetProblem(fleetv1.ReasonClusterNotFound, p.Name, p.Cluster,
				"spec.topology.subsets.cluster: ManagedCluster not found; its ManifestWork is not written"))
		case !sp.clusterAvailable:
			st.report(subsetProblem(fleetv1.ReasonClusterUnavailable, p.Name, p.Cluster, "ManagedCluster is not Available"))
		}
		st.subsets = append(st.subsets, sp)
	}
}
