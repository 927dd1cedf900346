package controller

import (
	"context"
	"fmt"
	"time"

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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
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
}

// SetupWithManager watches ManagedClusters (creation, deletion, change of
// availability), FleetSets (mapped to the clusters in their spec and status)
// and the hub's ManifestWorks (mapped to their cluster namespace).
func (r *ResyncReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("resync-lease").
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(availabilityChanged())).
		Watches(&fleetv1.FleetSet{}, handler.EnqueueRequestsFromMapFunc(clustersOfFleetSet)).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(workCluster)).
		Complete(r)
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
// subset; otherwise, while the cluster is available, creates the work or
// renews its Lease when a third of the duration has passed (or its holder or
// duration differ), and requeues for the next renewal.
func (r *ResyncReconciler) reconcile(ctx context.Context, cluster string, mc *clusterv1.ManagedCluster) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("cluster", cluster)
	hosted, err := r.hostsSubset(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	work := &workv1.ManifestWork{}
	err = r.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.ResyncWorkName}, work)
	switch {
	case apierrors.IsNotFound(err):
		work = nil
	case err != nil:
		return ctrl.Result{}, err
	}
	if mc == nil || !hosted {
		if work == nil || !work.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil
		}
		if err := r.Delete(ctx, work); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		logger.V(2).Info("Deleted resync lease work", "hosted", hosted)
		if mc != nil {
			r.Recorder.Event(mc, corev1.EventTypeNormal, EventLeaseDeleted, "No FleetSet uses the cluster: deleted ManifestWork "+fleetv1.ResyncWorkName)
		}
		return ctrl.Result{}, nil
	}
	if !isAvailable(mc) {
		// Not renewing is the signal: the member's Lease expires.
		if work != nil {
			logger.V(2).Info("Cluster unavailable: not renewing the resync lease")
		}
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
	now := metav1.NewMicroTime(r.Clock.Now())
	period := r.LeaseDuration / 3
	durationSeconds := int32(r.LeaseDuration / time.Second)
	if work == nil {
		w, err := manifestwork.ResyncWork(cluster, manifestwork.Lease{HolderIdentity: r.HubIdentity, DurationSeconds: durationSeconds, AcquireTime: now, RenewTime: now})
		if err != nil {
			return ctrl.Result{}, err
		}
		// Create, never overwrite: a work the cache has not seen yet holds
		// the acquireTime to keep.
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
	w, err := manifestwork.ResyncWork(cluster, manifestwork.Lease{HolderIdentity: r.HubIdentity, DurationSeconds: durationSeconds, AcquireTime: acquire, RenewTime: now})
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, _, err := manifestwork.Apply(ctx, r.Client, w); err != nil {
		return ctrl.Result{}, fmt.Errorf("renewing resync lease in %s: %w", cluster, err)
	}
	leaseRenewals.WithLabelValues(cluster).Inc()
	logger.V(4).Info("Renewed resync lease", "renewTime", now)
	return ctrl.Result{RequeueAfter: period}, nil
}

// holdsMovedSubsets returns why the cluster may still run a subset that
// was relocated away from it ("" when it cannot): one of the hub's
// FleetSet ManifestWorks in the cluster is being deleted, or a FleetSet
// whose subset has this cluster as home runs it elsewhere and its work here
// is not yet applied at its latest generation (the one without the subset).
func (r *ResyncReconciler) holdsMovedSubsets(ctx context.Context, cluster string) (string, error) {
	var works workv1.ManifestWorkList
	if err := r.List(ctx, &works, client.InNamespace(cluster), client.HasLabels{fleetv1.LabelOwnerName}); err != nil {
		return "", fmt.Errorf("listing ManifestWorks in %s: %w", cluster, err)
	}
	byOwner := map[types.NamespacedName]*workv1.ManifestWork{}
	for i := range works.Items {
		w := &works.Items[i]
		if !w.DeletionTimestamp.IsZero() {
			return fmt.Sprintf("ManifestWork %s is being deleted", w.Name), nil
		}
		byOwner[types.NamespacedName{Namespace: w.Labels[fleetv1.LabelOwnerNamespace], Name: w.Labels[fleetv1.LabelOwnerName]}] = w
	}
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.MatchingFields{ClusterIndex: cluster}); err != nil {
		return "", fmt.Errorf("listing FleetSets on cluster %s: %w", cluster, err)
	}
	for _, fs := range list.Items {
		for _, ss := range fs.Status.Subsets {
			home := ""
			for _, s := range fs.Spec.Topology.Subsets {
				if s.Name == ss.Name {
					home = s.Cluster
				}
			}
			if home != cluster || ss.Cluster == cluster || ss.Failover == "" {
				continue
			}
			if w, ok := byOwner[client.ObjectKeyFromObject(&fs)]; ok && !appliedAtGeneration(w) {
				return fmt.Sprintf("subset %s of FleetSet %s/%s moved to %s; ManifestWork %s not yet applied", ss.Name, fs.Namespace, fs.Name, ss.Cluster, w.Name), nil
			}
		}
	}
	return "", nil
}

// hostsSubset reports whether a FleetSet that is not being deleted has a
// subset on cluster.
func (r *ResyncReconciler) hostsSubset(ctx context.Context, cluster string) (bool, error) {
	var list fleetv1.FleetSetList
	if err := r.List(ctx, &list, client.MatchingFields{ClusterIndex: cluster}); err != nil {
		return false, fmt.Errorf("listing FleetSets on cluster %s: %w", cluster, err)
	}
	for _, fs := range list.Items {
		if fs.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
