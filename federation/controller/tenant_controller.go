package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
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
	"github.com/fleetset/fleetset/federation/tenancy"
)

// Event reasons of the tenant controller, on the ManagedCluster.
const (
	EventTenantCreated  = "TenantWorkCreated"
	EventTenantRestored = "TenantWorkRestored"
	EventTenantDeleted  = "TenantWorkDeleted"
	EventTenantFailed   = "TenantWorkFailed"
)

// tenantRetry is how soon a cluster is reconciled again while a tenant work
// it needs is still being deleted (it is created again once gone).
const tenantRetry = 2 * time.Second

// tenantCoalesce is how long a FleetSet ManifestWork's event waits before
// its cluster is reconciled, so that a burst of work writes in a cluster
// (a thousand FleetSets delivered at once) costs one reconcile, which lists
// every work of the cluster, per interval instead of one per write. What
// must happen at once does not wait: a FleetSet's events (a new tenant,
// a level change) and a tenant work's own events are enqueued at once, and
// the FleetSet's works wait for their tenant work anyway (holdForTenants).
// A FleetSet work's events only let a tenant work go (the namespace's last
// work deleted) or follow a level change the FleetSet's event brought.
const tenantCoalesce = time.Second

// TenantReconciler keeps, in every cluster namespace of the hub, one tenant
// work (manifestwork.TenantWork, named v1alpha1.TenantWorkName) per hub
// namespace that has a FleetSet ManifestWork there (one being deleted too)
// or a FleetSet, not being deleted, that uses or may use the cluster
// (ClusterIndex: spec, status and fallback clusters, so the executor is in
// place before a first delivery or a relocation) and that the hub may
// deliver there: not in a reserved namespace, the cluster in a
// ManagedClusterSet bound to the namespace (the FleetSet reconciler's own
// checks, tenancy.Reserved and tenancy.ClusterSets; an unbound namespace
// writes nothing anywhere), the namespace's Pod Security level valid.
// The tenant work holds the member namespace, its executor ServiceAccount
// (in the add-on's namespace) and the RoleBinding that lets it write the
// delivered kinds in that namespace only. The FleetSet works run as that executor (spec.executor), so a
// FleetSet can write nowhere but its own namespace. A tenant work is
// deleted once its namespace has no FleetSet work in the cluster left (the
// member namespace is orphaned: it stays). A tenant work someone else
// changed is written back. Requests are keyed by cluster name; reads go
// through the cache (the hub's works only).
type TenantReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// ReservedNamespaces are hub namespaces whose FleetSets are never
	// delivered, besides v1alpha1.ReservedNamespaces (the
	// FleetSetReconciler's, from Options).
	ReservedNamespaces []string

	// written holds, by work key, the generation of each tenant work this
	// reconciler last wrote: a higher one means someone else changed it.
	written sync.Map
}

// SetupWithManager watches the hub's ManifestWorks, mapped to their cluster
// namespace (tenantRelevant), FleetSets, mapped to the clusters they use or
// used (tenantFleetSetChanged), the labels of hub Namespaces (their
// platform Pod Security level), mapped to their FleetSets' clusters, and
// what decides whether a namespace may use a cluster: its
// ManagedClusterSetBindings and the ManagedClusterSets they name, mapped to
// the clusters of the namespaces' FleetSets, and the labels of
// ManagedClusters (their sets), mapped to the cluster.
func (r *TenantReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenant").
		Watches(&workv1.ManifestWork{}, tenantWorkHandler(tenantCoalesce), builder.WithPredicates(tenantRelevant())).
		Watches(&fleetv1.FleetSet{}, handler.EnqueueRequestsFromMapFunc(clustersOfFleetSet), builder.WithPredicates(tenantFleetSetChanged())).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfNamespace), builder.OnlyMetadata, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfBinding)).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfClusterSet)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(clusterItself), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}

// tenantWorkHandler enqueues a ManifestWork's cluster namespace: at once
// for a tenant work, after delay for a FleetSet work (see tenantCoalesce;
// the delaying queue keeps one pending request per cluster, so events
// within delay share one reconcile).
func tenantWorkHandler(delay time.Duration) handler.EventHandler {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}
		if isTenantWork(o) {
			q.Add(req)
			return
		}
		q.AddAfter(req, delay)
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// clustersOfNamespace maps a hub Namespace (its metadata, whose labels set
// its FleetSets' platform level) to the clusters its FleetSets use or may
// use.
func (r *TenantReconciler) clustersOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.clustersOfNamespaces(ctx, o.GetName())
}

