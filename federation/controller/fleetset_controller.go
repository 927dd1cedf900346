package controller

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
)

// Event reasons of the FleetSet controller (Warning events use the
// condition reasons of api/v1alpha1).
const (
	EventWorkCreated = "ManifestWorkCreated"
	EventWorkUpdated = "ManifestWorkUpdated"
	EventWorkDeleted = "ManifestWorkDeleted"
	// EventSubsetUpdating: a RollingUpdate reached a subset.
	EventSubsetUpdating = "SubsetUpdating"
	// EventSubsetUpdated: a subset finished its part of a RollingUpdate.
	EventSubsetUpdated = "SubsetUpdated"
)

// DefaultProgressDeadlineSeconds is rollingUpdate.progressDeadlineSeconds
// when unset.
const DefaultProgressDeadlineSeconds = 600

// maxConditionMessage is the longest metav1.Condition message.
const maxConditionMessage = 32768

// FleetSetReconciler delivers a FleetSet as one ManifestWork per member
// cluster and folds the work agents' statusFeedback into FleetSet.status.
type FleetSetReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// LeaseSkew is the clock-skew margin of failover (see Options).
	LeaseSkew time.Duration
	// Clock reads the time of failover decisions; nil: the real clock.
	Clock clock.Clock
}

// SetupWithManager watches FleetSets (spec and annotation changes: the
// failback request), the hub's ManifestWorks
// (mapped to their FleetSet by owner labels) and ManagedClusters (mapped to
// the FleetSets with a subset there, on creation, deletion or a change of
// availability).
func (r *FleetSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("fleetset").
		For(&fleetv1.FleetSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workOwner)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOnCluster),
			builder.WithPredicates(availabilityChanged())).
		Complete(r)
}

// workOwner maps a FleetSet's ManifestWork to the FleetSet.
func workOwner(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	ns, name := l[fleetv1.LabelOwnerNamespace], l[fleetv1.LabelOwnerName]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

func (r *FleetSetReconciler) fleetSetsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.MatchingFields{ClusterIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing FleetSets on cluster", "cluster", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
	}
	return out
}

// availabilityChanged passes ManagedCluster creations and deletions, and
// updates that change the ManagedClusterConditionAvailable status: the
// registration agent updates ManagedCluster status often for other reasons.
func availabilityChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
			n, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
			if !ok1 || !ok2 {
				return true
			}
			return isAvailable(o) != isAvailable(n)
		},
	}
}

func isAvailable(mc *clusterv1.ManagedCluster) bool {
	return apimeta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
}

// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=fleetset-system

