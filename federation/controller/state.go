package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
)

// state is what one reconcile of a FleetSet reads and decides, filled in by
// its steps in order (see reconcile).
type state struct {
	// fs is the FleetSet being reconciled, as the cache holds it.
	fs *fleetv1.FleetSet
	// now is the reconcile's clock reading.
	now metav1.Time
	// workName is the name of the FleetSet's ManifestWork in every cluster.
	workName string
	// existingWorks are the FleetSet's ManifestWorks, by namespace/name: as
	// the cache held them, then as this reconcile wrote them (a deleted one
	// removed).
	existingWorks map[types.NamespacedName]*workv1.ManifestWork
	// subsets are the subsets' plans, in spec order (empty when the spec
	// cannot be planned).
	subsets []subsetPlan
	// problems are what the Degraded condition reports.
	problems []plan.Problem
	// feedbackProblems are the subsets whose fed-back status was ignored,
	// by subset name (observeWorks may run again after writes).
	feedbackProblems map[string]plan.Problem
	// fleetRevision is the fleet revision of the spec's template.
	fleetRevision string
	// rolloutDecision is the rollout planner's decision (nil when the spec
	// cannot be planned).
	rolloutDecision *rollout.Decision
	// failoverEvents are the failover steps of this reconcile, emitted
	// once the status holding them is written.
	failoverEvents []pendingEvent
	// failoverRequeue is when a failover wait (or a switchover deadline)
	// ends (0: none).
	failoverRequeue time.Duration
	// switchover is the switchover a role-ordered rollout asks of the
	// leader this reconcile (status.switchover); nil: none.
	switchover *fleetv1.SwitchoverStatus
}

// subsetPlan is one subset as the reconcile delivers it: its plan, whether
// its cluster exists and is Available, its failover decision, and what the
// FleetSet's ManifestWork in that cluster reports of it.
type subsetPlan struct {
	// planned is the subset's plan, its cluster being where it runs now.
	planned          plan.Subset
	clusterExists    bool
	clusterAvailable bool
	subsetFailover
	// work is the FleetSet's ManifestWork in the subset's cluster, as the
	// cache held it or as this reconcile wrote it; nil: none.
	work *workv1.ManifestWork
	// feedback is the statusFeedback the work agent reports in work of the
	// subset's StatefulSet; nil: none reported.
	feedback *manifestwork.StatefulSetFeedback
	// roles is its member's role summary (spec.roles), fed back from its
	// SubsetPlacement; nil: none reported.
	roles *manifestwork.RoleReport
}

// subsetFailover is a subset's failover decision.
type subsetFailover struct {
	// draining is true while a failing-back or moving subset is delivered
	// to the cluster it leaves with replicas 0, until that cluster reports
	// it runs none of its pods (manifestwork.Drained).
	draining bool
	// failoverPhase is the subset's failover phase ("" at home).
	failoverPhase fleetv1.SubsetFailoverPhase
}

// pendingEvent is an event about status (a condition or rollout step) to emit
// once the status write succeeded; the event about ManifestWork writes is
// emitted once the writes are done, whatever follows.
type pendingEvent struct {
	eventType, reason, message string
}

// newState starts the reconcile of fs at the reconciler's clock reading,
// with the FleetSet's ManifestWorks from the cache. It returns the list's
// error.
func (r *FleetSetReconciler) newState(ctx context.Context, fs *fleetv1.FleetSet) (*state, error) {
	works, err := r.ownedWorks(ctx, client.ObjectKeyFromObject(fs))
	if err != nil {
		return nil, err
	}
	return &state{fs: fs, now: metav1.NewTime(r.now()), workName: manifestwork.WorkName(fs.Namespace, fs.Name), existingWorks: works,
		feedbackProblems: map[string]plan.Problem{}}, nil
}

// invalidSpec records err, naming the spec field it found wrong, as an
// InvalidSpec problem.
func (st *state) invalidSpec(err error) {
	st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonInvalidSpec, Message: err.Error()})
}

// workKey returns the key of the FleetSet's ManifestWork in cluster.
func (st *state) workKey(cluster string) types.NamespacedName {
	return types.NamespacedName{Namespace: cluster, Name: st.workName}
}

// observeWorks attaches to each subset's plan the FleetSet's ManifestWork
// in its cluster and the feedback of the subset's StatefulSet there, each
// work's feedback decoded once; with clusters, only to the subsets in
// those clusters (whose work this reconcile wrote or deleted).
func (st *state) observeWorks(clusters ...string) {
	decoded := map[*workv1.ManifestWork]map[string]manifestwork.StatefulSetFeedback{}
	if st.feedbackProblems == nil {
		st.feedbackProblems = map[string]plan.Problem{}
	}
	for i := range st.subsets {
		sp := &st.subsets[i]
		if len(clusters) > 0 && !slices.Contains(clusters, sp.planned.Cluster) {
			continue
		}
		sp.work, sp.feedback, sp.roles = st.existingWorks[st.workKey(sp.planned.Cluster)], nil, nil
		sp.planned.Roles, sp.planned.Leaders = nil, nil
		if sp.work == nil {
			continue
		}
		if len(st.fs.Spec.Roles) > 0 {
			if r, ok := manifestwork.RoleFeedback(sp.work)[manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name)]; ok {
				sp.roles = &r
				sp.planned.Roles, sp.planned.Leaders = r.Roles, r.Leaders
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
			st.feedbackProblems[sp.planned.Name] = plan.Problem{Reason: fleetv1.ReasonInvalidFeedback, Subset: sp.planned.Name, Cluster: sp.planned.Cluster,
				Message: fmt.Sprintf("status fed back for StatefulSet %s ignored: %v", name, err)}
			continue
		}
		delete(st.feedbackProblems, sp.planned.Name)
		f = f.Clamp(sp.planned.Replicas)
		sp.feedback = &f
	}
}

// recordWritten records w as this reconcile wrote it (its status as the
// cache held it) and attaches it to the subsets in its cluster.
func (st *state) recordWritten(w *workv1.ManifestWork) {
	st.existingWorks[client.ObjectKeyFromObject(w)] = w
	st.observeWorks(w.Namespace)
}

// recordDeleted records that this reconcile deleted the work at key, and
// detaches it from the subsets in its cluster.
func (st *state) recordDeleted(key types.NamespacedName) {
	delete(st.existingWorks, key)
	st.observeWorks(key.Namespace)
}

// feedbackReported reports whether the work agent has fed back the status
// of status subset ss's StatefulSet: as attached to the subset's plan, or,
// when the spec could not be planned (status.subsets are then the last
// reconcile's), from the FleetSet's ManifestWork in ss's cluster.
func (st *state) feedbackReported(ss fleetv1.SubsetStatus) bool {
	for _, sp := range st.subsets {
		if sp.planned.Name == ss.Name {
			return sp.feedback != nil
		}
	}
	w := st.existingWorks[st.workKey(ss.Cluster)]
	if w == nil {
		return false
	}
	_, ok := manifestwork.Feedback(w)[manifestwork.StatefulSetName(st.fs.Name, ss.Name)]
	return ok
}
