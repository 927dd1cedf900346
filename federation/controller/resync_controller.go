package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/heartbeat"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// Event reasons of the resync lease controller, on the ManagedCluster.
const (
	EventLeaseCreated = "ResyncLeaseCreated"
	EventLeaseDeleted = "ResyncLeaseDeleted"
)

// ResyncReconciler keeps, for every ManagedCluster that hosts a subset of a
// FleetSet, the ManifestWork v1alpha1.ResyncWorkName carrying the resync
// Lease (contract in api/v1alpha1): it renews renewTime every third of
// LeaseDuration while the cluster's ManagedClusterConditionAvailable is True,
// leaves it alone otherwise, and deletes the work when no FleetSet uses the
// cluster any more. Requests are keyed by cluster name.
type ResyncReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// HubIdentity is the Lease's holderIdentity.
	HubIdentity string
	// LeaseDuration is the Lease's leaseDurationSeconds (whole seconds).
	LeaseDuration time.Duration
	// Clock gives the renewal times.
	Clock clock.Clock

	// APIReader reads the resync work live from the apiserver (see
	// resyncWork); nil: through Client.
	APIReader client.Reader
	// Peers returns the members' peer URLs by cluster (the hub's heartbeat
	// observer), delivered to every member with its lease; nil: none.
	Peers func() map[string][]string
	// Heartbeats, when set, forgets the heartbeat of a departed cluster
	// (removeHeartbeat), and says which clusters are members (IsMember).
	Heartbeats *heartbeat.Observer
	// AddOns is true when the hub serves OCM's add-on API: the
	// ManagedClusterAddOn v1alpha1.AddOnName is watched, so disabling the
	// add-on in a cluster forgets its heartbeat.
	AddOns bool
}

// SetupWithManager watches ManagedClusters (creation, deletion, change of
// availability), FleetSets (mapped to the clusters in their spec and status;
// see leaseClustersChanged) and the hub's ManifestWorks (mapped to their cluster namespace; see
// leaseRelevant).
func (r *ResyncReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	if r.AddOns {
		b = b.Watches(addOnMeta(kindManagedClusterAddOn), handler.EnqueueRequestsFromMapFunc(workCluster),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == fleetv1.AddOnName })))
	}
	return b.
		Named("resync-lease").
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(availabilityChanged())).
		Watches(&fleetv1.FleetSet{}, handler.EnqueueRequestsFromMapFunc(clustersOfFleetSet), builder.WithPredicates(leaseClustersChanged())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workCluster), builder.WithPredicates(leaseRelevant())).
		// A heartbeat Lease created in the namespace of a departed cluster
		// is deleted again (removeHeartbeat).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(workCluster), builder.WithPredicates(heartbeatCreated())).
		Complete(r)
}

// heartbeatCreated passes the creations of heartbeat Leases only.
func heartbeatCreated() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return e.Object.GetName() == fleetv1.HeartbeatLeaseName },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// leaseClustersChanged passes FleetSet creations and deletions, and the
// updates that change what the resync reconcile reads of a FleetSet: its
// deletionTimestamp, the clusters it uses or may use (clustersOf), or where
// its subsets run and their failover phases; not the status updates of
// feedback and conditions.
func leaseClustersChanged() predicate.Predicate {
	return fleetSetChanged(func(o, n *fleetv1.FleetSet) bool { return !slices.Equal(leaseView(o), leaseView(n)) })
}

// fleetSetChanged passes FleetSet updates that start its deletion, change
// the clusters its spec and status name (clustersOf), or for which
// changed(old, new) is true; updates of other objects pass.
func fleetSetChanged(changed func(o, n *fleetv1.FleetSet) bool) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*fleetv1.FleetSet)
			n, ok2 := e.ObjectNew.(*fleetv1.FleetSet)
			if !ok1 || !ok2 {
				return true
			}
			return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() || !slices.Equal(clustersOf(o), clustersOf(n)) || changed(o, n)
		},
	}
}

// leaseView is what holdsMovedSubsets reads of a FleetSet: each spec
// subset's name and home cluster, and the name, cluster and phase of each
// status subset in failover.
func leaseView(fs *fleetv1.FleetSet) []string {
	out := make([]string, 0, len(fs.Spec.Topology.Subsets))
	for _, s := range fs.Spec.Topology.Subsets {
		out = append(out, "spec/"+s.Name+"/"+s.Cluster)
	}
	for _, s := range fs.Status.Subsets {
		if s.Failover != "" {
			out = append(out, "status/"+s.Name+"/"+s.Cluster+"/"+string(s.Failover))
		}
	}
	return out
}

// leaseRelevant passes the ManifestWork events that can let a cluster's
// lease be renewed or recreated: every event of the resync work itself, and
// of the FleetSets' works the deletions, a new deletionTimestamp and a
// change of Applied at the work's generation (what holdsMovedSubsets reads
// and waits for); not their creations and feedback updates, which can only
// hold a renewal back, and renewals come on schedule.
func leaseRelevant() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return e.Object.GetName() == fleetv1.ResyncWorkName },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectNew.GetName() == fleetv1.ResyncWorkName {
				return true
			}
			o, ok1 := e.ObjectOld.(*workv1.ManifestWork)
			n, ok2 := e.ObjectNew.(*workv1.ManifestWork)
			if !ok1 || !ok2 {
				return true
			}
			return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() || manifestwork.AppliedAtGeneration(o) != manifestwork.AppliedAtGeneration(n)
		},
	}
}

