package updater

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
	"github.com/fleetset/fleetset/member/internal/placementqueue"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// Event reasons.
const (
	// ReasonPodReplaced, on the placement: an outdated pod was deleted for
	// the StatefulSet controller to create it at the update revision.
	ReasonPodReplaced = "PodReplaced"
	// ReasonSwitchoverRequested, on the leader pod and on the placement:
	// the leader was annotated fleetset.io/switchover-requested.
	ReasonSwitchoverRequested = "SwitchoverRequested"
	// ReasonSwitchoverActionFailed, on the leader pod and on the
	// placement: the switchover lifecycle action failed; it runs again
	// after a growing delay, and the leader is not asked otherwise.
	ReasonSwitchoverActionFailed = "SwitchoverActionFailed"
)

// DefaultResync is the time between passes over every placement with
// spec.update.
const DefaultResync = 30 * time.Second

// deletingFor is how long a pod this process deleted counts as being
// deleted when the cache still shows it alive.
const deletingFor = time.Minute

// Controller replaces the outdated pods of the StatefulSets of placements
// with spec.update and spec.roles (see the package documentation).
type Controller struct {
	// Placements reads SubsetPlacements (the scheduler's cache).
	Placements client.Reader
	// StatefulSets reads the StatefulSets labelled fleetset.io/set.
	StatefulSets appslisters.StatefulSetLister
	// Pods reads pods (the scheduler's pod informer).
	Pods corelisters.PodLister
	// Client lists, deletes and annotates pods.
	Client kubernetes.Interface
	// Recorder records events on placements and pods.
	Recorder events.EventRecorder
	// Clock measures availability and stamps switchover requests.
	Clock clock.PassiveClock
	// Resync is the time between passes over every placement with
	// spec.update.
	Resync time.Duration
	// Actions runs the switchover lifecycle action (spec.actions); nil:
	// the leader is only annotated.
	Actions *actions.Runner
	// ClusterDomain ends the fleet DNS names in the action's environment.
	ClusterDomain string

	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu sync.Mutex
	// deleting holds the pods this process deleted, until the cache shows
	// them gone or being deleted (or deletingFor has passed).
	deleting map[types.UID]time.Time
	// waiting holds, per placement, the last reason it waits, so that it is
	// logged once.
	waiting map[types.NamespacedName]string
}

// New returns a Controller; its queue is fed by the handlers and by Run's
// resyncs.
func New(placements client.Reader, statefulSets appslisters.StatefulSetLister, pods corelisters.PodLister, cs kubernetes.Interface, recorder events.EventRecorder) *Controller {
	return &Controller{
		Placements: placements, StatefulSets: statefulSets, Pods: pods, Client: cs, Recorder: recorder,
		Clock: clock.RealClock{}, Resync: DefaultResync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "fleetset_member_updater"}),
		deleting: map[types.UID]time.Time{},
		waiting:  map[types.NamespacedName]string{},
	}
}

// Run runs a Controller over d until ctx is done: it registers its handlers
// on d's StatefulSet and pod informers and placement cache, waits for their
// caches and runs two workers. Errors are a handler that cannot be
// registered, or caches that never synced before ctx ended.
func Run(ctx context.Context, d wiring.Deps) error {
	logger := klog.FromContext(ctx).WithName("updater")
	ctx = klog.NewContext(ctx, logger)
	c := New(d.Placements, d.StatefulSets.Lister(), d.Pods.Lister(), d.Client, d.Recorder)
	c.Actions, c.ClusterDomain = d.Actions, d.ClusterDomain
	var hs wiring.Handlers
	if err := hs.Add(d.StatefulSets.Informer(), c.handler(wiring.SameNameKey)); err != nil {
		return err
	}
	if err := hs.Add(d.Pods.Informer(), c.handler(podStatefulSetKey)); err != nil {
		return err
	}
	if err := hs.AddPlacements(ctx, d.Placements, c.handler(wiring.SameNameKey)); err != nil {
		return err
	}
	return hs.Run(ctx, "fleetset-member-updater", func(ctx context.Context) {
		logger.Info("Role-ordered update controller started", "resync", c.Resync)
		c.Run(ctx, 2)
	})
}

