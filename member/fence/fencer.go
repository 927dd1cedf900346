package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Fencer acts on the Guard's verdict once per Interval.
//
// While the member is Fenced it records the fence on every placement with
// spec.fencing (the annotation AnnotationFencedEpoch, at the placement's
// epoch) and deletes the running pods of each once the fence is
// spec.fencing.graceSeconds old. The pods are those, in the placement's
// namespace, whose controller is the StatefulSet of the placement's name,
// as the hub delivers them, and those labelled fleetset.io/placement=<the
// placement> whatever their controller: pods a StatefulSet deleted with
// --cascade=orphan left behind (the claims controller's replace, or a
// member user), and pods made by hand to look like an instance. The label
// cannot be removed or changed once set (the member's admission policy
// fleetset-delivered-objects), so a tenant cannot hide an instance from the
// fence; adding it to a pod of its own only fences that pod. Deletion is a normal
// Delete with the pod's own grace period and a UID precondition;
// PersistentVolumeClaims and every other object are never touched.
//
// While the member is InContact it lifts the records: at once when the hub
// delivered the placement at a higher epoch; otherwise when the hub's own
// ManifestWork for this cluster still holds the placement at the recorded
// epoch or a higher one and acknowledges a heartbeat sent at or after the
// member's return (Confirm with Monitor.Returned; see
// v1alpha1.AnnotationMemberAck), asked no earlier than ConfirmAfter after
// the member reached the hub again. While Holding it does nothing.
type Fencer struct {
	Guard *Guard
	// Placements reads SubsetPlacements (the scheduler's cache).
	Placements client.Reader
	// Writer patches the fence records on SubsetPlacements.
	Writer client.Writer
	// Pods lists pods (the scheduler's pod informer).
	Pods corelisters.PodLister
	// Client deletes pods.
	Client kubernetes.Interface
	// Confirm asks the hub whether it still places sp in this cluster at
	// epoch or above, in a work that acknowledges a heartbeat of the
	// member sent at or after returned (the member's return: its Monitor's
	// Returned).
	Confirm func(ctx context.Context, sp *fleetv1.SubsetPlacement, epoch int64, returned time.Time) (bool, error)
	// ConfirmAfter is how long the member must be InContact before it asks
	// the hub to confirm a fenced placement: long enough for the hub to see
	// the member back and to have written any move it decided before.
	ConfirmAfter time.Duration
	// ConfirmTimeout bounds all of one sweep's Confirm calls together, so
	// that a hung hub request never holds the Guard's evaluation (the
	// placements not confirmed are asked again at the next sweep); 0: 5 s.
	ConfirmTimeout time.Duration
	Clock          clock.PassiveClock
	// Interval is the time between sweeps.
	Interval time.Duration

	// Recorder, when set, records an event on a placement held below its
	// recorded epoch (ReasonEpochBelowRecord), once per delivered epoch.
	Recorder events.EventRecorder

	inContactSince time.Time
	// warned is the delivered epoch of each placement held below its
	// record that an event was recorded for.
	warned map[string]int64
	// records is how many placements carried a fence record at the last
	// sweep; -1 before the first.
	records atomic.Int64
	swept   atomic.Bool
}

// Records returns how many placements carried a fence record at the last
// sweep, for the heartbeat to report (AnnotationMemberFencedPlacements);
// -1 before the first sweep.
func (f *Fencer) Records() int {
	if !f.swept.Load() {
		return -1
	}
	return int(f.records.Load())
}

// Run sweeps every Interval until ctx is done, once synced reports true.
func (f *Fencer) Run(ctx context.Context, synced func() bool) {
	logger := klog.FromContext(ctx).WithName("fencer")
	ctx = klog.NewContext(ctx, logger)
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) { return synced(), nil }); err != nil {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if _, err := f.Sweep(ctx); err != nil {
			logger.Error(err, "Fencing sweep failed")
		}
	}, f.Interval)
}