// clustersOfFleetSet maps a FleetSet to the resync leases of every cluster
// it uses now or used before (spec and status), so a lease is renewed, or
// deleted once no FleetSet uses its cluster.
func clustersOfFleetSet(_ context.Context, o client.Object) []reconcile.Request {
	fs, ok := o.(*fleetv1.FleetSet)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, c := range fleetSetClusters(fs, true) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c}})
	}
	return out
}

func workCluster(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
}

// Reconcile keeps the resync lease of one cluster; see reconcile.
func (r *ResyncReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Get(ctx, req.NamespacedName, mc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		mc = nil
	}
	return r.reconcile(ctx, req.Name, mc)
}

// reconcile deletes the resync work of a cluster that is gone or hosts no
// subset (removeLease); otherwise, while the cluster is available and holds
// no subset moved away from it, keeps its Lease (renewLease).
func (r *ResyncReconciler) reconcile(ctx context.Context, cluster string, mc *clusterv1.ManagedCluster) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("cluster", cluster)
	hosted, err := r.hostsSubset(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	departed := mc == nil || !mc.DeletionTimestamp.IsZero() ||
		(r.Heartbeats != nil && r.Heartbeats.IsMember != nil && !r.Heartbeats.IsMember(cluster))
	if departed {
		if err := r.removeHeartbeat(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	if mc == nil || !hosted {
		return ctrl.Result{}, r.removeLease(ctx, cluster, mc, hosted)
	}
	if !isAvailable(mc) {
		// Not renewing is the signal: the member's Lease expires.
		logger.V(2).Info("Cluster unavailable: not renewing the resync lease")
		return ctrl.Result{}, nil
	}
	if reason, err := r.holdsMovedSubsets(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	} else if reason != "" {
		// Fencing: a returning cluster gets no fresh lease (its pods stay
		// fenced) until it has removed what moved elsewhere.
		logger.V(2).Info("Not renewing the resync lease until relocated subsets are removed", "reason", reason)
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	return r.renewLease(ctx, cluster, mc)
}

// removeHeartbeat deletes the heartbeat Lease of cluster, whose
// ManagedCluster is gone or being deleted or whose fleetset add-on is
// disabled (isMember), and forgets it: a departed
// cluster is no member, its peer URL is no longer delivered and it counts
// neither as a peer nor as lost (a stale Lease would count as a silent peer
// in every member's decision during a hub outage). It returns the delete's
// error; a Lease already gone is none.
func (r *ResyncReconciler) removeHeartbeat(ctx context.Context, cluster string) error {
	if r.Heartbeats != nil {
		r.Heartbeats.Forget(cluster)
	}
	l := &coordinationv1.Lease{}
	l.Namespace, l.Name = cluster, fleetv1.HeartbeatLeaseName
	err := r.Delete(ctx, l)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting the heartbeat Lease of departed cluster %s: %w", cluster, err)
	}
	departedLeases.Inc()
	log.FromContext(ctx).Info("Deleted the heartbeat Lease of a cluster that is no longer a member", "cluster", cluster)
	return nil
}

// removeLease deletes the resync work of cluster (mc nil: gone), unless it
// is gone or being deleted already.
func (r *ResyncReconciler) removeLease(ctx context.Context, cluster string, mc *clusterv1.ManagedCluster, hosted bool) error {
	work, err := r.resyncWork(ctx, cluster)
	if err != nil || work == nil || !work.DeletionTimestamp.IsZero() {
		return err
	}
	if err := r.Delete(ctx, work); client.IgnoreNotFound(err) != nil {
		return err
	}
	log.FromContext(ctx).V(2).Info("Deleted resync lease work", "cluster", cluster, "hosted", hosted)
	if mc != nil {
		r.Recorder.Event(mc, corev1.EventTypeNormal, EventLeaseDeleted, "No FleetSet uses the cluster: deleted ManifestWork "+fleetv1.ResyncWorkName)
	}
	return nil
}

// renewLease creates the resync work of cluster, or renews its Lease when a
// third of the duration has passed (or its holder or duration differ), and
// requeues for the next renewal.
func (r *ResyncReconciler) renewLease(ctx context.Context, cluster string, mc *clusterv1.ManagedCluster) (ctrl.Result, error) {
	work, err := r.resyncWork(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.NewMicroTime(r.Clock.Now())
	period := r.LeaseDuration / 3
	durationSeconds := int32(r.LeaseDuration / time.Second)
	if work == nil {
		l := manifestwork.Lease{HolderIdentity: r.HubIdentity, DurationSeconds: durationSeconds, AcquireTime: now, RenewTime: now}
		w, err := manifestwork.ResyncWork(cluster, l, r.peers())
		if err != nil {
			return ctrl.Result{}, err
		}
		// Create, never overwrite: a work created since the read holds the
		// acquireTime to keep.
		if err := r.Create(ctx, w); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating resync lease work in %s: %w", cluster, err)
		}
		leaseRenewals.WithLabelValues(cluster).Inc()
		r.Recorder.Event(mc, corev1.EventTypeNormal, EventLeaseCreated, "Created ManifestWork "+fleetv1.ResyncWorkName)
		return ctrl.Result{RequeueAfter: period}, nil
	}
	if !work.DeletionTimestamp.IsZero() {
		return ctrl.Result{RequeueAfter: period}, nil
	}
	lease, err := manifestwork.LeaseOf(work)
	valid := err == nil && lease.HolderIdentity == r.HubIdentity && lease.DurationSeconds == durationSeconds
	if valid {
		if due := lease.RenewTime.Add(period); now.Time.Before(due) {
			return ctrl.Result{RequeueAfter: due.Sub(now.Time)}, nil
		}
	}
	acquire := lease.AcquireTime
	if !valid || lease.HolderIdentity != r.HubIdentity {
		acquire = now
	}
	l := manifestwork.Lease{HolderIdentity: r.HubIdentity, DurationSeconds: durationSeconds, AcquireTime: acquire, RenewTime: now}
	w, err := manifestwork.ResyncWork(cluster, l, r.peers())
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, _, err := manifestwork.ApplyTo(ctx, r.Client, work, w); err != nil {
		return ctrl.Result{}, fmt.Errorf("renewing resync lease in %s: %w", cluster, err)
	}
	leaseRenewals.WithLabelValues(cluster).Inc()
	log.FromContext(ctx).V(4).Info("Renewed resync lease", "cluster", cluster, "renewTime", now)
	return ctrl.Result{RequeueAfter: period}, nil
}

// holdsMovedSubsets returns why the cluster may still run a subset that
// was relocated away from it ("" when it cannot): one of the hub's
// FleetSet ManifestWorks in the cluster is being deleted, or a FleetSet
// whose subset has this cluster as home runs it elsewhere and its work here
// is not yet applied at its latest generation (the one without the subset).
// It reads through indexes (deletingWorkIndex, movedFromIndex), so its cost
// does not grow with the FleetSets and works a cluster holds.
func (r *ResyncReconciler) holdsMovedSubsets(ctx context.Context, cluster string) (string, error) {
	var deleting workv1.ManifestWorkList
	if err := r.List(ctx, &deleting, client.InNamespace(cluster), client.MatchingFields{deletingWorkIndex: "true"}, client.Limit(1)); err != nil {
		return "", fmt.Errorf("listing ManifestWorks being deleted in %s: %w", cluster, err)
	}
	if len(deleting.Items) > 0 {
		return fmt.Sprintf("ManifestWork %s is being deleted", deleting.Items[0].Name), nil
	}
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.MatchingFields{movedFromIndex: cluster}); err != nil {
		return "", fmt.Errorf("listing FleetSets moved from cluster %s: %w", cluster, err)
	}
	for i := range list.Items {
		fs := &list.Items[i]
		for _, ss := range fs.Status.Subsets {
			if movedFrom(fs, ss) != cluster {
				continue
			}
			w := &workv1.ManifestWork{}
			switch err := r.Get(ctx, types.NamespacedName{Namespace: cluster, Name: manifestwork.WorkName(fs.Namespace, fs.Name)}, w); {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return "", fmt.Errorf("getting ManifestWork of %s/%s in %s: %w", fs.Namespace, fs.Name, cluster, err)
			}
			if !manifestwork.AppliedAtGeneration(w) {
				return fmt.Sprintf("subset %s of FleetSet %s/%s moved to %s; ManifestWork %s not yet applied", ss.Name, fs.Namespace, fs.Name, ss.Cluster, w.Name), nil
			}
		}
	}
	return "", nil
}

// peers returns the members' peer URLs, none without Peers.
func (r *ResyncReconciler) peers() map[string][]string {
	if r.Peers == nil {
		return nil
	}
	return r.Peers()
}

// resyncWork reads the resync work of cluster live (APIReader), or nil when
// there is none: its renewTime and resourceVersion must be current, and
// during a burst of ManifestWork writes the cache can lag by tens of
// seconds, which would hold renewals back (fencing the members) or make
// them conflict.
func (r *ResyncReconciler) resyncWork(ctx context.Context, cluster string) (*workv1.ManifestWork, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	w := &workv1.ManifestWork{}
	switch err := reader.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.ResyncWorkName}, w); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading resync lease work in %s: %w", cluster, err)
	}
	return w, nil
}

// hostsSubset reports whether a FleetSet that is not being deleted has a
// subset on cluster (liveClusterIndex: a lookup of at most one FleetSet).
func (r *ResyncReconciler) hostsSubset(ctx context.Context, cluster string) (bool, error) {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.MatchingFields{liveClusterIndex: cluster}, client.Limit(1), client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing FleetSets on cluster %s: %w", cluster, err)
	}
	return len(list.Items) > 0, nil
}