// podStatefulSetKey is the key of the placement named as the StatefulSet
// that controls the pod obj, for pods labelled fleetset.io/set.
func podStatefulSetKey(obj interface{}) (types.NamespacedName, bool) {
	p, ok := obj.(*v1.Pod)
	if !ok || p.Labels[fleetv1.LabelSet] == "" {
		return types.NamespacedName{}, false
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "StatefulSet" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: p.Namespace, Name: ref.Name}, true
}

// handler enqueues the placement key of every event's object.
func (c *Controller) handler(key func(obj interface{}) (types.NamespacedName, bool)) toolscache.ResourceEventHandler {
	add := func(obj interface{}) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if k, ok := key(obj); ok {
			c.queue.Add(k)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj interface{}) { add(obj) }, DeleteFunc: add}
}

// Run runs workers until ctx is done, and enqueues every placement with
// spec.update every Resync.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.next(ctx) {
			}
		}, time.Second)
	}
	wait.UntilWithContext(ctx, c.enqueueAll, c.Resync)
}

// next handles one key; false once the queue is shut down.
func (c *Controller) next(ctx context.Context) bool {
	return placementqueue.ProcessNext(ctx, c.queue, c.Sync, "Role-ordered update failed")
}

// enqueueAll adds every placement with spec.update.
func (c *Controller) enqueueAll(ctx context.Context) {
	placementqueue.EnqueueMatching(ctx, c.Placements, c.queue, func(sp *fleetv1.SubsetPlacement) bool { return sp.Spec.Update != nil })
}

// Sync takes the placement key one step further: it deletes the outdated
// pods the budget allows and asks an outdated leader for a switchover. An
// error asks for a retry.
func (c *Controller) Sync(ctx context.Context, key types.NamespacedName) error {
	logger := klog.FromContext(ctx).WithValues("placement", key)
	ctx = klog.NewContext(ctx, logger)
	sp := &fleetv1.SubsetPlacement{}
	if err := c.Placements.Get(ctx, key, sp); err != nil {
		if apierrors.IsNotFound(err) {
			c.setWaiting(key, "")
			return nil
		}
		return err
	}
	if !sp.DeletionTimestamp.IsZero() || sp.Spec.Update == nil || sp.Spec.Roles == nil {
		c.setWaiting(key, "")
		return nil
	}
	sts, err := c.StatefulSets.StatefulSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil // the work agent creates it
	}
	if err != nil {
		return err
	}
	if sts.DeletionTimestamp != nil {
		return nil
	}
	if why := wiring.NotOwned(sp, sts); why != "" {
		c.wait(ctx, key, "StatefulSet "+sts.Name+" is not this placement's: "+why)
		return nil
	}
	pods, err := c.podsOf(sts)
	if err != nil {
		return err
	}
	in := Input{StatefulSet: sts, Pods: pods, Roles: sp.Spec.Roles.Roles, Update: *sp.Spec.Update,
		Now: c.Clock.Now(), Deleting: c.deletingNow(pods)}
	pl := Compute(in)
	if pl.Settling {
		logger.V(4).Info("Role-ordered update waits for the StatefulSet's status", "reason", pl.Wait)
		return nil // its status update brings it back here
	}
	if pl.Wait != "" {
		c.wait(ctx, key, pl.Wait)
		return nil
	}
	c.setWaiting(key, "")
	if len(pl.Delete) > 0 {
		// The cache may be behind (a pod another replica deleted, one
		// that just stopped being Ready): decide again on a live list.
		live, err := c.Client.CoreV1().Pods(sts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector(sts).String()})
		if err != nil {
			return fmt.Errorf("listing the pods of StatefulSet %s: %w", sts.Name, err)
		}
		in.Pods = make([]*v1.Pod, len(live.Items))
		for i := range live.Items {
			in.Pods[i] = &live.Items[i]
		}
		in.Deleting = c.deletingNow(nil)
		pl = Compute(in)
	}
	if len(pl.Outdated) > 0 {
		logger.V(2).Info("Role-ordered update", "statefulSet", sts.Name, "revision", pl.Revision, "outdated", names(pl.Outdated),
			"unavailable", pl.Unavailable, "maxUnavailable", sp.Spec.Update.MaxUnavailable, "leader", sp.Spec.Update.Leader,
			"delete", names(pl.Delete), "heldLeaders", names(pl.HeldLeaders))
	}
	var errs []error
	for _, p := range pl.Delete {
		errs = append(errs, c.replace(ctx, sp, sts, p, pl.Revision))
	}
	for _, p := range pl.Switchover {
		if sp.Spec.Actions != nil && sp.Spec.Actions.Actions.Switchover != nil && c.Actions != nil {
			if err := c.runSwitchover(ctx, sp, sts, p, Candidate(in, p.Name, sp.Spec.Actions.Candidates), pl.Revision); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		errs = append(errs, c.requestSwitchover(ctx, sp, p, pl.Revision))
	}
	if len(pl.Outdated) > 0 && sts.Spec.MinReadySeconds > 0 {
		// Availability may change with time alone.
		c.queue.AddAfter(key, time.Duration(sts.Spec.MinReadySeconds)*time.Second)
	}
	return errors.Join(errs...)
}

