package controller

import (
	"context"
	"fmt"

	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/tenancy"
)

// admitTenancy checks what the FleetSet may reach (package tenancy): its
// namespace not reserved (InvalidSpec), its Pod Security level within the
// platform's for its namespace (InvalidSpec naming spec.podSecurityLevel),
// each existing cluster it names or falls back to in a ManagedClusterSet
// bound to its namespace, its pod template within the effective level. It
// records the effective level and the cluster sets in st. A refusal is a
// problem and false: nothing is planned or written. Errors are reads of
// the namespace or the cluster sets.
func (r *FleetSetReconciler) admitTenancy(ctx context.Context, st *state) (bool, error) {
	fs := st.fs
	if entry, reserved := tenancy.Reserved(fs.Namespace, r.ReservedNamespaces); reserved {
		st.report(fleetProblem(fleetv1.ReasonInvalidSpec, tenancy.ReservedRefusal(fs.Namespace, entry)))
		return false, nil
	}
	level, err := r.podSecurityLevel(ctx, fs)
	if err != nil {
		if !isTenancyRefusal(err) {
			return false, err
		}
		st.report(fleetProblem(fleetv1.ReasonInvalidSpec, err.Error()))
		return false, nil
	}
	st.podSecurityLevel = level
	ok := true
	if err := tenancy.CheckPodTemplate("spec.template", string(level), &fs.Spec.Template); err != nil {
		st.report(fleetProblem(fleetv1.ReasonPodSecurity, err.Error()))
		ok = false
	}
	sets, err := tenancy.ReadClusterSets(ctx, r.Client, fs.Namespace)
	if err != nil {
		return false, err
	}
	st.clusterSets = sets
	check := func(subset, field, name string) {
		mc := st.clusters[name]
		if mc == nil {
			return
		}
		if admitted, _ := sets.Admits(mc); !admitted {
			st.report(subsetProblem(fleetv1.ReasonClusterNotBound, subset, name, sets.Refusal(field, name, mc)))
			ok = false
		}
	}
	for i, s := range fs.Spec.Topology.Subsets {
		if s.Cluster != "" {
			check(s.Name, fmt.Sprintf("spec.topology.subsets[%d].cluster", i), s.Cluster)
		}
		for j, c := range s.FallbackClusters {
			check(s.Name, fmt.Sprintf("spec.topology.subsets[%d].fallbackClusters[%d]", i, j), c)
		}
	}
	return ok, nil
}

// fleetSetsInNamespace maps a ManagedClusterSetBinding to the FleetSets of
// its namespace, whose reach it changes.
func (r *FleetSetReconciler) fleetSetsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
	}
	return out
}

// fleetSetsBoundTo maps a ManagedClusterSet to the FleetSets of every
// namespace with a binding to it.
func (r *FleetSetReconciler) fleetSetsBoundTo(ctx context.Context, o client.Object) []reconcile.Request {
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := r.List(ctx, &bindings); err != nil {
		return nil
	}
	var out []reconcile.Request
	seen := map[string]bool{}
	for _, b := range bindings.Items {
		if b.Spec.ClusterSet == o.GetName() && !seen[b.Namespace] {
			seen[b.Namespace] = true
			out = append(out, r.fleetSetsInNamespace(ctx, &b)...)
		}
	}
	return out
}
