package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/heartbeat"
	"github.com/fleetset/fleetset/federation/manifestwork"
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
// Reads go through Client, the manager's cache; expectations keep them
// from being older than the reconciler's own writes. APIReader makes the
// live reads the package doc lists.
type FleetSetReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// RelocationMargin is added to a lost member's fence deadline before
	// its subsets are relocated (see Options).
	RelocationMargin time.Duration
	// Heartbeats is the hub's view of the members' heartbeats; nil: none
	// observed, so no relocation is ever due (only confirmed ones).
	Heartbeats *heartbeat.Observer
	// APIReader makes the live reads; nil: heartbeat Leases and
	// dependencies through Client, the FleetSet's freshness not checked.
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
	// AckEvents, when set, carries a ManagedCluster (by name) whose member
	// awaits the hub's acknowledgement of its heartbeat (Observer
	// AwaitingAck): its FleetSets are reconciled (memberAcks).
	AckEvents <-chan event.GenericEvent
	// ReservedNamespaces are hub namespaces whose FleetSets are never
	// delivered, besides v1alpha1.ReservedNamespaces (see Options).
	ReservedNamespaces []string

	// expectations holds the writes the cache has not delivered yet; nil
	// (a reconciler built without Setup, as in unit tests): none awaited.
	expectations *cacheExpectations
	// writtenGenerations is, by ManifestWork key, the metadata.generation
	// of the spec this process last wrote (int64): a cached work with a
	// higher generation had its spec changed by someone else, and is
	// restored (editedByOthers). Unknown after a restart: trusted then.
	writtenGenerations sync.Map
	// conflictStreaks counts, by FleetSet, the reconciles in a row that
	// ended on a ManifestWork write conflict.
	conflictStreaks streaks
	// dependencyCopies holds, by "<Kind>/<namespace>/<name>", the last
	// content read of each ConfigMap or Secret a FleetSet delivers
	// (client.Object, read-only), reused while its resourceVersion holds
	// (readDependency).
	dependencyCopies sync.Map
}

// SetupWithManager watches FleetSets (spec and annotations), the hub's
// ManifestWorks (by owner labels; creations only of orphans), ManagedClusters
// (availability), cluster sets and bindings, PlacementDecisions, and the
// metadata of ConfigMaps and Secrets (DependencyIndex) and the labels of
// Namespaces (the platform's Pod Security level), each mapped to the
// FleetSets it concerns.
func (r *FleetSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if r.AckEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.AckEvents, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOnCluster)))
	}
	return b.
		Named("fleetset").
		For(&fleetv1.FleetSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workOwner),
			builder.WithPredicates(predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool { return r.orphaned(e.Object) }})).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOfTenant), builder.WithPredicates(tenantApplied())).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOnCluster),
			builder.WithPredicates(availabilityChanged())).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsInNamespace)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsBoundTo)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOfPlacement)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsDelivering(manifestwork.KindConfigMap)), builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsDelivering(manifestwork.KindSecret)), builder.OnlyMetadata).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(memberEndpointsOwner)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.fleetSetsOfNamespace), builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// tenantApplied passes a tenant work's creation, deletion, and change of
