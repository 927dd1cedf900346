package controller

import (
	"context"
	"fmt"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/placement"
)

// choosePlacementSubsets is the reconcile step of a FleetSet whose clusters
// an OCM Placement chooses (spec.topology.placementRef): it reads the
// Placement's decisions and replaces st.fs with a copy whose
// spec.topology.subsets are the subsets package placement derives from
// them and from status.subsets, so every later step treats them as written
// subsets. The FleetSet's stored spec is never written. A Placement that
// decides no cluster is a PlacementEmpty problem. Errors are failed reads.
func (r *FleetSetReconciler) choosePlacementSubsets(ctx context.Context, st *state) error {
	ref := st.fs.Spec.Topology.PlacementRef
	if ref == nil {
		return nil
	}
	decided, err := placement.Decided(ctx, r.Client, st.fs.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if len(decided) == 0 {
		st.report(fleetProblem(fleetv1.ReasonPlacementEmpty,
			fmt.Sprintf("spec.topology.placementRef: Placement %s/%s decides no cluster", st.fs.Namespace, ref.Name)))
	}
	synth := st.fs.DeepCopy()
	synth.Spec.Topology.Subsets = fittingSubsets(st, placement.Subsets(ref, decided, st.fs.Status.Subsets))
	st.fs = synth
	return nil
}

// fittingSubsets returns subsets without those whose StatefulSet name
// (<fleetset>-<subset>, the subset named after its decided cluster) is
// over v1alpha1.MaxStatefulSetNameLength: no pod of it could ever be
// created (its names would be over 63 characters), so it is not created,
// and a SubsetNameTooLong problem names the field and the limit. Admission
// refuses such names in spec.topology.subsets and placementRef.shares, but
// cannot know which clusters a Placement decides.
func fittingSubsets(st *state, subsets []fleetv1.Subset) []fleetv1.Subset {
	out := subsets[:0:0]
	for _, s := range subsets {
		sts := manifestwork.StatefulSetName(st.fs.Name, s.Name)
		if len(sts) <= fleetv1.MaxStatefulSetNameLength {
			out = append(out, s)
			continue
		}
		st.report(subsetProblem(fleetv1.ReasonSubsetNameTooLong, s.Name, s.Cluster, fmt.Sprintf(
			"spec.topology.placementRef: Placement %s/%s decides cluster %s, and its subset's StatefulSet name %s would be %d characters, over %d "+
				"(its pod names <statefulset>-<ordinal> and controller-revision-hash label must fit in 63): the subset is not created and its share goes to the others; "+
				"shorten metadata.name to at most %d characters, or leave the cluster out of the Placement",
			st.fs.Namespace, st.fs.Spec.Topology.PlacementRef.Name, s.Name, sts, len(sts), fleetv1.MaxStatefulSetNameLength,
			max(0, fleetv1.MaxStatefulSetNameLength-1-len(s.Name)))))
	}
	return out
}

// fleetSetsOfPlacement maps a PlacementDecision to the FleetSets of its
// namespace whose placementRef names its Placement.
func (r *FleetSetReconciler) fleetSetsOfPlacement(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1beta1.PlacementLabel]
	if name == "" {
		return nil
	}
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, fs := range list.Items {
		if ref := fs.Spec.Topology.PlacementRef; ref != nil && ref.Name == name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
		}
	}
	return out
}
