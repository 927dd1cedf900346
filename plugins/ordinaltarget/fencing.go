package ordinaltarget

// Member-side fencing on the resync lease (the contract is in
// api/v1alpha1/resync.go): while the Lease fleetset-system/fleetset-resync is
// expired or missing, by this cluster's clock, the pods of placements with
// spec.fencing are not scheduled (the SubsetPlacement plugin asks Fenced),
// and the Fencer deletes the running ones once the lease has been expired
// for the placement's graceSeconds.

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// FenceInterval is how often the Fencer checks the lease.
var FenceInterval = time.Second

// leaseKey is the resync Lease.
var leaseKey = types.NamespacedName{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName}

// LeaseFence applies the contract's rule to the resync Lease l at now: it
// fences when now > spec.renewTime + spec.leaseDurationSeconds, or when
// renewTime or leaseDurationSeconds is unset. expiry is renewTime +
// leaseDurationSeconds, zero when either is unset. reason, set only when
// fenced, names the Lease and its expiry.
func LeaseFence(l *coordinationv1.Lease, now time.Time) (fenced bool, reason string, expiry time.Time) {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true, fmt.Sprintf("fenced: Lease %s has no renewTime or leaseDurationSeconds", leaseKey), time.Time{}
	}
	expiry = l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if now.After(expiry) {
		return true, fmt.Sprintf("fenced: Lease %s expired at %s", leaseKey, expiry.UTC().Format(time.RFC3339)), expiry
	}
	return false, "", expiry
}

// leaseFence reads the resync Lease from reader and applies LeaseFence; a
// missing Lease fences, with a zero expiry. err is any other read error,
// and then nothing is decided.
func leaseFence(ctx context.Context, reader client.Reader, now time.Time) (fenced bool, reason string, expiry time.Time, err error) {
	l := &coordinationv1.Lease{}
	if err := reader.Get(ctx, leaseKey, l); err != nil {
		if apierrors.IsNotFound(err) {
			return true, fmt.Sprintf("fenced: Lease %s not found", leaseKey), time.Time{}, nil
		}
		return false, "", time.Time{}, fmt.Errorf("reading Lease %s: %w", leaseKey, err)
	}
	fenced, reason, expiry = LeaseFence(l, now)
	return fenced, reason, expiry, nil
}

// Fenced reports whether, at now, the resync Lease fences the pods of
// placements with spec.fencing: it is expired (now > renewTime +
// leaseDurationSeconds, by this cluster's clock), has no renewTime or
// leaseDurationSeconds, or is missing. A missing Lease fences too, and that
// includes a cluster that has just joined the fleet and not yet received the
// Lease from the hub: per the contract, an actor that cannot see a live
// lease must assume it is cut off. reason names the Lease and its expiry;
// expiry is zero when unknown (missing, or no renewTime or duration).
//
// It reads the Lease from the informer cache, never the apiserver, so it is
// cheap enough for every scheduling cycle. A read error other than NotFound
// (which an informer cache does not give in practice) fences, with the error
// in reason: the gate fails closed.
func (r *Resolver) Fenced(now time.Time) (fenced bool, reason string, expiry time.Time) {
	fenced, reason, expiry, err := leaseFence(context.Background(), r.cache, now)
	if err != nil {
		return true, "fenced: " + err.Error(), time.Time{}
	}
	return fenced, reason, expiry
}

// OnLeaseChange calls fn each time the cache sees the resync Lease created,
// updated or deleted, including once for the Lease present at start; fn runs
// after the cache holds the new state, so Fenced inside fn sees it. It is a
// no-op for a Resolver built by NewResolver. The cache holds only the resync
// Lease, so fn is never called for another Lease.
func (r *Resolver) OnLeaseChange(fn func()) error {
	if r.leaseInformer == nil {
		return nil
	}
	_, err := r.leaseInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { fn() },
		UpdateFunc: func(interface{}, interface{}) { fn() },
		DeleteFunc: func(interface{}) { fn() },
	})
	return err
}

// StartFencer starts, once per Resolver (so once per scheduler process, for
// all profiles), a Fencer over the scheduler's pod informer and clientset.
// It waits for the pod informer to sync, then sweeps every FenceInterval
// until ctx is done. It reports whether this call started it.
func (r *Resolver) StartFencer(ctx context.Context, pods coreinformers.PodInformer, cs kubernetes.Interface) bool {
	started := false
	r.fencerOnce.Do(func() {
		started = true
		synced := pods.Informer().HasSynced // registers the informer before the factory starts
		f := NewFencer(r, pods.Lister(), cs, time.Now)
		go f.run(ctx, synced)
	})
	return started
}

// Fencer deletes the running pods of fenced placements.
//
// A pod is deleted when all of these hold:
//   - it carries the label fleetset.io/placement and the SubsetPlacement it
//     names (in the pod's namespace) has spec.fencing;
//   - it is bound to a node, not terminating, and not Succeeded or Failed;
//   - the resync Lease is fenced (see Fenced), and has been for at least the
//     placement's graceSeconds: since renewTime + leaseDurationSeconds, or,
//     when that is unknown (the Lease is missing, including right after the
//     cluster joined the fleet, or has no renewTime or duration), since this
//     Fencer first saw it so — a scheduler restart starts that grace over;
//   - the apiserver confirms the Lease is still fenced (one live GET of the
//     Lease per sweep that has pods to delete), so a renewal that the cache
//     has not seen yet never lets a pod be deleted.
//
// Deletion is a normal Delete, with the pod's own grace period, and a UID
// precondition, so a pod re-created meanwhile under the same name is left
// alone (it stays Pending: the SubsetPlacement plugin does not schedule it
// while fenced). PersistentVolumeClaims and every other object are never
// touched; each deletion is logged, nothing else is emitted. Every replica
// of a scheduler Deployment runs a Fencer (fencing does not wait for
// leadership); they make the same decisions, and a second Delete of a pod is
// a no-op.
//
// Sweep is not safe for concurrent use; StartFencer runs one loop.
type Fencer struct {
	resolver *Resolver
	pods     corelisters.PodLister
	client   kubernetes.Interface
	now      func() time.Time
	// unknownSince is when the Fencer first saw the lease fenced without a
	// known expiry; zero otherwise.
	unknownSince time.Time
}

