// Package tenancy decides what a FleetSet may reach, the way an Open Cluster
// Management hub decides it for any workload:
//   - which member clusters: those of a ManagedClusterSet bound to the
//     FleetSet's namespace by a ManagedClusterSetBinding whose condition Bound
//     is True (ClusterSets; the rule of OCM's Placement and of
//     open-cluster-management.io/sdk-go pkg/apis/cluster/v1beta2, which this
//     package follows on the API types rather than importing: that module
//     would move the whole build's golang.org/x and gRPC versions);
//   - which pod templates: those the member namespace's Pod Security level
//     admits (PodSecurity, with the Pod Security Admission library's own
//     checks).
//
// It reads; it never writes. The hub's controller turns a refusal into a
// Degraded condition and an event naming the cluster and what is missing.
package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterSets is the cluster sets bound to one hub namespace: the names of
// the ManagedClusterSets of its ManagedClusterSetBindings whose Bound
// condition is True, with their cluster selectors.
type ClusterSets struct {
	// Namespace is the hub namespace (the FleetSet's).
	Namespace string
	// Bound are the bound sets by name, each with its cluster selector; a
	// set whose ManagedClusterSet is missing or whose selector cannot be
	// built has a nil selector and selects nothing.
	Bound map[string]labels.Selector
	// Unbound names the bindings in Namespace that are not Bound (their set
	// missing, or the binding not yet accepted), for messages.
	Unbound []string
}

// ReadClusterSets lists the ManagedClusterSetBindings of namespace and
// gets the ManagedClusterSet of each bound one, through c (the hub's cached
// client). It returns an error only when a read fails; bindings that are not
// Bound and sets that are missing are recorded, not errors.
func ReadClusterSets(ctx context.Context, c client.Reader, namespace string) (*ClusterSets, error) {
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := c.List(ctx, &bindings, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterSetBindings in %s: %w", namespace, err)
	}
	var sets clusterv1beta2.ManagedClusterSetList
	if len(bindings.Items) > 0 {
		if err := c.List(ctx, &sets); err != nil {
			return nil, fmt.Errorf("listing ManagedClusterSets: %w", err)
		}
	}
	return NewClusterSets(namespace, bindings.Items, sets.Items), nil
}

// NewClusterSets resolves bindings (those of namespace are used) against
// the cluster sets sets: a binding counts when its Bound condition is True,
// as in OCM's GetBoundManagedClusterSetBindings.
func NewClusterSets(namespace string, bindings []clusterv1beta2.ManagedClusterSetBinding, sets []clusterv1beta2.ManagedClusterSet) *ClusterSets {
	byName := make(map[string]*clusterv1beta2.ManagedClusterSet, len(sets))
	for i := range sets {
		byName[sets[i].Name] = &sets[i]
	}
	cs := &ClusterSets{Namespace: namespace, Bound: map[string]labels.Selector{}}
	for _, b := range bindings {
		if b.Namespace != namespace {
			continue
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType) {
			cs.Unbound = append(cs.Unbound, b.Spec.ClusterSet)
			continue
		}
		sel, err := ClusterSelector(byName[b.Spec.ClusterSet])
		if err != nil {
			sel = nil
		}
		cs.Bound[b.Spec.ClusterSet] = sel
	}
	slices.Sort(cs.Unbound)
	return cs
}

// ClusterSelector returns the label selector of ManagedClusters that set
// holds: the label cluster.open-cluster-management.io/clusterset=<name> for
// selectorType ExclusiveClusterSetLabel (or unset), spec.clusterSelector's
// labelSelector for LabelSelector (an empty one holds every cluster, as the
// set "global" does). It returns nil for a nil set and an error for an
// unknown selector type or an invalid selector (sdk-go's
// BuildClusterSelector).
func ClusterSelector(set *clusterv1beta2.ManagedClusterSet) (labels.Selector, error) {
	if set == nil {
		return nil, nil
	}
	switch t := set.Spec.ClusterSelector.SelectorType; t {
	case "", clusterv1beta2.ExclusiveClusterSetLabel:
		return labels.SelectorFromSet(labels.Set{clusterv1beta2.ClusterSetLabel: set.Name}), nil
	case clusterv1beta2.LabelSelector:
		if set.Spec.ClusterSelector.LabelSelector == nil {
			return labels.Everything(), nil
		}
		return metav1.LabelSelectorAsSelector(set.Spec.ClusterSelector.LabelSelector)
	default:
		return nil, fmt.Errorf("ManagedClusterSet %s: unknown spec.clusterSelector.selectorType %q", set.Name, t)
	}
}

// Admits reports whether cluster belongs to a set bound to the namespace,
// and the names of those sets (sorted).
func (cs *ClusterSets) Admits(cluster *clusterv1.ManagedCluster) (bool, []string) {
	var via []string
	for name, sel := range cs.Bound {
		if sel != nil && sel.Matches(labels.Set(cluster.Labels)) {
			via = append(via, name)
		}
	}
	slices.Sort(via)
	return len(via) > 0, via
}

// Refusal says why clusterName may not be used from the namespace, for a
// condition message and an event: the sets bound there (or that none is),
// the bindings not Bound, and what to do. cluster may be nil (the
// ManagedCluster does not exist).
func (cs *ClusterSets) Refusal(field, clusterName string, cluster *clusterv1.ManagedCluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: cluster %s is in no ManagedClusterSet bound to namespace %s", field, clusterName, cs.Namespace)
	bound := make([]string, 0, len(cs.Bound))
	for n := range cs.Bound {
		bound = append(bound, n)
	}
	slices.Sort(bound)
	if len(bound) == 0 {
		b.WriteString(" (no ManagedClusterSetBinding there is Bound")
	} else {
		fmt.Fprintf(&b, " (bound: %s", strings.Join(bound, ", "))
	}
	if len(cs.Unbound) > 0 {
		fmt.Fprintf(&b, "; not Bound: %s", strings.Join(cs.Unbound, ", "))
	}
	if cluster != nil {
		if set := cluster.Labels[clusterv1beta2.ClusterSetLabel]; set != "" {
			fmt.Fprintf(&b, "; %s is in set %s", clusterName, set)
		}
	}
	b.WriteString("): create a ManagedClusterSetBinding in the namespace for a set holding the cluster (it needs managedclustersets/bind on that set)")
	return b.String()
}