// Reconcile delivers one FleetSet; see reconcile.
func (r *FleetSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fs := &fleetv1.FleetSet{}
	if err := r.Get(ctx, req.NamespacedName, fs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return r.reconcile(ctx, fs)
}

// pendingEvent is an event about status (a condition or rollout step) to emit
// once the status write succeeded; events about ManifestWork writes are
// emitted as each write succeeds.
type pendingEvent struct {
	eventType, reason, message string
}

// state is what one reconcile learns and decides.
type state struct {
	fs       *fleetv1.FleetSet
	works    map[types.NamespacedName]*workv1.ManifestWork // existing, by namespace/name
	plan     []subsetPlan
	problems []plan.Problem
	events   []pendingEvent
	// rollout is the rollout decision (nil when the spec cannot be planned).
	rollout *rollout.Decision
	// revision is the fleet revision of the spec.
	revision string
	// now is the reconcile's clock reading.
	now metav1.Time
	// failoverEvents are the failover steps of this reconcile, emitted
	// once the status holding them is written.
	failoverEvents []pendingEvent
	// failoverRetry is when a failover wait ends (0: none).
	failoverRetry time.Duration
}

// subsetPlan is a subset's plan and whether its cluster exists and is
// Available.
type subsetPlan struct {
	plan             plan.Subset
	clusterExists    bool
	clusterAvailable bool
	subsetFailover
}

// subsetFailover is a subset's failover decision.
type subsetFailover struct {
	// undelivered is true while a failing-back subset runs nowhere.
	undelivered bool
	// failover is the subset's failover phase.
	failover fleetv1.SubsetFailoverPhase
}

// reconcile runs the steps: finalize a deleted FleetSet; add the finalizer;
// plan (ordinals + division); check the clusters; write the ManifestWorks
// that differ and delete those of clusters no longer used; fold the feedback
// into status; write status if it changed; emit events.
func (r *FleetSetReconciler) reconcile(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	if !fs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, fs)
	}
	if controllerutil.AddFinalizer(fs, fleetv1.FleetSetFinalizer) {
		if err := r.Update(ctx, fs); err != nil {
			return ctrl.Result{}, err
		}
	}
	st := &state{fs: fs, now: metav1.NewTime(r.now())}
	var err error
	if st.works, err = r.ownedWorks(ctx, fs); err != nil {
		return ctrl.Result{}, err
	}
	status := fs.Status.DeepCopy()
	planned, problems, err := plan.For(fs, previousStarts(fs, st.works))
	if err != nil {
		// Leave the ManifestWorks and the ordinal record as they are.
		st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonInvalidSpec, Message: err.Error()})
	} else {
		st.problems = append(st.problems, problems...)
		fo, err := r.planFailover(ctx, st, planned)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.checkClusters(ctx, st, planned, fo); err != nil {
			return ctrl.Result{}, err
		}
		if err := planRollout(st); err != nil {
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonInvalidSpec, Message: err.Error()})
		}
		if err := r.writeWorks(ctx, fs, st); err != nil {
			return ctrl.Result{}, err
		}
		foldSubsets(st, status)
		foldRollout(st, status)
	}
	status.SubsetCount = int32(len(fs.Spec.Topology.Subsets))
	status.ObservedGeneration = fs.Generation
	if err := setSelector(fs, status); err != nil {
		st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonInvalidSpec, Message: err.Error()})
	}
	setConditions(st, status)
	if !equality.Semantic.DeepEqual(&fs.Status, status) {
		old := fs.Status.DeepCopy()
		fs.Status = *status
		if err := r.Status().Update(ctx, fs); err != nil {
			return ctrl.Result{}, err
		}
		st.events = append(st.events, problemEvents(old, status)...)
		st.events = append(st.events, rolloutEvents(old, status)...)
		st.events = append(st.events, st.failoverEvents...)
	}
	if err := r.clearFailbackRequest(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	for _, e := range st.events {
		r.Recorder.Event(fs, e.eventType, e.reason, e.message)
	}
	return ctrl.Result{RequeueAfter: minPositive(rolloutRequeue(st, status), st.failoverRetry)}, nil
}

// now reads the reconciler's clock (the real one when unset).
func (r *FleetSetReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// ownedWorks lists the FleetSet's ManifestWorks in every cluster namespace.
func (r *FleetSetReconciler) ownedWorks(ctx context.Context, fs *fleetv1.FleetSet) (map[types.NamespacedName]*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.MatchingLabels(manifestwork.OwnerLabels(fs.Namespace, fs.Name))); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of %s/%s: %w", fs.Namespace, fs.Name, err)
	}
	out := make(map[types.NamespacedName]*workv1.ManifestWork, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out, nil
}

// previousStarts returns the recorded ordinal starts: those of the
// ManifestWorks, overridden by status.subsets (the primary record).
func previousStarts(fs *fleetv1.FleetSet, works map[types.NamespacedName]*workv1.ManifestWork) map[string]int32 {
	out := map[string]int32{}
	keys := make([]types.NamespacedName, 0, len(works))
	for k := range works {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		for s, v := range manifestwork.OrdinalStarts(works[k]) {
			out[s] = v
		}
	}
	for _, s := range fs.Status.Subsets {
		out[s.Name] = s.OrdinalStart
	}
	return out
}

