package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
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
	"github.com/fleetset/fleetset/federation/heartbeat"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
)

// Event reasons of the FleetSet controller (Warning events use the
// condition reasons of api/v1alpha1).
const (
	// EventWorksApplied: a reconcile wrote the FleetSet's ManifestWorks; one
	// event per reconcile that wrote any, with the created, updated and
	// deleted counts and their clusters.
	EventWorksApplied = "WorksApplied"
	// EventWorksDeleted: the deleted FleetSet's ManifestWorks were deleted;
	// one event per reconcile that deleted any, with the clusters (on the
	// FleetSet, which may be gone by then: the event names it).
	EventWorksDeleted = "WorksDeleted"
	// EventSubsetUpdating: a RollingUpdate reached a subset.
	EventSubsetUpdating = "SubsetUpdating"
	// EventSubsetUpdated: a subset finished its part of a RollingUpdate.
	EventSubsetUpdated = "SubsetUpdated"
)

// maxConditionMessage is the longest metav1.Condition message.
const maxConditionMessage = 32768

// FleetSetReconciler delivers a FleetSet as one ManifestWork per member
// cluster and folds the work agents' statusFeedback into FleetSet.status.
//
// Every read goes through Client, the manager's cache; no reconcile reads
// the apiserver directly. expectations keep those reads from being older
// than the reconciler's own writes.
type FleetSetReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// RelocationMargin is added to a lost member's fence deadline before
	// its subsets are relocated (see Options).
	RelocationMargin time.Duration
	// Heartbeats is the hub's view of the members' heartbeats; nil: none
	// observed, so no relocation is ever due (only confirmed ones).
	Heartbeats *heartbeat.Observer
	// APIReader reads a lost member's heartbeat Lease live before a
	// relocation; nil: through Client.
	APIReader client.Reader
	// Clock reads the time of failover decisions; nil: the real clock.
	Clock clock.Clock
	// MaxParallelWrites bounds the ManifestWork writes one reconcile has in
	// flight; below 1: one at a time.
	MaxParallelWrites int
	// Writer writes ManifestWorks and FleetSet status; Setup sets a
	// metawrite.Writer, which reads back only the answers' metadata. nil:
	// Client, which reads back whole objects.
	Writer Writer

	// expectations holds the writes the cache has not delivered yet; nil
	// (a reconciler built without Setup, as in unit tests): none awaited.
	expectations *cacheExpectations
}

// SetupWithManager watches FleetSets (spec and annotation changes: the
// failback request; deletions), the hub's ManifestWorks (mapped to their
// FleetSet by owner labels; changes and deletions, and creations only of
// orphans, works whose FleetSet is not in the cache: the hub creates the
// others, and the reconcile that did already folded them) and
// ManagedClusters (mapped to the FleetSets with a subset there, on creation,
// deletion or a change of availability).
func (r *FleetSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("fleetset").
		For(&fleetv1.FleetSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workOwner),
			builder.WithPredicates(predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool { return r.orphaned(e.Object) }})).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOnCluster),
			builder.WithPredicates(availabilityChanged())).
		Complete(r)
}

// workOwner maps a FleetSet's ManifestWork to the FleetSet.
func workOwner(_ context.Context, o client.Object) []reconcile.Request {
	owner, ok := manifestwork.Owner(o)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: owner}}
}

// fleetSetsOnCluster maps a ManagedCluster to the FleetSets with a subset
// there (ClusterIndex).
func (r *FleetSetReconciler) fleetSetsOnCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1.FleetSetList
	// Only the keys are read: the cache's objects, not copies.
	if err := r.List(ctx, &list, client.MatchingFields{ClusterIndex: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
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
			return isAvailable(o) != isAvailable(n) || outOfService(o) != outOfService(n)
		},
	}
}

// outOfService reports whether mc carries the v1alpha1.TaintOutOfService
// taint: an operator's confirmation that it runs none of its pods.
func outOfService(mc *clusterv1.ManagedCluster) bool {
	for _, t := range mc.Spec.Taints {
		if t.Key == fleetv1.TaintOutOfService {
			return true
		}
	}
	return false
}

func isAvailable(mc *clusterv1.ManagedCluster) bool {
	return apimeta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
}

// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=fleetset-system
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch

