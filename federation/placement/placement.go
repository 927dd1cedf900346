// Package placement turns the clusters an OCM Placement decides into a
// FleetSet's subsets (spec.topology.placementRef), so that the rest of the
// hub — division, ordinals, delivery, rollout, failover — treats them as if
// they were written in spec.topology.subsets.
//
// The rule, from the FleetSet API (api/v1alpha1 PlacementRef):
//   - each decided cluster is a subset named after it, with its share from
//     PlacementRef.Shares or an even part of the rest;
//   - subsets are sticky: every subset the FleetSet has (status.subsets)
//     stays, with its name and so its ordinal block; one whose cluster is no
//     longer decided moves to the decided cluster hosting the fewest
//     subsets (ties: by name), which the hub carries out as a two-phase move
//     (removed from the old cluster first, delivered with epoch + 1), and it
//     returns home when its cluster is decided again;
//   - every subset may fall back to the other decided clusters
//     (fallbackClusters) under failover policy Relocate.
//
// It reads the PlacementDecisions (Decided) and decides in a pure function
// (Subsets).
package placement

import (
	"context"
	"fmt"
	"slices"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Decided returns the clusters Placement namespace/name decides, sorted and
// once each: the union of its PlacementDecisions' status.decisions (they
// carry the label cluster.open-cluster-management.io/placement=<name>). A
// Placement without decisions gives none. Errors are failed reads.
func Decided(ctx context.Context, c client.Reader, namespace, name string) ([]string, error) {
	var list clusterv1beta1.PlacementDecisionList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions of Placement %s/%s: %w", namespace, name, err)
	}
	var out []string
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName != "" && !slices.Contains(out, cd.ClusterName) {
				out = append(out, cd.ClusterName)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Subsets returns the subsets of a placement-chosen FleetSet: ref's shares,
// the decided clusters (sorted) and the subsets it has now (status.subsets:
// name and the cluster each runs in), in that order — the subsets it has,
// in their order, then one per newly decided cluster. With no cluster
// decided, the subsets stay where they are (nothing is moved on a guess)
// and none is added.
func Subsets(ref *fleetv1.PlacementRef, decided []string, current []fleetv1.SubsetStatus) []fleetv1.Subset {
	shares := map[string]fleetv1.ClusterShare{}
	for _, s := range ref.Shares {
		shares[s.Cluster] = s
	}
	isDecided := func(c string) bool { return slices.Contains(decided, c) }
	hosted := map[string]int{} // decided cluster → subsets placed there so far
	var out []fleetv1.Subset
	var homeless []int // indexes in out of subsets whose clusters are not decided
	names := map[string]bool{}
	for _, ss := range current {
		if names[ss.Name] {
			continue
		}
		names[ss.Name] = true
		s := fleetv1.Subset{Name: ss.Name}
		switch {
		case isDecided(ss.Name): // home, or back home
			s.Cluster = ss.Name
		case isDecided(ss.Cluster): // moved earlier, its home still not decided
			s.Cluster = ss.Cluster
		case len(decided) == 0: // nowhere to go: stay
			s.Cluster = ss.Cluster
		default:
			homeless = append(homeless, len(out))
		}
		if s.Cluster != "" {
			hosted[s.Cluster]++
		}
		out = append(out, s)
	}
	for _, c := range decided {
		if !names[c] {
			names[c] = true
			out = append(out, fleetv1.Subset{Name: c, Cluster: c})
			hosted[c]++
		}
	}
	for _, i := range homeless {
		to := decided[0]
		for _, c := range decided[1:] {
			if hosted[c] < hosted[to] {
				to = c
			}
		}
		out[i].Cluster = to
		hosted[to]++
	}
	for i := range out {
		if sh, ok := shares[out[i].Name]; ok {
			out[i].Replicas = &sh.Replicas
		}
		for _, c := range decided {
			if c != out[i].Cluster {
				out[i].FallbackClusters = append(out[i].FallbackClusters, c)
			}
		}
	}
	return out
}