// NewFencer returns a Fencer that reads placements and the lease through r,
// pods from pods, deletes through cs, and takes the time from now.
func NewFencer(r *Resolver, pods corelisters.PodLister, cs kubernetes.Interface, now func() time.Time) *Fencer {
	return &Fencer{resolver: r, pods: pods, client: cs, now: now}
}

func (f *Fencer) run(ctx context.Context, podsSynced toolscache.InformerSynced) {
	logger := klog.FromContext(ctx).WithName("fencer")
	ctx = klog.NewContext(ctx, logger)
	if !toolscache.WaitForCacheSync(ctx.Done(), podsSynced) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if _, err := f.Sweep(ctx); err != nil {
			logger.Error(err, "Fencing sweep failed")
		}
	}, FenceInterval)
}

// victim is a pod to delete and why.
type victim struct {
	pod       *v1.Pod
	placement *fleetv1.SubsetPlacement
}

// Sweep deletes, once, the pods that are fenced and past their grace now
// (see Fencer), and returns how many it deleted. It deletes nothing when
// the lease is fresh, or when reading the lease fails.
func (f *Fencer) Sweep(ctx context.Context) (int, error) {
	now := f.now()
	fenced, reason, expiry, err := leaseFence(ctx, f.resolver.cache, now)
	if err != nil {
		return 0, err
	}
	if !fenced {
		f.unknownSince = time.Time{}
		return 0, nil
	}
	since := f.fencedSince(now, expiry)
	victims, err := f.victims(now, since)
	if err != nil || len(victims) == 0 {
		return 0, err
	}
	if live := f.resolver.apiReader; live != nil {
		fenced, reason, expiry, err = leaseFence(ctx, live, now)
		if err != nil {
			return 0, err
		}
		if !fenced {
			return 0, nil // renewed; the cache will follow
		}
		if !expiry.IsZero() && expiry.After(since) {
			// Renewed since the cache's view, and expired again: the grace
			// counts from the later expiry.
			since = expiry
			victims = due(victims, now, since)
		}
	}
	logger := klog.FromContext(ctx)
	deleted := 0
	var errs []error
	for _, v := range victims {
		p := v.pod
		err := f.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone, or re-created under the same name
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("deleting fenced pod %s: %w", klog.KObj(p), err))
			continue
		}
		deleted++
		logger.Info("Deleted fenced pod", "pod", klog.KObj(p), "placement", klog.KObj(v.placement),
			"reason", reason, "graceSeconds", v.placement.Spec.Fencing.GraceSeconds)
	}
	return deleted, errors.Join(errs...)
}

// fencedSince is the start of the grace: the lease's expiry when known, else
// when the Fencer first saw the lease fenced without one.
func (f *Fencer) fencedSince(now, expiry time.Time) time.Time {
	if !expiry.IsZero() {
		f.unknownSince = time.Time{}
		return expiry
	}
	if f.unknownSince.IsZero() {
		f.unknownSince = now
	}
	return f.unknownSince
}

// victims lists the running pods of the placements with spec.fencing whose
// grace, counted from since, is over at now. It lists pods once, by label,
// over the whole pod cache: the scheduler's pod informer has no namespace
// index.
func (f *Fencer) victims(now, since time.Time) ([]victim, error) {
	var placements fleetv1.SubsetPlacementList
	if err := f.resolver.cache.List(context.Background(), &placements); err != nil {
		return nil, fmt.Errorf("listing SubsetPlacements: %w", err)
	}
	fencing := map[types.NamespacedName]*fleetv1.SubsetPlacement{}
	for i := range placements.Items {
		sp := &placements.Items[i]
		if sp.Spec.Fencing != nil && graceOver(sp, now, since) {
			fencing[client.ObjectKeyFromObject(sp)] = sp
		}
	}
	if len(fencing) == 0 {
		return nil, nil
	}
	managed, err := labels.NewRequirement(fleetv1.LabelPlacement, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	pods, err := f.pods.List(labels.NewSelector().Add(*managed))
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var out []victim
	for _, p := range pods {
		sp, ok := fencing[types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[fleetv1.LabelPlacement]}]
		if !ok || p.Spec.NodeName == "" || p.DeletionTimestamp != nil ||
			p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		out = append(out, victim{pod: p, placement: sp})
	}
	return out, nil
}

// graceOver reports whether the placement's graceSeconds have passed at now
// since the lease was fenced.
func graceOver(sp *fleetv1.SubsetPlacement, now, since time.Time) bool {
	return now.Sub(since) >= time.Duration(sp.Spec.Fencing.GraceSeconds)*time.Second
}

// due keeps the victims whose grace is over at now, counted from since.
func due(vs []victim, now, since time.Time) []victim {
	out := vs[:0]
	for _, v := range vs {
		if graceOver(v.placement, now, since) {
			out = append(out, v)
		}
	}
	return out
}