// orphaned reports whether ManifestWork o has owner labels naming a
// FleetSet the cache does not hold (one deleted while the hub was not
// running: the informer's first list delivers its works as creations). It
// asks the expectations, which track every FleetSet the informer delivered
// (no copy of the FleetSet per work), else the cache. A FleetSet they have
// not heard of yet passes too: its reconcile reads the cache and finds it.
func (r *FleetSetReconciler) orphaned(o client.Object) bool {
	owner, ok := manifestwork.Owner(o)
	if !ok {
		return false
	}
	if held, known := r.expectations.holds(kindFleetSet, owner); known {
		return !held
	}
	err := r.Get(context.Background(), owner, &fleetv1.FleetSet{})
	return apierrors.IsNotFound(err)
}

// Reconcile delivers one FleetSet; see reconcile. A FleetSet that is gone
// has its ManifestWorks deleted (collect). While the cache has not
// delivered this FleetSet's last writes (its status, its ManifestWorks), it
// only asks to run again.
func (r *FleetSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.expectations.satisfied(fleetSetOwner(req.NamespacedName)) {
		return ctrl.Result{RequeueAfter: cacheWaitDelay}, nil
	}
	fs := &fleetv1.FleetSet{}
	if err := r.Get(ctx, req.NamespacedName, fs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.collect(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	return r.reconcile(ctx, fs)
}

// pendingEvent is an event about status (a condition or rollout step) to emit
// once the status write succeeded; the event about ManifestWork writes is
// emitted once the writes are done, whatever follows.
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

// reconcile runs the steps: finalize a FleetSet being deleted; plan
// (ordinals + division); check the clusters; write the ManifestWorks that
// differ and delete those of clusters no longer used; fold the feedback
// into status; write status if it changed; emit events.
//
// The hub puts no finalizer on a FleetSet: its deletion is cascaded in the
// background, as the Kubernetes garbage collector does for ownerReferences
// by default (propagationPolicy Background), which ManifestWorks cannot
// carry (they live in the clusters' namespaces). A FleetSet that is gone
// has its works deleted by collect, also when it was deleted while the hub
// was not running; this saves a FleetSet write per FleetSet
// (docs/hub.md#delivery).
func (r *FleetSetReconciler) reconcile(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	if !fs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, fs)
	}
	st := &state{fs: fs, now: metav1.NewTime(r.now())}
	var err error
	if st.works, err = r.ownedWorks(ctx, client.ObjectKeyFromObject(fs)); err != nil {
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
		if err := r.writer().UpdateStatus(ctx, fs); err != nil {
			return ctrl.Result{}, err
		}
		r.expectations.expectWrite(r.owner(fs), kindFleetSet, fs)
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

// Writer is what the FleetSet reconciler writes ManifestWorks and FleetSet
// status through (metawrite.Writer is one).
type Writer interface {
	manifestwork.Writer
	UpdateStatus(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error
}

// clientWriter is a Writer over a controller-runtime client.
type clientWriter struct{ client.Client }

// UpdateStatus writes obj's status subresource.
func (c clientWriter) UpdateStatus(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.Status().Update(ctx, obj, opts...)
}

// writer returns r.Writer, else a Writer over r.Client.
func (r *FleetSetReconciler) writer() Writer {
	if r.Writer != nil {
		return r.Writer
	}
	return clientWriter{r.Client}
}

// now reads the reconciler's clock (the real one when unset).
func (r *FleetSetReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// owner is the expectations owner of fs's reconciles.
func (r *FleetSetReconciler) owner(fs *fleetv1.FleetSet) string {
	return fleetSetOwner(client.ObjectKeyFromObject(fs))
}

// ownedWorks lists the ManifestWorks of FleetSet key in every cluster
// namespace, through the WorkOwnerIndex (a lookup, not a scan of every
// work).
func (r *FleetSetReconciler) ownedWorks(ctx context.Context, key types.NamespacedName) (map[types.NamespacedName]*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.MatchingFields{WorkOwnerIndex: workOwnerKey(key.Namespace, key.Name)}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of %s: %w", key, err)
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
// in clusters it no longer uses, up to MaxParallelWrites at a time, each
// once the expectations admit it (Options.MaxUnobservedWrites); one
// WorksApplied event sums up what was written. A ManifestWork in a cluster
// that is named but not found is left as it is. Write failures become
// ApplyFailed problems; a conflict (or a create of a work that exists) is
// returned, to retry with fresh objects, once every write has been made.
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
	var apply []*workv1.ManifestWork
	for _, w := range desired {
		if !missing[w.Namespace] {
			apply = append(apply, w)
		}
	}
	var remove []*workv1.ManifestWork
	for _, w := range st.works {
		if !named[w.Namespace] && w.DeletionTimestamp.IsZero() {
			remove = append(remove, w)
		}
	}
	sort.Slice(remove, func(i, j int) bool { return remove[i].Namespace < remove[j].Namespace })

	// The writes, in parallel; st.works is only read until they are done.
	type result struct {
		op      controllerutil.OperationResult
		written *workv1.ManifestWork
		err     error
	}
	applied := make([]result, len(apply))
	deleted := make([]error, len(remove))
	var g errgroup.Group
	g.SetLimit(max(1, r.MaxParallelWrites))
	// Each write is expected as soon as it returns.
	for i, w := range apply {
		g.Go(func() error {
			existing := st.works[client.ObjectKeyFromObject(w)]
			if existing == nil || !manifestwork.UpToDate(existing, w) {
				release, err := r.expectations.admit(ctx)
				defer release()
				if err != nil {
					applied[i] = result{err: err}
					return nil
				}
			}
			op, written, err := manifestwork.ApplyTo(ctx, r.writer(), existing, w)
			if op != controllerutil.OperationResultNone {
				r.expectations.expectWrite(r.owner(fs), kindManifestWork, written)
			}
			applied[i] = result{op, written, err}
			return nil
		})
	}
	for i, w := range remove {
		g.Go(func() error {
			deleted[i] = r.deleteWork(ctx, fs, w)
			return nil
		})
	}
	_ = g.Wait()

	var sum worksSummary
	var retry error
	for i, w := range apply {
		key, res := client.ObjectKeyFromObject(w), applied[i]
		switch res.op {
		case controllerutil.OperationResultCreated:
			workWrites.WithLabelValues("create").Inc()
			sum.created = append(sum.created, w.Namespace)
		case controllerutil.OperationResultUpdated:
			workWrites.WithLabelValues("update").Inc()
			sum.updated = append(sum.updated, w.Namespace)
		}
		switch {
		case res.err == nil:
			st.works[key] = res.written
		case apierrors.IsConflict(res.err) || apierrors.IsAlreadyExists(res.err):
			retry = res.err // the cache is behind; retry with fresh objects
		default:
			for _, sp := range st.plan {
				if sp.plan.Cluster == w.Namespace {
					st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonApplyFailed, Subset: sp.plan.Name, Cluster: sp.plan.Cluster,
						Message: res.err.Error()})
				}
			}
		}
	}
	for i, w := range remove {
		key := client.ObjectKeyFromObject(w)
		if err := deleted[i]; err != nil {
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonApplyFailed, Cluster: w.Namespace,
				Message: fmt.Sprintf("deleting ManifestWork %s: %v", key, err)})
			continue
		}
		workWrites.WithLabelValues("delete").Inc()
		delete(st.works, key)
		sum.deleted = append(sum.deleted, w.Namespace)
	}
	if msg := sum.message(manifestwork.WorkName(fs.Namespace, fs.Name)); msg != "" {
		r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorksApplied, msg)
	}
	return retry
}