// selector is S's pod selector, or nothing when it is invalid.
func selector(sts *appsv1.StatefulSet) labels.Selector {
	s, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// podsOf returns the cached pods matching S's selector.
func (c *Controller) podsOf(sts *appsv1.StatefulSet) ([]*v1.Pod, error) {
	return c.Pods.Pods(sts.Namespace).List(selector(sts))
}

// replace deletes the outdated pod p with a UID precondition.
func (c *Controller) replace(ctx context.Context, sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, p *v1.Pod, revision string) error {
	logger := klog.FromContext(ctx)
	role := p.Labels[fleetv1.LabelRole]
	err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		logger.V(2).Info("Outdated pod already gone or replaced", "pod", klog.KObj(p), "uid", p.UID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting outdated pod %s: %w", klog.KObj(p), err)
	}
	c.mu.Lock()
	c.deleting[p.UID] = c.Clock.Now()
	c.mu.Unlock()
	podDeletions.WithLabelValues(role).Inc()
	old := p.Labels[appsv1.ControllerRevisionHashLabelKey]
	logger.Info("Deleted outdated pod for its StatefulSet to create it at the update revision",
		"pod", klog.KObj(p), "uid", p.UID, "role", role, "revision", old, "updateRevision", revision, "leaderUpdate", sp.Spec.Update.Leader)
	c.Recorder.Eventf(sp, p, v1.EventTypeNormal, ReasonPodReplaced, "Replace",
		"Deleted pod %s (role %s, revision %s) for StatefulSet %s to create it at revision %s",
		p.Name, roleOrNone(role), old, sts.Name, revision)
	return nil
}

// runSwitchover runs the switchover lifecycle action in the outdated
// leader p with candidate (FLEETSET_CANDIDATE_NAME; "" lets the workload
// choose); an error (with Warning events) when it fails, which holds the
// leader: Sync is retried with a growing delay.
func (c *Controller) runSwitchover(ctx context.Context, sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, p *v1.Pod, candidate, revision string) error {
	pa := sp.Spec.Actions
	env := actions.ForPod(fleetv1.ActionSwitchover, pa, p, c.ClusterDomain)
	env.Leader, env.Candidate = p.Name, candidate
	res, err := c.Actions.Run(ctx, actions.Request{Name: fleetv1.ActionSwitchover, Action: pa.Actions.Switchover, Placement: sp.Name, StatefulSet: sts, Pod: p, Env: env.Vars()})
	if err != nil {
		msg := fmt.Sprintf("switchover action in leader %s (candidate %q) failed after %d attempts; the leader is held and the action runs again: %v",
			p.Name, candidate, res.Attempts, err)
		c.Recorder.Eventf(p, sp, v1.EventTypeWarning, ReasonSwitchoverActionFailed, "Switchover", "%s", msg)
		c.Recorder.Eventf(sp, p, v1.EventTypeWarning, ReasonSwitchoverActionFailed, "Switchover", "%s", msg)
		return fmt.Errorf("switchover action in %s: %w", klog.KObj(p), err)
	}
	klog.FromContext(ctx).Info("Switchover action succeeded in the outdated leader", "pod", klog.KObj(p), "candidate", candidate,
		"updateRevision", revision, "stdout", res.Stdout)
	return nil
}

// requestSwitchover annotates the outdated leader p
// fleetset.io/switchover-requested, with a UID precondition.
func (c *Controller) requestSwitchover(ctx context.Context, sp *fleetv1.SubsetPlacement, p *v1.Pod, revision string) error {
	now := c.Clock.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, p.UID, fleetv1.AnnotationSwitchoverRequested, now)
	_, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("annotating leader %s %s: %w", klog.KObj(p), fleetv1.AnnotationSwitchoverRequested, err)
	}
	switchoverRequests.Inc()
	role := p.Labels[fleetv1.LabelRole]
	klog.FromContext(ctx).Info("Asked the outdated leader for a switchover", "pod", klog.KObj(p), "uid", p.UID, "role", role,
		"revision", p.Labels[appsv1.ControllerRevisionHashLabelKey], "updateRevision", revision)
	msg := fmt.Sprintf("Leader %s (role %s) is outdated (revision %s, update revision %s): annotated %s=%s for it to hand its role over; it is not replaced while the hub says leader Switchover",
		p.Name, role, p.Labels[appsv1.ControllerRevisionHashLabelKey], revision, fleetv1.AnnotationSwitchoverRequested, now)
	c.Recorder.Eventf(p, sp, v1.EventTypeNormal, ReasonSwitchoverRequested, "Switchover", "%s", msg)
	c.Recorder.Eventf(sp, p, v1.EventTypeNormal, ReasonSwitchoverRequested, "Switchover", "%s", msg)
	return nil
}