// Applied (at its generation, or reported False): what holdForTenants waits
// for.
func tenantApplied() predicate.Predicate {
	applied := func(o client.Object) string {
		w, ok := o.(*workv1.ManifestWork)
		if !ok {
			return ""
		}
		return fmt.Sprint(manifestwork.AppliedAtGeneration(w), manifestwork.NotApplied(w) != nil)
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isTenantWork(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isTenantWork(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return isTenantWork(e.ObjectNew) && applied(e.ObjectOld) != applied(e.ObjectNew)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// fleetSetsOfTenant maps a tenant work to the FleetSets of its namespace
// that use or may use its cluster (ClusterIndex).
func (r *FleetSetReconciler) fleetSetsOfTenant(ctx context.Context, o client.Object) []reconcile.Request {
	ns := o.GetLabels()[fleetv1.LabelTenant]
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{ClusterIndex: o.GetNamespace()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing FleetSets of a tenant work", "cluster", o.GetNamespace(), "namespace", ns)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, fs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fs)})
	}
	return out
}

// workOwner maps a FleetSet's ManifestWork to the FleetSet.
func workOwner(_ context.Context, o client.Object) []reconcile.Request {
	owner, ok := manifestwork.Owner(o)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: owner}}
}

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

// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleetset.io,resources=fleetsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;patch;delete
// execute-as without resourceNames: each namespace has its own executor
// (fleetset-system/fleetset-executor-<namespace>), which cannot be listed
// in advance.
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=execute-as
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclustersets;managedclustersetbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placementdecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons;clustermanagementaddons,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=fleetset-system
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;delete

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
			return r.collect(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	return r.reconcile(ctx, fs)
}

// reconcile runs the steps of one FleetSet's delivery, each in its own file
// (see the package doc): finalize, record the owner identity, read works,
// placement, read clusters, admit, plan, rebuild a lost status (or hold a
// restore), render, failover, check clusters, observe, rollout, write
// works (once the FleetSet is current), fold status, write it, clear a
// fulfilled failback request, emit events. A spec that cannot be planned
// goes from the plan straight to the status. The hub puts no finalizer on
// a FleetSet: collect deletes a gone FleetSet's works.
func (r *FleetSetReconciler) reconcile(ctx context.Context, fs *fleetv1.FleetSet) (ctrl.Result, error) {
	if !fs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, fs)
	}
	if wrote, err := r.recordIdentity(ctx, fs); err != nil || wrote {
		return ctrl.Result{}, err
	}
	st, err := r.newState(ctx, fs)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := fs.Status.DeepCopy()
	if err := r.choosePlacementSubsets(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.readClusters(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	admitted, err := r.admitTenancy(ctx, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	planned, ok := planSubsets(st)
	if ok && !rebuildStatus(st, planned) {
		ok = false
	}
	if ok && !r.learnEpochs(st, planned) {
		ok = false
	}
	if err := fs.ValidateIdentity(); err != nil {
		// The members' objects are labelled with the identity: hold what
		// is delivered rather than deliver under a label that cannot be.
		st.invalidSpec(err)
		ok = false
	}
	var rendered []renderedSubset
	if admitted && ok {
		if rendered, ok, err = r.renderSubsets(ctx, st, planned); err != nil {
			return ctrl.Result{}, err
		}
	}
	if admitted && ok {
		placed, failovers, err := r.planFailover(ctx, st, planned)
		if err != nil {
			return ctrl.Result{}, err
		}
		checkClusters(st, placed, rendered, failovers)
		st.observeWorks()
		if err := planRollout(st); err != nil {
			st.invalidSpec(err)
		}
		planClaims(st)
		planLifecycle(st)
		r.readContact(st)
		planRequestedSwitchover(st)
		key := client.ObjectKeyFromObject(fs)
		var conflicts *conflictedWrites
		holdSwitchovers := false
		switch err := r.writeWorks(ctx, st); {
		case errors.Is(err, errStaleFleetSet):
			// Planned from an older FleetSet than the apiserver's: plan
			// again once the cache has it (its event requeues sooner).
			log.FromContext(ctx).V(1).Info("Cached FleetSet is older than the apiserver's; wrote nothing, retrying")
			return ctrl.Result{RequeueAfter: cacheWaitDelay}, nil
		case errors.As(err, &conflicts):
			// A work changed after the cache's copy (the work agent's
			// status): plan again once the cache has it (its event
			// requeues sooner); the other works' writes are expected.
			// A run of them longer than maxFastConflictRetries is
			// reported as refused writes, and tried again after
			// writeFailureRetry.
			n := r.conflictStreaks.add(key)
			if n <= maxFastConflictRetries {
				log.FromContext(ctx).V(1).Info("A ManifestWork changed since the cached copy; retrying", "error", err.Error())
				return ctrl.Result{RequeueAfter: cacheWaitDelay}, nil
			}
			log.FromContext(ctx).Info("ManifestWork writes keep conflicting; reporting them and retrying later",
				"reconciles", n, "retryAfter", writeFailureRetry, "error", err.Error())
			for _, w := range conflicts.works {
				// A fixed message: the count in it would rewrite the
				// status and emit an event at every retry.
				st.writeFailed(w.Namespace, fmt.Sprintf(
					"ManifestWork %s changed under the hub in more than %d reconciles in a row (each write conflicted: another writer, or a cache that does not catch up); the hub tries again every %v",
					w, maxFastConflictRetries, writeFailureRetry))
			}
			// Deadlines start from delivered instructions only: a
			// switchover is neither taken, timed nor ended on a
			// reconcile whose writes did not all go through.
			st.switchover = switchoverPlan{}
			holdSwitchovers = true
		case err != nil:
			return ctrl.Result{}, err
		default:
			r.conflictStreaks.reset(key)
		}
		foldSubsets(st, status)
		foldRollout(st, status)
		foldRoles(st, status)
		foldRequestedSwitchover(st, status)
		if holdSwitchovers {
			status.Switchover, status.RequestedSwitchover = fs.Status.Switchover, fs.Status.RequestedSwitchover
		}
	}
	foldSpec(st, status)
	setConditions(st, status)
	if err := r.clearSwitchoverRequest(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	events, err := r.writeStatus(ctx, st, status)
	if err != nil {
		return ctrl.Result{}, err
	}
	events = append(events, st.switchover.events...)
	observeConditions(client.ObjectKeyFromObject(fs), status)
	if err := r.clearFailbackRequest(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	for _, e := range events {
		r.Recorder.Event(fs, e.eventType, e.reason, e.message)
	}
	return ctrl.Result{RequeueAfter: minPositive(minPositive(minPositive(st.rollout.requeue, st.failoverRequeue), st.writeRetry), st.switchover.requeue)}, nil
}

// writeStatus writes status as st.fs's status when it differs, and expects
// the write. It returns the events the change calls for, to emit now that
// the status holding them is written: Degraded reported or changed, rollout
// steps, and the reconcile's failover steps; none when status is unchanged.
// It returns the write's error.
func (r *FleetSetReconciler) writeStatus(ctx context.Context, st *state, status *fleetv1.FleetSetStatus) ([]pendingEvent, error) {
	fs := st.fs
	if equality.Semantic.DeepEqual(&fs.Status, status) {
		return nil, nil
	}
	old := fs.Status.DeepCopy()
	fs.Status = *status
	if err := r.writer().UpdateStatus(ctx, fs); err != nil {
		return nil, err
	}
	r.expectations.expectWrite(r.owner(fs), kindFleetSet, fs)
	return append(statusEvents(old, status), st.failoverEvents...), nil
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