// worksSummary is what one reconcile wrote: the clusters whose ManifestWork
// it created, updated and deleted.
type worksSummary struct {
	created, updated, deleted []string
}

// maxEventClusters is how many cluster names an event lists per operation;
// the rest are counted.
const maxEventClusters = 10

// message returns the event message for the FleetSet's ManifestWork name,
// e.g. "ManifestWork db.mydb: created in 2 clusters (east, west); updated in
// 1 cluster (north)", or "" when nothing was written.
func (s worksSummary) message(name string) string {
	var parts []string
	for _, op := range []struct {
		verb     string
		clusters []string
	}{{"created in", s.created}, {"updated in", s.updated}, {"deleted from", s.deleted}} {
		if len(op.clusters) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", op.verb, countClusters(len(op.clusters)), listClusters(op.clusters)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "ManifestWork " + name + ": " + strings.Join(parts, "; ")
}

// countClusters returns "1 cluster" or "n clusters".
func countClusters(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return fmt.Sprintf("%d clusters", n)
}

// listClusters returns the names, sorted, comma-separated, at most
// maxEventClusters of them and then "and n more".
func listClusters(clusters []string) string {
	c := slices.Sorted(slices.Values(clusters))
	if len(c) <= maxEventClusters {
		return strings.Join(c, ", ")
	}
	return strings.Join(c[:maxEventClusters], ", ") + fmt.Sprintf(" and %d more", len(c)-maxEventClusters)
}

// finalize handles a FleetSet whose deletion waits on finalizers (another
// controller's, or fleetset.io/manifestworks, which hubs before this one
// added): it deletes the FleetSet's ManifestWorks at once and, once none is
// left, removes fleetset.io/manifestworks if present. A work whose agent
// never confirms deletion (a detached cluster) holds that finalizer until
// OCM cleans the cluster's namespace.
func (r *FleetSetReconciler) finalize(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	left, err := r.deleteWorks(ctx, client.ObjectKeyFromObject(fs), fs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !controllerutil.ContainsFinalizer(fs, fleetv1.FleetSetFinalizer) {
		return ctrl.Result{}, nil
	}
	if left > 0 {
		// The ManifestWork watch requeues when they are gone; poll as well.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	controllerutil.RemoveFinalizer(fs, fleetv1.FleetSetFinalizer)
	if err := r.Update(ctx, fs); err != nil {
		return ctrl.Result{}, err
	}
	r.expectations.expectWrite(r.owner(fs), kindFleetSet, fs)
	return ctrl.Result{}, nil
}

// collect deletes the ManifestWorks of FleetSet key, which is gone: the
// background cascade of its deletion. It returns the first delete's error.
func (r *FleetSetReconciler) collect(ctx context.Context, key types.NamespacedName) error {
	gone := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := r.deleteWorks(ctx, key, gone)
	return err
}

// deleteWorks deletes, up to MaxParallelWrites at a time, the ManifestWorks
// of FleetSet key that are not being deleted yet, and emits one
// WorksDeleted event on fs naming their clusters. It returns how many of
// its works the cache held (being deleted or not) and an error naming the
// first work it failed to delete.
func (r *FleetSetReconciler) deleteWorks(ctx context.Context, key types.NamespacedName, fs *fleetv1.FleetSet) (int, error) {
	works, err := r.ownedWorks(ctx, key)
	if err != nil {
		return 0, err
	}
	var remove []*workv1.ManifestWork
	for _, w := range works {
		if w.DeletionTimestamp.IsZero() {
			remove = append(remove, w)
		}
	}
	sort.Slice(remove, func(i, j int) bool { return remove[i].Namespace < remove[j].Namespace })
	errs := make([]error, len(remove))
	var g errgroup.Group
	g.SetLimit(max(1, r.MaxParallelWrites))
	for i, w := range remove {
		g.Go(func() error {
			errs[i] = r.deleteWork(ctx, fs, w)
			return nil
		})
	}
	_ = g.Wait()
	var sum worksSummary
	var failed error
	for i, w := range remove {
		if errs[i] != nil {
			if failed == nil {
				failed = fmt.Errorf("deleting ManifestWork %s: %w", client.ObjectKeyFromObject(w), errs[i])
			}
			continue
		}
		workWrites.WithLabelValues("delete").Inc()
		sum.deleted = append(sum.deleted, w.Namespace)
	}
	if msg := sum.message(manifestwork.WorkName(key.Namespace, key.Name)); msg != "" {
		r.Recorder.Event(fs, corev1.EventTypeNormal, EventWorksDeleted, msg)
	}
	return len(works), failed
}

// deleteWork deletes ManifestWork w of fs, once the expectations admit one
// more unobserved write, and, when the delete was accepted, expects the
// informer to deliver it. It returns the delete's error, nil when w was
// already gone.
func (r *FleetSetReconciler) deleteWork(ctx context.Context, fs *fleetv1.FleetSet, w *workv1.ManifestWork) error {
	release, err := r.expectations.admit(ctx)
	defer release()
	if err != nil {
		return err
	}
	err = r.Delete(ctx, w)
	if err == nil {
		r.expectations.expectDelete(r.owner(fs), kindManifestWork, client.ObjectKeyFromObject(w))
	}
	return client.IgnoreNotFound(err)
}