// checkClusters records which subsets' clusters exist and are available, and
// builds st.plan from planned and the failover decision fo (same order).
func (r *FleetSetReconciler) checkClusters(ctx context.Context, st *state, planned []plan.Subset, fo []subsetFailover) error {
	type info struct{ exists, available bool }
	clusters := map[string]info{}
	for i, sp := range planned {
		in, ok := clusters[sp.Cluster]
		if !ok {
			mc := &clusterv1.ManagedCluster{}
			err := r.Get(ctx, types.NamespacedName{Name: sp.Cluster}, mc)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("getting ManagedCluster %s: %w", sp.Cluster, err)
			default:
				in = info{exists: true, available: isAvailable(mc)}
			}
			clusters[sp.Cluster] = in
		}
		switch {
		case !in.exists:
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonClusterNotFound, Subset: sp.Name, Cluster: sp.Cluster,
				Message: "spec.topology.subsets.cluster: ManagedCluster not found; its ManifestWork is not written"})
		case !in.available:
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonClusterUnavailable, Subset: sp.Name, Cluster: sp.Cluster,
				Message: "ManagedCluster is not Available"})
		}
		st.plan = append(st.plan, subsetPlan{plan: sp, clusterExists: in.exists, clusterAvailable: in.available, subsetFailover: fo[i]})
	}
	return nil
}

// writeWorks creates or updates the ManifestWork of every existing cluster
// that differs from its rendering, and deletes the FleetSet's ManifestWorks
// in clusters it no longer uses. A ManifestWork in a cluster that is named
// but not found is left as it is. Write failures become ApplyFailed problems;
// conflicts are returned, to retry.
func (r *FleetSetReconciler) writeWorks(ctx context.Context, fs *fleetv1.FleetSet, st *state) error {
	var all []plan.Subset
	named := map[string]bool{}
	for _, sp := range st.plan {
		if sp.undelivered {
			continue
		}
		all = append(all, sp.plan)
		named[sp.plan.Cluster] = true
	}
	desired, err := manifestwork.Works(st.fs, all)
	if err != nil {
		st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonInvalidSpec, Message: err.Error()})
		return nil
	}
	missing := map[string]bool{}
	for _, sp := range st.plan {
		if !sp.clusterExists {
			missing[sp.plan.Cluster] = true
		}
	}
	for _, w := range desired {
		if missing[w.Namespace] {
			continue
		}
		key := client.ObjectKeyFromObject(w)
		op, written, err := manifestwork.Apply(ctx, r.Client, w)
		switch op {
		case controllerutil.OperationResultCreated:
			workWrites.WithLabelValues("create").Inc()
			r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorkCreated, "Created ManifestWork "+key.String())
		case controllerutil.OperationResultUpdated:
			workWrites.WithLabelValues("update").Inc()
			r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorkUpdated, "Updated ManifestWork "+key.String())
		}
		if err == nil {
			st.works[key] = written
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return err // the cache is behind; retry with fresh objects
		}
		if err != nil {
			for _, sp := range st.plan {
				if sp.plan.Cluster == w.Namespace {
					st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonApplyFailed, Subset: sp.plan.Name, Cluster: sp.plan.Cluster,
						Message: fmt.Sprintf("writing ManifestWork %s: %v", key, err)})
				}
			}
		}
	}
	for key, w := range st.works {
		if named[w.Namespace] || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonApplyFailed, Cluster: w.Namespace,
				Message: fmt.Sprintf("deleting ManifestWork %s: %v", key, err)})
			continue
		}
		workWrites.WithLabelValues("delete").Inc()
		delete(st.works, key)
		r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorkDeleted, "Deleted ManifestWork "+key.String())
	}
	return nil
}

// finalize deletes the FleetSet's ManifestWorks and removes the finalizer
// once none is left. A work whose agent never confirms deletion (a detached
// cluster) holds the FleetSet until OCM cleans the cluster's namespace.
func (r *FleetSetReconciler) finalize(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(fs, fleetv1.FleetSetFinalizer) {
		return ctrl.Result{}, nil
	}
	works, err := r.ownedWorks(ctx, fs)
	if err != nil {
		return ctrl.Result{}, err
	}
	for key, w := range works {
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting ManifestWork %s: %w", key, err)
		}
		workWrites.WithLabelValues("delete").Inc()
		r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorkDeleted, "Deleted ManifestWork "+key.String())
	}
	if len(works) > 0 {
		// The ManifestWork watch requeues when they are gone; poll as well.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(fs, fleetv1.FleetSetFinalizer)
	return ctrl.Result{}, r.Update(ctx, fs)
}