// clusterItself maps a ManagedCluster to its own name (the request key).
func clusterItself(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

// clustersOfBinding maps a ManagedClusterSetBinding to the clusters its
// namespace's FleetSets use or may use: it decides which of them the
// namespace may reach.
func (r *TenantReconciler) clustersOfBinding(ctx context.Context, o client.Object) []reconcile.Request {
	return r.clustersOfNamespaces(ctx, o.GetNamespace())
}

// clustersOfClusterSet maps a ManagedClusterSet (its cluster selector) to
// the clusters of the FleetSets of every namespace with a binding to it.
func (r *TenantReconciler) clustersOfClusterSet(ctx context.Context, o client.Object) []reconcile.Request {
	var bindings clusterv1beta2.ManagedClusterSetBindingList
	if err := r.List(ctx, &bindings); err != nil {
		log.FromContext(ctx).Error(err, "Listing ManagedClusterSetBindings", "clusterSet", o.GetName())
		return nil
	}
	var namespaces []string
	for _, b := range bindings.Items {
		if b.Spec.ClusterSet == o.GetName() && !slices.Contains(namespaces, b.Namespace) {
			namespaces = append(namespaces, b.Namespace)
		}
	}
	return r.clustersOfNamespaces(ctx, namespaces...)
}

// clustersOfNamespaces returns the clusters the FleetSets of the hub
// namespaces use or may use, each once.
func (r *TenantReconciler) clustersOfNamespaces(ctx context.Context, namespaces ...string) []reconcile.Request {
	seen := map[string]bool{}
	var out []reconcile.Request
	for _, ns := range namespaces {
		out = append(out, r.clustersOfOneNamespace(ctx, ns, seen)...)
	}
	return out
}

func (r *TenantReconciler) clustersOfOneNamespace(ctx context.Context, ns string, seen map[string]bool) []reconcile.Request {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing FleetSets of a namespace", "namespace", ns)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		for _, c := range clustersOf(&list.Items[i]) {
			if !seen[c] {
				seen[c] = true
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c}})
			}
		}
	}
	return out
}

// tenantFleetSetChanged passes FleetSet creations and deletions, and the
// updates that change its deletionTimestamp, the clusters it may use
// (clustersOf) or its spec.podSecurityLevel.
func tenantFleetSetChanged() predicate.Predicate {
	return fleetSetChanged(func(o, n *fleetv1.FleetSet) bool { return o.Spec.PodSecurityLevel != n.Spec.PodSecurityLevel })
}

