package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/tenancy"
)

// The reconcile step between planning and delivery that gives each subset
// its own pod template (its overrides) and the ConfigMaps and Secrets
// delivered with it (spec.dependencies).

// DependencyIndex is the FleetSet field index holding, as "ConfigMap/<name>"
// and "Secret/<name>", every object its pod template (and each subset's
// overridden one) references, so that an edit of one reconciles the
// FleetSets of its namespace that deliver it.
const DependencyIndex = "spec.dependencies"

// dependenciesOf is the DependencyIndex function: nothing for
// spec.dependencies None or a template that does not render.
func dependenciesOf(o client.Object) []string {
	fs, ok := o.(*fleetv1.FleetSet)
	if !ok || fs.Spec.DependenciesOrDefault() != fleetv1.DependenciesAuto {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(tmpl *corev1.PodTemplateSpec) {
		for _, ref := range manifestwork.References(tmpl) {
			if k := ref.Kind + "/" + ref.Name; !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	add(&fs.Spec.Template)
	for i := range fs.Spec.Topology.Subsets {
		if tmpl, _, err := manifestwork.SubsetTemplate(fs, &fs.Spec.Topology.Subsets[i], ""); err == nil {
			add(tmpl)
		}
	}
	return out
}

// fleetSetsDelivering maps a ConfigMap or Secret (its metadata: the hub
// watches only that) to the FleetSets of its namespace that reference it.
func (r *FleetSetReconciler) fleetSetsDelivering(kind string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list fleetv1.FleetSetList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{DependencyIndex: kind + "/" + o.GetName()}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	}
}

// renderSubsets renders each planned subset (same order): its templates
// after its overrides (manifestwork.SubsetTemplate), checked against the
// Pod Security level, and with spec.dependencies Auto the ConfigMaps and
// Secrets they reference, with their hash. Overrides that do not apply
// (InvalidSpec), a forbidden template (PodSecurityViolation) or a missing
// dependency (DependencyMissing) return false: nothing is written.
func (r *FleetSetReconciler) renderSubsets(ctx context.Context, st *state, planned []plan.Subset) ([]renderedSubset, bool, error) {
	fs := st.fs
	ok := true
	out := make([]renderedSubset, len(planned))
	index := map[string]int{}
	for i, s := range fs.Spec.Topology.Subsets {
		index[s.Name] = i
	}
	deps := newDependencyReads(fs)
	for k, sp := range planned {
		var spec *fleetv1.Subset
		field := "spec.template"
		if i, found := index[sp.Name]; found {
			spec = &fs.Spec.Topology.Subsets[i]
			field = fmt.Sprintf("spec.topology.subsets[%d]", i)
		}
		tmpl, claims, err := manifestwork.SubsetTemplate(fs, spec, field)
		if err != nil {
			st.report(subsetProblem(fleetv1.ReasonInvalidSpec, sp.Name, "", err.Error()))
			ok = false
			continue
		}
		if err := tenancy.CheckScheduling(field+" (spec.template with the subset's overrides)", tmpl); err != nil {
			st.report(subsetProblem(fleetv1.ReasonInvalidSpec, sp.Name, "", err.Error()))
			ok = false
			continue
		}
		if calls := fs.Spec.HTTPCallFields(); tmpl.Spec.HostNetwork && len(calls) > 0 {
			// The member refuses these calls to a pod on the node's
			// network (its IP is the node's): say so before delivering.
			st.report(subsetProblem(fleetv1.ReasonInvalidSpec, sp.Name, "", fmt.Sprintf(
				"%s (spec.template with the subset's overrides) sets hostNetwork, and %s would send HTTP requests to the pod IP, which is then the node's: "+
					"the member refuses them (they would reach whatever listens on that port of the node); use exec actions, or no hostNetwork",
				field, strings.Join(calls, ", "))))
			ok = false
			continue
		}
		if spec != nil && overridesTemplate(spec) {
			if err := tenancy.CheckPodTemplate(field+" (spec.template with the subset's overrides)", string(st.podSecurityLevel), tmpl); err != nil {
				st.report(subsetProblem(fleetv1.ReasonPodSecurity, sp.Name, "", err.Error()))
				ok = false
				continue
			}
		}
		out[k].template, out[k].claims = tmpl, claims
		if fs.Spec.DependenciesOrDefault() != fleetv1.DependenciesAuto {
			continue
		}
		var depsOK bool
		if out[k].dependencies, depsOK, err = r.subsetDependencies(ctx, st, deps, sp.Name, field, tmpl); err != nil {
			return nil, false, err
		}
		ok = ok && depsOK
		if out[k].dependenciesHash, err = manifestwork.DependenciesHash(out[k].dependencies); err != nil {
			return nil, false, err
		}
	}
	return out, ok, nil
}

// overridesTemplate reports whether s changes the pod template (not only
// the claim templates).
func overridesTemplate(s *fleetv1.Subset) bool {
	return len(s.ImageRegistryRewrites) > 0 || len(s.ContainerResources) > 0 || len(s.Tolerations) > 0 || s.Patch != nil
}

// readDependency returns a referenced ConfigMap or Secret of the hub; nil
// when it does not exist. The hub caches only their metadata: when the
// cached resourceVersion is the one of the copy last read (dependencyCopies),
// that copy is returned; otherwise the object is read live once and
// remembered, so a reconcile reads an object's content only after it
// changed.
func (r *FleetSetReconciler) readDependency(ctx context.Context, namespace string, ref manifestwork.DependencyRef) (runtime.Object, error) {
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	memo := ref.Kind + "/" + key.String()
	var obj client.Object = &corev1.ConfigMap{}
	if ref.Kind == manifestwork.KindSecret {
		obj = &corev1.Secret{}
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(ref.Kind))
	if err := r.Get(ctx, key, meta); err == nil {
		if c, ok := r.dependencyCopies.Load(memo); ok && c.(client.Object).GetResourceVersion() == meta.ResourceVersion {
			return c.(client.Object), nil
		}
	}
	switch err := r.liveReader().Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		r.dependencyCopies.Delete(memo)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", ref.Kind, key, err)
	}
	r.dependencyCopies.Store(memo, obj)
	return obj, nil
}
