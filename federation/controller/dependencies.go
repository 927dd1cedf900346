package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// dependencyReads is what one reconcile has read and reported of a
// FleetSet's ConfigMaps and Secrets (spec.dependencies Auto), shared by its
// subsets.
type dependencyReads struct {
	// read maps kind/name to the hub object; nil: not found.
	read map[string]runtime.Object
	// fleetRefs are the references of the fleet's template, reported once
	// naming spec.template; those only a subset's overrides add, per subset.
	fleetRefs map[string]bool
	// reported are the problems already reported, by subset/kind/name.
	reported map[string]bool
}

// newDependencyReads returns the empty reads of fs's reconcile.
func newDependencyReads(fs *fleetv1.FleetSet) *dependencyReads {
	d := &dependencyReads{read: map[string]runtime.Object{}, fleetRefs: map[string]bool{}, reported: map[string]bool{}}
	for _, ref := range manifestwork.References(&fs.Spec.Template) {
		d.fleetRefs[ref.Kind+"/"+ref.Name] = true
	}
	return d
}

// subsetDependencies returns the ConfigMaps and Secrets subset's template
// tmpl references (field names where the subset is in the spec), read
// from the FleetSet's own namespace on the hub and never another (a pod
// template's references are namespace-local), as they are delivered
// (manifestwork.Dependency). A required one missing (DependencyMissing) or
// refused (refusedDependency, InvalidSpec) returns false: nothing is
// written. Errors are failed reads.
func (r *FleetSetReconciler) subsetDependencies(ctx context.Context, st *state, deps *dependencyReads, subset, field string, tmpl *corev1.PodTemplateSpec) ([]runtime.Object, bool, error) {
	fs := st.fs
	ok := true
	var out []runtime.Object
	for _, ref := range manifestwork.References(tmpl) {
		key := ref.Kind + "/" + ref.Name
		obj, seen := deps.read[key]
		if !seen {
			var err error
			if obj, err = r.readDependency(ctx, fs.Namespace, ref); err != nil {
				return nil, false, err
			}
			deps.read[key] = obj
		}
		reason, msg := "", ""
		switch why := refusedDependency(obj); {
		case obj == nil && !ref.Optional:
			reason, msg = fleetv1.ReasonDependencyMissing, "does not exist in namespace "+fs.Namespace+" on the hub; holding: no work is written (nothing is removed from any member) until it exists, the reference is removed or marked optional, or spec.dependencies is None"
		case why != "":
			reason, msg = fleetv1.ReasonInvalidSpec, why+"; nothing is delivered until the reference is removed or spec.dependencies is None"
		}
		if reason != "" {
			ok = false
			owner, where := subset, field+"'s overrides"
			if deps.fleetRefs[key] {
				owner, where = "", "spec.template"
			}
			if !deps.reported[owner+"/"+key] {
				deps.reported[owner+"/"+key] = true
				st.report(subsetProblem(reason, owner, "", fmt.Sprintf("%s %s, referenced by %s (%s), %s", ref.Kind, ref.Name, where, ref.Where, msg)))
			}
			continue
		}
		if obj == nil {
			continue
		}
		d, err := manifestwork.Dependency(fs, obj)
		if err != nil {
			return nil, false, err
		}
		out = append(out, d)
	}
	return out, ok, nil
}

// refusedDependency says why the hub never copies hub object obj to a
// member, "" when it may: a Secret of type kubernetes.io/service-account-token
// is a credential of the hub itself (a ServiceAccount's token on the hub),
// never the workload's.
func refusedDependency(obj runtime.Object) string {
	if s, ok := obj.(*corev1.Secret); ok && s.Type == corev1.SecretTypeServiceAccountToken {
		return fmt.Sprintf("is of type %s: a hub ServiceAccount's credential, never copied to a member", corev1.SecretTypeServiceAccountToken)
	}
	return ""
}