// tenantRelevant passes the ManifestWork events that can change which
// tenant works a cluster needs, or what they hold: creations and deletions
// of FleetSet and tenant works, a FleetSet work's new deletionTimestamp or
// Pod Security level, and a tenant work's change of spec (generation),
// labels or deletionTimestamp; not status and feedback updates.
func tenantRelevant() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isTenantOrFleetSetWork(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isTenantOrFleetSetWork(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			if o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero() {
				return isTenantOrFleetSetWork(n)
			}
			if _, ok := manifestwork.Owner(n); ok {
				return o.GetAnnotations()[fleetv1.AnnotationPodSecurityLevel] != n.GetAnnotations()[fleetv1.AnnotationPodSecurityLevel]
			}
			if isTenantWork(o) || isTenantWork(n) {
				return o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetLabels(), n.GetLabels())
			}
			return false
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// isTenantWork reports whether o is a tenant work: label
// v1alpha1.LabelTenant naming the namespace its name is made of.
func isTenantWork(o client.Object) bool {
	ns, ok := o.GetLabels()[fleetv1.LabelTenant]
	return ok && o.GetName() == fleetv1.TenantWorkName(ns)
}

func isTenantOrFleetSetWork(o client.Object) bool {
	_, owned := manifestwork.Owner(o)
	return owned || isTenantWork(o)
}

// Reconcile keeps the tenant works of one cluster; see TenantReconciler.
// It returns the first write error (the request is retried), having tried
// every namespace.
func (r *TenantReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := req.Name
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.InNamespace(cluster), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing ManifestWorks in %s: %w", cluster, err)
	}
	levels := map[string][]string{}
	tenants := map[string]*workv1.ManifestWork{}
	for i := range list.Items {
		w := &list.Items[i]
		if owner, ok := manifestwork.Owner(w); ok {
			levels[owner.Namespace] = append(levels[owner.Namespace], w.Annotations[fleetv1.AnnotationPodSecurityLevel])
		} else if isTenantWork(w) {
			tenants[w.Labels[fleetv1.LabelTenant]] = w
		}
	}
	mc := &clusterv1.ManagedCluster{}
	if err := r.Get(ctx, types.NamespacedName{Name: cluster}, mc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		mc = nil // events go nowhere; the works are still kept
	}
	// FleetSets that may use the cluster and have no work there yet: their
	// effective level (the namespace's platform level and the spec), unless
	// the hub may not deliver them there (then they are never delivered,
	// and nothing of their namespace is written in the cluster).
	var fleetSets fleetv1.FleetSetList
	if err := r.List(ctx, &fleetSets, client.MatchingFields{liveClusterIndex: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing FleetSets on cluster %s: %w", cluster, err)
	}
	gates := map[string]*tenantGate{} // by namespace: read once per reconcile
	var errs []error
	unknown := map[string]bool{} // namespaces whose reads failed: their tenant works are left as they are
	for i := range fleetSets.Items {
		fs := &fleetSets.Items[i]
		level, err := r.admit(ctx, fs, cluster, mc, gates)
		if err != nil {
			if !isTenancyRefusal(err) {
				if !unknown[fs.Namespace] {
					errs = append(errs, err)
				}
				unknown[fs.Namespace] = true
				continue
			}
			log.FromContext(ctx).V(2).Info("No tenant work for a FleetSet the hub may not deliver to the cluster", "fleetSet", client.ObjectKeyFromObject(fs), "cluster", cluster, "reason", err.Error())
			continue
		}
		levels[fs.Namespace] = append(levels[fs.Namespace], string(level))
	}
	namespaces := make([]string, 0, len(levels))
	for ns := range levels {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var res ctrl.Result
	for _, ns := range namespaces {
		wait, err := r.keep(ctx, mc, cluster, ns, manifestwork.TenantLevel(levels[ns]), tenants[ns])
		if err != nil {
			errs = append(errs, err)
		}
		if wait {
			res.RequeueAfter = tenantRetry
		}
	}
	for ns, w := range tenants {
		if _, used := levels[ns]; used || unknown[ns] || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
			tenantWrites.WithLabelValues("delete", "error").Inc()
			errs = append(errs, fmt.Errorf("deleting tenant work %s/%s: %w", cluster, w.Name, err))
			continue
		}
		tenantWrites.WithLabelValues("delete", "ok").Inc()
		r.written.Delete(client.ObjectKeyFromObject(w))
		r.event(mc, corev1.EventTypeNormal, EventTenantDeleted, fmt.Sprintf("No FleetSet of namespace %s uses the cluster: deleted ManifestWork %s (the member namespace stays)", ns, w.Name))
	}
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	return res, nil
}

// keep creates ns's tenant work in cluster, or writes it over cur when it
// differs from what the hub renders or someone else changed it. It reports
// true when cur is being deleted: the work is created again once gone.
func (r *TenantReconciler) keep(ctx context.Context, mc *clusterv1.ManagedCluster, cluster, ns string, level fleetv1.PodSecurityLevel, cur *workv1.ManifestWork) (bool, error) {
	if cur != nil && !cur.DeletionTimestamp.IsZero() {
		log.FromContext(ctx).V(2).Info("Tenant work still being deleted; creating it again once gone", "cluster", cluster, "namespace", ns)
		return true, nil
	}
	desired, err := manifestwork.TenantWork(cluster, ns, level)
	if err != nil {
		r.event(mc, corev1.EventTypeWarning, EventTenantFailed, fmt.Sprintf("tenant work of namespace %s not rendered: %v", ns, err))
		return false, err
	}
	var op controllerutil.OperationResult
	var w *workv1.ManifestWork
	restore := cur != nil && r.editedByOthers(cur)
	switch {
	case cur == nil:
		op, w, err = manifestwork.ApplyTo(ctx, r.Client, nil, desired)
	case restore:
		op, w, err = manifestwork.Update(ctx, r.Client, cur.DeepCopy(), desired)
	default:
		op, w, err = manifestwork.ApplyTo(ctx, r.Client, cur.DeepCopy(), desired)
	}
	name := "update"
	switch {
	case cur == nil:
		name = "create"
	case restore:
		name = "restore"
	}
	if err != nil {
		tenantWrites.WithLabelValues(name, "error").Inc()
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			r.event(mc, corev1.EventTypeWarning, EventTenantFailed, err.Error())
		}
		return false, err
	}
	if op == controllerutil.OperationResultNone {
		return false, nil
	}
	tenantWrites.WithLabelValues(name, "ok").Inc()
	r.written.Store(client.ObjectKeyFromObject(w), w.Generation)
	switch name {
	case "create":
		r.event(mc, corev1.EventTypeNormal, EventTenantCreated, fmt.Sprintf("Created ManifestWork %s: namespace %s, its executor ServiceAccount and RoleBinding", w.Name, ns))
	case "restore":
		r.event(mc, corev1.EventTypeWarning, EventTenantRestored, fmt.Sprintf("ManifestWork %s was changed by someone else (generation %d): wrote it back", w.Name, cur.Generation))
	}
	return false, nil
}

