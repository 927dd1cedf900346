package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/tenancy"
)

// The platform team's side of tenancy (docs/operations.md#tenancy): the
// Pod Security level of a hub namespace (its label
// v1alpha1.LabelPodSecurityLevel), and the check that every cluster a work
// goes to, wherever the failover state places it, is bound to the
// FleetSet's namespace.

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// tenancyRefusal is an error that refuses the FleetSet (InvalidSpec), not a
// failed read.
type tenancyRefusal struct{ error }

// isTenancyRefusal reports whether err is a tenancyRefusal.
func isTenancyRefusal(err error) bool {
	var r tenancyRefusal
	return errors.As(err, &r)
}

// podSecurityLevel returns the level fs's pods run at: its namespace's
// platform level (tenancy.PlatformLevel, from the cached metadata of the
// namespace), or fs's spec.podSecurityLevel when stricter. It returns a
// tenancyRefusal when the label is invalid or the spec asks for more than
// the platform allows, else the read's error.
func (r *FleetSetReconciler) podSecurityLevel(ctx context.Context, fs *fleetv1.FleetSet) (fleetv1.PodSecurityLevel, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, types.NamespacedName{Name: fs.Namespace}, ns); err != nil {
		return "", fmt.Errorf("reading namespace %s: %w", fs.Namespace, err)
	}
	platform, err := tenancy.PlatformLevel(fs.Namespace, ns.Labels)
	if err != nil {
		return "", tenancyRefusal{err}
	}
	level, err := tenancy.EffectiveLevel(fs.Namespace, platform, fs.Spec.PodSecurityLevel)
	if err != nil {
		return "", tenancyRefusal{err}
	}
	return level, nil
}

// fleetSetsOfNamespace maps a Namespace (its metadata) to its FleetSets,
// whose platform level its labels set.
func (r *FleetSetReconciler) fleetSetsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.InNamespace(o.GetName()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
	}
	return out
}

// admitPlaced checks every cluster the failover step placed a subset on
// (its spec cluster, a fallback, or where status.subsets says it runs)
// against the cluster sets bound to the namespace: the status is not
// trusted to name only bound clusters. A cluster that exists and is not
// admitted is a ClusterNotBound problem and holds every write
// (st.holdWrites), as an unbound spec cluster does.
func admitPlaced(st *state, placed []plan.Subset) {
	if st.clusterSets == nil {
		return
	}
	for _, p := range placed {
		mc := st.clusters[p.Cluster]
		if mc == nil {
			continue
		}
		if admitted, _ := st.clusterSets.Admits(mc); !admitted {
			field := fmt.Sprintf("status.subsets[name=%s].cluster (where the failover state places the subset)", p.Name)
			st.report(subsetProblem(fleetv1.ReasonClusterNotBound, p.Name, p.Cluster, st.clusterSets.Refusal(field, p.Cluster, mc)))
			st.holdWrites = true
		}
	}
}

// deliveredFleetSet returns st.fs as its works render it: when the
// effective Pod Security level (the platform's, or the FleetSet's own when
// stricter) differs from spec.podSecurityLevel, a shallow copy carrying the
// effective level there, which labels the member namespace the works
// create; else st.fs. The copy is read-only, as st.fs is.
func (st *state) deliveredFleetSet() *fleetv1.FleetSet {
	if st.podSecurityLevel == "" || st.podSecurityLevel == st.fs.Spec.PodSecurityLevel {
		return st.fs
	}
	fs := *st.fs
	fs.Spec.PodSecurityLevel = st.podSecurityLevel
	return &fs
}
