package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/tenancy"
)

// admitTenancy is the reconcile step that checks, before anything is
// planned, what the FleetSet may reach (package tenancy): every cluster its
// subsets name and may fall back to must be in a ManagedClusterSet bound to
// its namespace, and its pod template must pass its Pod Security level. A
// refusal is a ClusterNotBound or PodSecurityViolation problem naming the
// field, and false: the reconcile then plans, writes and deletes nothing,
// and reports. A cluster whose ManagedCluster does not exist is left to
// checkClusters (ClusterNotFound). Errors are failed reads.
func (r *FleetSetReconciler) admitTenancy(ctx context.Context, st *state) (bool, error) {
	fs := st.fs
	ok := true
	if err := tenancy.CheckPodTemplate("spec.template", string(fs.Spec.PodSecurityLevelOrDefault()), &fs.Spec.Template); err != nil {
		st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonPodSecurity, Message: err.Error()})
		ok = false
	}
	sets, err := tenancy.ReadClusterSets(ctx, r.Client, fs.Namespace)
	if err != nil {
		return false, err
	}
	clusters := map[string]*clusterv1.ManagedCluster{}
	check := func(subset, field, name string) error {
		mc, seen := clusters[name]
		if !seen {
			mc = &clusterv1.ManagedCluster{}
			switch err := r.Get(ctx, types.NamespacedName{Name: name}, mc); {
			case apierrors.IsNotFound(err):
				mc = nil
			case err != nil:
				return fmt.Errorf("getting ManagedCluster %s: %w", name, err)
			}
			clusters[name] = mc
		}
		if mc == nil {
			return nil
		}
		if admitted, _ := sets.Admits(mc); !admitted {
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonClusterNotBound, Subset: subset, Cluster: name,
				Message: sets.Refusal(field, name, mc)})
			ok = false
		}
		return nil
	}
	for i, s := range fs.Spec.Topology.Subsets {
		if s.Cluster != "" {
			if err := check(s.Name, fmt.Sprintf("spec.topology.subsets[%d].cluster", i), s.Cluster); err != nil {
				return false, err
			}
		}
		for j, c := range s.FallbackClusters {
			if err := check(s.Name, fmt.Sprintf("spec.topology.subsets[%d].fallbackClusters[%d]", i, j), c); err != nil {
				return false, err
			}
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