// deletingNow returns the pods this process deleted that still count as
// being deleted, forgetting those pods shows gone or being deleted, and
// those deleted longer than deletingFor ago. pods nil forgets by time only.
func (c *Controller) deletingNow(pods []*v1.Pod) map[types.UID]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Clock.Now()
	if pods != nil {
		alive := map[types.UID]bool{}
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				alive[p.UID] = true
			}
		}
		for uid := range c.deleting {
			if !alive[uid] {
				delete(c.deleting, uid)
			}
		}
	}
	out := map[types.UID]bool{}
	for uid, at := range c.deleting {
		if now.Sub(at) > deletingFor {
			delete(c.deleting, uid)
			continue
		}
		out[uid] = true
	}
	return out
}

// wait logs once why placement key waits.
func (c *Controller) wait(ctx context.Context, key types.NamespacedName, why string) {
	if c.setWaiting(key, why) {
		klog.FromContext(ctx).Info("Role-ordered update waits", "reason", why)
	}
}

// setWaiting records why key waits; it reports whether that changed.
func (c *Controller) setWaiting(key types.NamespacedName, why string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting[key] == why {
		return false
	}
	if why == "" {
		delete(c.waiting, key)
	} else {
		c.waiting[key] = why
	}
	return true
}

// roleOrNone is role, or "none".
func roleOrNone(role string) string {
	return cmp.Or(role, "none")
}