// Sweep evaluates the Guard once and acts on its verdict; it returns how
// many pods it deleted.
func (f *Fencer) Sweep(ctx context.Context) (int, error) {
	v, since := f.Guard.Evaluate(ctx)
	now := f.Clock.Now()
	if v.State != InContact {
		f.inContactSince = time.Time{}
	} else if f.inContactSince.IsZero() {
		f.inContactSince = now
	}
	var list fleetv1.SubsetPlacementList
	if err := f.Placements.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing SubsetPlacements: %w", err)
	}
	var fencing []*fleetv1.SubsetPlacement
	records, below := 0, 0
	stillBelow := map[string]bool{}
	var running []*fleetv1.SubsetPlacement
	for i := range list.Items {
		sp := &list.Items[i]
		if sp.Spec.Fencing == nil || !sp.DeletionTimestamp.IsZero() {
			continue
		}
		fencing = append(fencing, sp)
		if _, ok := FencedEpoch(sp); ok {
			records++
		}
		if b, h := f.Guard.Epochs.Below(sp); b {
			below++
			stillBelow[EpochKey(sp)] = true
			if f.warned == nil {
				f.warned = map[string]int64{}
			}
			if f.warned[EpochKey(sp)] != sp.Spec.Fencing.Epoch {
				f.warned[EpochKey(sp)] = sp.Spec.Fencing.Epoch
				_, why := f.Guard.Allows(sp)
				klog.FromContext(ctx).Info("Holding a placement delivered below the epoch this member ran it at", "placement", klog.KObj(sp), "epoch", sp.Spec.Fencing.Epoch, "highest", h)
				if f.Recorder != nil {
					f.Recorder.Eventf(sp, nil, v1.EventTypeWarning, ReasonEpochBelowRecord, "Hold", "%s", why)
				}
			}
			continue
		}
		running = append(running, sp)
	}
	epochHeld.Set(float64(below))
	// A placement no longer below its record (the hub delivered it at
	// the recorded epoch or above): its pods turned away are re-queued,
	// as at the lift of a fence; no cluster event the scheduler waits on
	// is sure to follow.
	for k := range f.warned {
		if !stillBelow[k] {
			delete(f.warned, k)
			f.Guard.Lifted()
		}
	}
	if err := f.Guard.Epochs.Record(ctx, running); err != nil {
		klog.FromContext(ctx).Error(err, "Recording the placements' epochs")
	}
	fencedPlacements.Set(float64(records))
	f.records.Store(int64(records))
	f.swept.Store(true)
	switch v.State {
	case Fenced:
		return f.fence(ctx, v, since, now, fencing)
	case InContact:
		return 0, f.lift(ctx, now, fencing)
	}
	return 0, nil
}

// fence records the fence on every placement and deletes the pods whose
// grace is over.
func (f *Fencer) fence(ctx context.Context, v Verdict, since, now time.Time, fencing []*fleetv1.SubsetPlacement) (int, error) {
	logger := klog.FromContext(ctx)
	var errs []error
	deleted := 0
	for _, sp := range fencing {
		if e, ok := FencedEpoch(sp); !ok || e < sp.Spec.Fencing.Epoch {
			if err := f.record(ctx, sp, &sp.Spec.Fencing.Epoch); err != nil {
				errs = append(errs, err)
				continue // no pod is deleted before its fence is recorded
			}
			logger.Info("Fenced placement", "placement", klog.KObj(sp), "epoch", sp.Spec.Fencing.Epoch, "reason", v.Reason)
		}
		if now.Sub(since) < time.Duration(sp.Spec.Fencing.GraceSeconds)*time.Second {
			continue
		}
		pods, err := f.Pods.Pods(sp.Namespace).List(labels.Everything())
		if err != nil {
			errs = append(errs, fmt.Errorf("listing pods in %s: %w", sp.Namespace, err))
			continue
		}
		for _, p := range pods {
			if !instanceOf(p, sp.Name) || p.Spec.NodeName == "" || p.DeletionTimestamp != nil ||
				p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue
			}
			err := f.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // gone, or re-created under the same name
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("deleting fenced pod %s: %w", klog.KObj(p), err))
				continue
			}
			deleted++
			fencedPods.Inc()
			logger.Info("Deleted fenced pod", "pod", klog.KObj(p), "placement", klog.KObj(sp),
				"reason", v.Reason, "graceSeconds", sp.Spec.Fencing.GraceSeconds)
		}
	}
	return deleted, errors.Join(errs...)
}