// editedByOthers reports whether tenant work w is at a generation above the
// one this reconciler last wrote (unknown after a restart: not edited).
func (r *TenantReconciler) editedByOthers(w *workv1.ManifestWork) bool {
	g, ok := r.written.Load(client.ObjectKeyFromObject(w))
	return ok && w.Generation > g.(int64)
}

func (r *TenantReconciler) event(mc *clusterv1.ManagedCluster, typ, reason, msg string) {
	if mc != nil && r.Recorder != nil {
		r.Recorder.Event(mc, typ, reason, msg)
	}
}

// tenantGate is what the tenant reconciler read of one hub namespace: its
// platform Pod Security level and the cluster sets bound to it, or why
// they cannot be known.
type tenantGate struct {
	level fleetv1.PodSecurityLevel
	sets  *tenancy.ClusterSets
	// refusal refuses the namespace's FleetSets everywhere (a reserved
	// namespace, an invalid platform level); err is a failed read.
	refusal, err error
}

// admit returns fs's effective Pod Security level when the hub may deliver
// it to cluster (mc, nil when the ManagedCluster does not exist), the
// checks of the FleetSet reconciler's delivery gate (admitTenancy,
// admitPlaced), from the same package tenancy rules: fs's namespace is not
// reserved (tenancy.Reserved), its platform level is valid and fs's
// spec.podSecurityLevel within it (tenancy.PlatformLevel, EffectiveLevel),
// and cluster is in a ManagedClusterSet bound to the namespace
// (tenancy.ClusterSets.Admits; a cluster that does not exist is in none).
// A refusal is a tenancyRefusal; other errors are failed reads. gates
// memoises the namespaces' reads (cache reads, once per namespace).
func (r *TenantReconciler) admit(ctx context.Context, fs *fleetv1.FleetSet, cluster string, mc *clusterv1.ManagedCluster, gates map[string]*tenantGate) (fleetv1.PodSecurityLevel, error) {
	g, ok := gates[fs.Namespace]
	if !ok {
		g = r.readGate(ctx, fs.Namespace)
		gates[fs.Namespace] = g
	}
	switch {
	case g.err != nil:
		return "", g.err
	case g.refusal != nil:
		return "", g.refusal
	}
	level, err := tenancy.EffectiveLevel(fs.Namespace, g.level, fs.Spec.PodSecurityLevel)
	if err != nil {
		return "", tenancyRefusal{err}
	}
	admitted := false
	if mc != nil {
		admitted, _ = g.sets.Admits(mc)
	}
	if !admitted {
		return "", tenancyRefusal{errors.New(g.sets.Refusal("cluster", cluster, mc))}
	}
	return level, nil
}

// readGate reads hub namespace ns's platform level (the cached metadata of
// the Namespace) and its bound cluster sets.
func (r *TenantReconciler) readGate(ctx context.Context, ns string) *tenantGate {
	g := &tenantGate{}
	if entry, reserved := tenancy.Reserved(ns, r.ReservedNamespaces); reserved {
		g.refusal = tenancyRefusal{errors.New(tenancy.ReservedRefusal(ns, entry))}
		return g
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, types.NamespacedName{Name: ns}, meta); err != nil {
		if apierrors.IsNotFound(err) {
			g.refusal = tenancyRefusal{fmt.Errorf("namespace %s: not found", ns)}
		} else {
			g.err = fmt.Errorf("reading namespace %s: %w", ns, err)
		}
		return g
	}
	level, err := tenancy.PlatformLevel(ns, meta.Labels)
	if err != nil {
		g.refusal = tenancyRefusal{err}
		return g
	}
	g.level = level
	if g.sets, err = tenancy.ReadClusterSets(ctx, r.Client, ns); err != nil {
		g.err = err
	}
	return g
}
