package controller

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// The reconcile step that attaches to each subset the FleetSet's
// ManifestWork in its cluster and what the work agent feeds back of it.

// observeWorks attaches to each subset's plan the FleetSet's ManifestWork
// in its cluster and the feedback of the subset's StatefulSet there, each
// work's feedback decoded once; with clusters, only to the subsets in
// those clusters (whose work this reconcile wrote or deleted).
func (st *state) observeWorks(clusters ...string) {
	decoded := map[*workv1.ManifestWork]map[string]manifestwork.StatefulSetFeedback{}
	if st.feedbackProblems == nil {
		st.feedbackProblems = map[string]problem{}
	}
	for i := range st.subsets {
		sp := &st.subsets[i]
		if len(clusters) > 0 && !slices.Contains(clusters, sp.planned.Cluster) {
			continue
		}
		sp.work, sp.feedback, sp.roles, sp.actions = st.existingWorks[st.workKey(sp.planned.Cluster)], nil, nil, nil
		if sp.work == nil {
			continue
		}
		if st.fs.Spec.LifecycleActions != nil {
			if r, ok := manifestwork.ActionsFeedback(sp.work)[manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name)]; ok {
				sp.actions = &r
			}
		}
		if len(st.fs.Spec.Roles) > 0 {
			if r, ok := manifestwork.RoleFeedback(sp.work)[manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name)]; ok {
				sp.roles = &r
			}
		}
		fb, ok := decoded[sp.work]
		if !ok {
			fb = manifestwork.Feedback(sp.work)
			decoded[sp.work] = fb
		}
		name := manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name)
		f, ok := fb[name]
		if !ok {
			continue
		}
		// A member's report is checked before anything uses it.
		if err := f.Validate(max(sp.planned.BlockSize, sp.planned.Replicas)); err != nil {
			st.feedbackProblems[sp.planned.Name] = subsetProblem(fleetv1.ReasonInvalidFeedback, sp.planned.Name, sp.planned.Cluster,
				fmt.Sprintf("status fed back for StatefulSet %s ignored: %v", name, err))
			continue
		}
		delete(st.feedbackProblems, sp.planned.Name)
		f = f.Clamp(sp.planned.Replicas)
		sp.feedback = &f
	}
}

// recordWrites records the works this reconcile wrote (their status as the
// cache held it) and deleted, and observes the subsets in their clusters
// anew.
func (st *state) recordWrites(written []*workv1.ManifestWork, deleted []types.NamespacedName) {
	var clusters []string
	for _, w := range written {
		st.existingWorks[client.ObjectKeyFromObject(w)] = w
		clusters = append(clusters, w.Namespace)
	}
	for _, key := range deleted {
		delete(st.existingWorks, key)
		clusters = append(clusters, key.Namespace)
	}
	if len(clusters) > 0 {
		st.observeWorks(clusters...)
	}
}