// lift removes the fence records the hub has superseded or confirmed.
func (f *Fencer) lift(ctx context.Context, now time.Time, fencing []*fleetv1.SubsetPlacement) error {
	logger := klog.FromContext(ctx)
	var errs []error
	lifted := false
	timeout := f.ConfirmTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, sp := range fencing {
		e, ok := FencedEpoch(sp)
		if !ok {
			continue
		}
		why := fmt.Sprintf("delivered at epoch %d, above the fence's %d", sp.Spec.Fencing.Epoch, e)
		if e >= sp.Spec.Fencing.Epoch {
			if now.Sub(f.inContactSince) < f.ConfirmAfter || f.Confirm == nil {
				continue
			}
			if cctx.Err() != nil {
				continue // out of time this sweep: asked at the next one
			}
			returned := f.Guard.Monitor.Returned()
			if returned.IsZero() {
				continue
			}
			ok, err := f.Confirm(cctx, sp, e, returned)
			if err != nil {
				errs = append(errs, fmt.Errorf("confirming SubsetPlacement %s with the hub: %w", klog.KObj(sp), err))
				continue
			}
			if !ok {
				continue // moved away (the work agent removes it), or not yet acknowledged since the return
			}
			why = fmt.Sprintf("the hub confirms it here at epoch %d, acknowledging a heartbeat sent at or after the return at %s", e, returned.UTC().Format(time.RFC3339Nano))
		}
		if err := f.record(ctx, sp, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		f.awaitCache(ctx, sp)
		lifted = true
		logger.Info("Lifted the fence of a placement", "placement", klog.KObj(sp), "why", why)
	}
	if lifted {
		f.Guard.Lifted()
	}
	return errors.Join(errs...)
}

// awaitCache waits, at most a few seconds, until Placements (the
// scheduler's cache) shows sp without its fence record, so that the pods the
// listeners re-queue are judged on the lifted placement: the scheduler's own
// event for the change may come first and find the cache still fenced.
func (f *Fencer) awaitCache(ctx context.Context, sp *fleetv1.SubsetPlacement) {
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		cur := &fleetv1.SubsetPlacement{}
		if err := f.Placements.Get(ctx, client.ObjectKeyFromObject(sp), cur); err != nil {
			return apierrors.IsNotFound(err), nil
		}
		_, fenced := FencedEpoch(cur)
		return !fenced, nil
	})
}

// record sets the fence record of sp to epoch, or removes it (nil), with a
// merge patch.
func (f *Fencer) record(ctx context.Context, sp *fleetv1.SubsetPlacement, epoch *int64) error {
	var val any
	if epoch != nil {
		val = strconv.FormatInt(*epoch, 10)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, fleetv1.AnnotationFencedEpoch, jsonValue(val))
	obj := &fleetv1.SubsetPlacement{}
	obj.Namespace, obj.Name = sp.Namespace, sp.Name
	if err := f.Writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("recording the fence of SubsetPlacement %s: %w", klog.KObj(sp), err)
	}
	return nil
}

func jsonValue(v any) string {
	if v == nil {
		return "null"
	}
	return strconv.Quote(v.(string))
}

// instanceOf reports whether the fence of placement name covers p: p's
// controller is the StatefulSet name, or p carries the placement label
// naming it.
func instanceOf(p *v1.Pod, name string) bool {
	return ownedBy(p, name) || p.Labels[fleetv1.LabelPlacement] == name
}

// ownedBy reports whether p's controller is the StatefulSet name.
func ownedBy(p *v1.Pod, name string) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" && ref.Name == name
}
