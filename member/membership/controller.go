package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
	"github.com/fleetset/fleetset/member/internal/ownership"
	"github.com/fleetset/fleetset/member/internal/placementqueue"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// Event reasons, on pods (and, for leaves, on placements).
const (
	ReasonMemberJoined          = "MemberJoined"
	ReasonMemberJoinFailed      = "MemberJoinFailed"
	ReasonMemberLeft            = "MemberLeft"
	ReasonMemberLeaveFailed     = "MemberLeaveFailed"
	ReasonRolloutCompleteRan    = "RolloutCompleteRan"
	ReasonRolloutCompleteFailed = "RolloutCompleteFailed"
	// ReasonSwitchoverRan and ReasonSwitchoverFailed, on the placement
	// and the leader pod: the switchover action an operator asked for
	// (spec.actions.switchover) succeeded, or failed (it runs again with a
	// growing delay while the hub asks).
	ReasonSwitchoverRan    = "SwitchoverRan"
	ReasonSwitchoverFailed = "SwitchoverFailed"
)

// Defaults.
const (
	// DefaultResync is the time between passes over every placement with
	// spec.actions.
	DefaultResync = 30 * time.Second
	// minBackoff and maxBackoff bound the delay before a failed action of
	// an instance runs again.
	minBackoff = 5 * time.Second
	maxBackoff = 5 * time.Minute
)

// Controller runs memberJoin, memberLeave and rolloutComplete (see the
// package documentation).
type Controller struct {
	// Placements reads SubsetPlacements (the scheduler's cache).
	Placements client.Reader
	// Pods reads pods (the scheduler's pod informer).
	Pods corelisters.PodLister
	// StatefulSets reads the StatefulSets labelled fleetset.io/set: a
	// placement's instances are the pods its delivered StatefulSet (same
	// name, wiring.DeliveredStatefulSet) controls, and only its desired
	// ordinals join; nil: no pod is an instance (nothing runs).
	StatefulSets appslisters.StatefulSetLister
	// Client reads and annotates claims, patches pods and their status.
	Client kubernetes.Interface
	// Status writes SubsetPlacements' status subresource.
	Status client.SubResourceWriter
	// Recorder records events.
	Recorder events.EventRecorder
	// Runner runs the actions.
	Runner *actions.Runner
	// ClusterDomain ends the fleet DNS names of the actions' environment.
	ClusterDomain string
	// Resync is the time between passes over every placement.
	Resync time.Duration

	queue placementqueue.Queue

	mu sync.Mutex
	// running holds the actions running now, by task key.
	running map[string]bool
	// failures holds, by task key, the failures in a row and when the
	// task may run again.
	failures map[string]failure
	// left holds ordinals whose leave succeeded, by placement, until the
	// placement's status says so.
	left map[types.NamespacedName]map[int32]bool
	// leaveFailed holds the last leave failure by placement.
	leaveFailed map[types.NamespacedName]string
	// joined holds ordinals whose join succeeded, by placement, until the
	// status says so.
	joined map[types.NamespacedName]map[int32]bool
	// relocationLeft holds the pod UIDs whose relocation leave succeeded.
	relocationLeft map[types.UID]bool
	// completed holds the rolloutComplete revision that succeeded, by
	// placement.
	completed map[types.NamespacedName]string
	// switched holds the ID of the requested switchover whose action
	// succeeded, by placement.
	switched map[types.NamespacedName]string
	// switchoverFailed holds the last failure of a requested
	// switchover's action, by placement: the request's ID and why.
	switchoverFailed map[types.NamespacedName][2]string
}

type failure struct {
	n     int
	until time.Time
}

// New returns a Controller.
func New(placements client.Reader, pods corelisters.PodLister, cs kubernetes.Interface, status client.SubResourceWriter,
	recorder events.EventRecorder, runner *actions.Runner) *Controller {
	return &Controller{Placements: placements, Pods: pods, Client: cs, Status: status, Recorder: recorder, Runner: runner,
		ClusterDomain: fleetv1.DefaultClusterDomain, Resync: DefaultResync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "fleetset_member_membership"}),
		running: map[string]bool{}, failures: map[string]failure{}, left: map[types.NamespacedName]map[int32]bool{},
		leaveFailed: map[types.NamespacedName]string{}, joined: map[types.NamespacedName]map[int32]bool{},
		relocationLeft: map[types.UID]bool{}, completed: map[types.NamespacedName]string{},
		switched: map[types.NamespacedName]string{}, switchoverFailed: map[types.NamespacedName][2]string{}}
}

// Run runs a Controller over d until ctx is done. d.Writer must write the
// status subresource and d.Actions must be set. Errors are such a writer
// or runner missing, a handler that cannot be registered, or caches that
// never synced.
func Run(ctx context.Context, d wiring.Deps) error {
	sw, ok := d.Writer.(client.StatusClient)
	if !ok || d.Writer == nil {
		return fmt.Errorf("the SubsetPlacement writer %T cannot write the status subresource", d.Writer)
	}
	if d.Actions == nil {
		return fmt.Errorf("no lifecycle action runner")
	}
	logger := klog.FromContext(ctx).WithName("membership")
	ctx = klog.NewContext(ctx, logger)
	c := New(d.Placements, d.Pods.Lister(), d.Client, sw.Status(), d.Recorder, d.Actions)
	if d.ClusterDomain != "" {
		c.ClusterDomain = d.ClusterDomain
	}
	c.StatefulSets = d.StatefulSets.Lister()
	var hs wiring.Handlers
	if err := hs.Add(d.Pods.Informer(), c.handler(podKey)); err != nil {
		return err
	}
	if err := hs.Add(d.StatefulSets.Informer(), c.handler(wiring.SameNameKey)); err != nil {
		return err
	}
	if err := hs.AddPlacements(ctx, d.Placements, c.handler(wiring.SameNameKey)); err != nil {
		return err
	}
	return hs.Run(ctx, "fleetset-member-membership", func(ctx context.Context) {
		logger.Info("Lifecycle action controller started", "resync", c.Resync)
		c.Run(ctx, 2)
	})
}

// podKey is the placement of a pod labelled fleetset.io/placement.
func podKey(obj interface{}) (types.NamespacedName, bool) {
	p, ok := obj.(*v1.Pod)
	if !ok || p.Labels[fleetv1.LabelPlacement] == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[fleetv1.LabelPlacement]}, true
}

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
// spec.actions every Resync.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for placementqueue.ProcessNext(ctx, c.queue, c.Sync, "Lifecycle actions of a placement failed") {
			}
		}, time.Second)
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		placementqueue.EnqueueMatching(ctx, c.Placements, c.queue, func(sp *fleetv1.SubsetPlacement) bool { return sp.Spec.Actions != nil })
	}, c.Resync)
}

// Sync decides, for placement key, which actions to start and writes what
// finished into its status; an error asks for a retry.
func (c *Controller) Sync(ctx context.Context, key types.NamespacedName) error {
	sp := &fleetv1.SubsetPlacement{}
	if err := c.Placements.Get(ctx, key, sp); err != nil {
		return client.IgnoreNotFound(err)
	}
	pa := sp.Spec.Actions
	if pa == nil || !sp.DeletionTimestamp.IsZero() {
		return nil
	}
	pods, err := c.Pods.Pods(key.Namespace).List(labels.SelectorFromSet(labels.Set{fleetv1.LabelPlacement: key.Name}))
	if err != nil {
		return err
	}
	// Labels select candidates; only the pods the placement's delivered
	// StatefulSet controls are its instances (a forged pod is never
	// joined, left, nor run in).
	sts, why := wiring.DeliveredStatefulSet(c.StatefulSets, sp)
	pods = slices.DeleteFunc(pods, func(p *v1.Pod) bool {
		if reason := ownership.NotInstance(sts, p); reason != "" {
			klog.FromContext(ctx).V(4).Info("Ignoring a pod labelled into the placement: not one of its instances", "pod", klog.KObj(p), "reason", reason)
			return true
		}
		return false
	})
	if sts == nil {
		klog.FromContext(ctx).V(2).Info("No instance of the placement can be told", "placement", key, "reason", why)
	}
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return int(actions.Ordinal(a) - actions.Ordinal(b)) })
	if pa.Actions.MemberJoin != nil {
		leaving := map[int32]bool{}
		for _, l := range pa.Leave {
			leaving[l.Ordinal] = true
		}
		desired := c.desired(key)
		for _, p := range pods {
			// An instance the hub asks to leave, or one its StatefulSet
			// scaled away, does not join (again).
			if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil && !ConditionTrue(p) && !leaving[actions.Ordinal(p)] && desired(actions.Ordinal(p)) {
				c.join(ctx, sp, p)
			}
		}
	}
	c.leave(ctx, sp, pods)
	c.rolloutComplete(ctx, sp, pods)
	c.switchover(ctx, sp, pods)
	return c.writeStatus(ctx, sp)
}

// desired returns whether an ordinal is one of the desired ordinals of the
// StatefulSet named key ([ordinals.start, start+replicas)); none while it
// is not found, all without a StatefulSet lister.
func (c *Controller) desired(key types.NamespacedName) func(int32) bool {
	if c.StatefulSets == nil {
		return func(int32) bool { return true }
	}
	sts, err := c.StatefulSets.StatefulSets(key.Namespace).Get(key.Name)
	if err != nil {
		return func(int32) bool { return false }
	}
	start, replicas := int32(0), int32(1)
	if sts.Spec.Ordinals != nil {
		start = sts.Spec.Ordinals.Start
	}
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	return func(o int32) bool { return o >= start && o < start+replicas }
}

// start runs fn for task in a goroutine unless the task runs already or
// waits after a failure; the placement is synced again when fn ends (and
// when the wait ends). fn returns whether it succeeded.
func (c *Controller) start(ctx context.Context, sp *fleetv1.SubsetPlacement, task string, fn func(ctx context.Context) bool) {
	key := client.ObjectKeyFromObject(sp)
	c.mu.Lock()
	if c.running[task] {
		c.mu.Unlock()
		return
	}
	if f, ok := c.failures[task]; ok && time.Now().Before(f.until) {
		c.mu.Unlock()
		c.queue.AddAfter(key, time.Until(f.until))
		return
	}
	c.running[task] = true
	c.mu.Unlock()
	go func() {
		ok := fn(ctx)
		c.mu.Lock()
		delete(c.running, task)
		if ok {
			delete(c.failures, task)
		} else {
			f := c.failures[task]
			f.n++
			d := min(minBackoff<<min(f.n-1, 10), maxBackoff)
			f.until = time.Now().Add(d)
			c.failures[task] = f
		}
		c.mu.Unlock()
		c.queue.Add(key)
	}()
}

// join handles one running instance p of sp whose condition is not True.
func (c *Controller) join(ctx context.Context, sp *fleetv1.SubsetPlacement, p *v1.Pod) {
	pa := sp.Spec.Actions
	logger := klog.FromContext(ctx).WithValues("placement", klog.KObj(sp), "pod", klog.KObj(p))
	claims, err := c.claims(ctx, p)
	if err != nil {
		logger.Error(err, "Reading the claims of an instance")
		return
	}
	ordinal := actions.Ordinal(p)
	d := Join(JoinInput{Pod: p, Claims: claims, Epoch: pa.Epoch, Origin: pa.Origin, JoinedBefore: c.joinedBefore(sp, ordinal),
		Ordinal: ordinal, OrdinalStart: sp.Spec.OrdinalStart})
	if d.Joined {
		if err := c.setCondition(ctx, p, "ClaimJoined", "the instance's claims joined already"); err != nil {
			logger.Error(err, "Setting the member-joined condition")
		}
		return
	}
	action := pa.Actions.MemberJoin
	if action.Exec != nil && action.TargetOrDefault() == fleetv1.TargetSelf && !ContainerRunning(p, action.Exec.Container) {
		return // its container's start brings it back (AnyLive runs elsewhere)
	}
	task := "join/" + string(p.UID)
	c.start(ctx, sp, task, func(ctx context.Context) bool {
		if d.LeaveFirst != "" && pa.Actions.MemberLeave != nil && !c.relocationLeftDone(p.UID) {
			if _, err := c.runFor(ctx, sp, p, fleetv1.ActionMemberLeave, pa.Actions.MemberLeave, func(e *actions.Env) { e.LeaveReason = d.LeaveFirst }); err != nil {
				c.Recorder.Eventf(p, sp, v1.EventTypeWarning, ReasonMemberLeaveFailed, "MemberLeave",
					"memberLeave (reason %s) before joining failed; the instance stays not Ready: %v", d.LeaveFirst, err)
				return false
			}
			c.mu.Lock()
			c.relocationLeft[p.UID] = true
			c.mu.Unlock()
			c.Recorder.Eventf(p, sp, v1.EventTypeNormal, ReasonMemberLeft, "MemberLeave", "memberLeave (reason %s) succeeded before joining", d.LeaveFirst)
		}
		if _, err := c.runFor(ctx, sp, p, fleetv1.ActionMemberJoin, action, func(e *actions.Env) { e.JoinReason = d.Reason }); err != nil {
			c.Recorder.Eventf(p, sp, v1.EventTypeWarning, ReasonMemberJoinFailed, "MemberJoin",
				"memberJoin (reason %s) failed; the instance stays not Ready (readiness gate %s): %v", d.Reason, fleetv1.ConditionMemberJoined, err)
			return false
		}
		if err := c.markJoined(ctx, sp, p, claims); err != nil {
			logger.Error(err, "Recording a join")
			return false
		}
		c.mu.Lock()
		if c.joined[client.ObjectKeyFromObject(sp)] == nil {
			c.joined[client.ObjectKeyFromObject(sp)] = map[int32]bool{}
		}
		c.joined[client.ObjectKeyFromObject(sp)][ordinal] = true
		c.mu.Unlock()
		if err := c.setCondition(ctx, p, "MemberJoined", "memberJoin succeeded (reason "+string(d.Reason)+")"); err != nil {
			logger.Error(err, "Setting the member-joined condition")
			return false
		}
		c.Recorder.Eventf(p, sp, v1.EventTypeNormal, ReasonMemberJoined, "MemberJoin", "memberJoin succeeded (reason %s)", d.Reason)
		return true
	})
}

func (c *Controller) relocationLeftDone(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relocationLeft[uid]
}

// joinedBefore reports whether ordinal joined in sp before (its status or
// this process's record).
func (c *Controller) joinedBefore(sp *fleetv1.SubsetPlacement, ordinal int32) bool {
	if sp.Status.Actions != nil && slices.Contains(fleetv1.ParseOrdinals(sp.Status.Actions.Joined), ordinal) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joined[client.ObjectKeyFromObject(sp)][ordinal]
}

// runFor runs action about instance p of sp, in the pod its target names,
// with the environment edited by set.
func (c *Controller) runFor(ctx context.Context, sp *fleetv1.SubsetPlacement, p *v1.Pod, name fleetv1.ActionName,
	action *fleetv1.LifecycleAction, set func(*actions.Env)) (actions.Result, error) {
	env := actions.ForPod(name, sp.Spec.Actions, p, c.ClusterDomain)
	set(&env)
	target, placement, sts := c.target(ctx, sp, p, action)
	if target == nil {
		return actions.Result{}, fmt.Errorf("instance %s is not running and no other live instance may run %s", p.Name, name)
	}
	return c.Runner.Run(ctx, actions.Request{Name: name, Action: action, Placement: placement, StatefulSet: sts, Pod: target, Env: env.Vars()})
}

// target returns the pod action about p runs in, that pod's placement and
// the placement's delivered StatefulSet: p itself (target Self), or
// another Running and Ready instance of the same FleetSet in this cluster
// (AnyLive; p when there is none): a pod controlled by the delivered
// StatefulSet of a placement of that FleetSet, never a pod by its labels
// alone. p may be nil (its pod is gone); then AnyLive is the only way. The
// StatefulSet is nil when sp's is not known (the runner then refuses).
func (c *Controller) target(ctx context.Context, sp *fleetv1.SubsetPlacement, p *v1.Pod, action *fleetv1.LifecycleAction) (*v1.Pod, string, *appsv1.StatefulSet) {
	self := p != nil && p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil
	if action.TargetOrDefault() == fleetv1.TargetAnyLive {
		pods, _ := c.Pods.Pods(sp.Namespace).List(labels.SelectorFromSet(labels.Set{fleetv1.LabelSet: sp.Spec.Actions.FleetSet}))
		slices.SortFunc(pods, func(a, b *v1.Pod) int { return int(actions.Ordinal(a) - actions.Ordinal(b)) })
		for _, o := range pods {
			if (p != nil && o.UID == p.UID) || o.Status.Phase != v1.PodRunning || o.DeletionTimestamp != nil || !Ready(o) {
				continue
			}
			pl := o.Labels[fleetv1.LabelPlacement]
			other := &fleetv1.SubsetPlacement{}
			if pl == "" || c.Placements.Get(ctx, types.NamespacedName{Namespace: sp.Namespace, Name: pl}, other) != nil ||
				other.Spec.Actions == nil || other.Spec.Actions.FleetSet != sp.Spec.Actions.FleetSet {
				continue // not an instance of a placement of this FleetSet
			}
			sts, _ := wiring.DeliveredStatefulSet(c.StatefulSets, other)
			if why := ownership.NotInstance(sts, o); why != "" {
				klog.FromContext(ctx).V(4).Info("Not an AnyLive target: labelled into a placement, not one of its instances", "pod", klog.KObj(o), "reason", why)
				continue
			}
			return o, pl, sts
		}
	}
	if self {
		sts, _ := wiring.DeliveredStatefulSet(c.StatefulSets, sp)
		return p, sp.Name, sts
	}
	return nil, "", nil
}

// claims reads p's claims.
func (c *Controller) claims(ctx context.Context, p *v1.Pod) ([]Claim, error) {
	var out []Claim
	for _, name := range ClaimNames(p) {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, Claim{Name: name, Annotations: pvc.Annotations})
	}
	return out, nil
}

// markJoined annotates p's claims (or p, without claims) as joined by p at
// sp's epoch, removing a member-left mark.
func (c *Controller) markJoined(ctx context.Context, sp *fleetv1.SubsetPlacement, p *v1.Pod, claims []Claim) error {
	ann := map[string]any{fleetv1.AnnotationMemberJoined: string(p.UID),
		fleetv1.AnnotationMemberJoinedEpoch: strconv.FormatInt(sp.Spec.Actions.Epoch, 10), fleetv1.AnnotationMemberLeft: nil}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if len(claims) == 0 {
		pp, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID, "annotations": ann}})
		_, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, pp, metav1.PatchOptions{})
		return err
	}
	for _, cl := range claims {
		if _, err := c.Client.CoreV1().PersistentVolumeClaims(p.Namespace).Patch(ctx, cl.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("annotating claim %s: %w", cl.Name, err)
		}
	}
	return nil
}

// setCondition sets p's condition fleetset.io/member-joined True.
func (c *Controller) setCondition(ctx context.Context, p *v1.Pod, reason, message string) error {
	return c.setConditionStatus(ctx, p, v1.ConditionTrue, reason, message)
}

// setConditionStatus sets p's condition fleetset.io/member-joined to status.
func (c *Controller) setConditionStatus(ctx context.Context, p *v1.Pod, status v1.ConditionStatus, reason, message string) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status": map[string]any{"conditions": []map[string]any{{
			"type": fleetv1.ConditionMemberJoined, "status": string(status), "reason": reason, "message": message,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}}}})
	_, err := c.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// leave starts memberLeave for every entry of sp's spec.actions.leave not
// done yet.
func (c *Controller) leave(ctx context.Context, sp *fleetv1.SubsetPlacement, pods []*v1.Pod) {
	pa := sp.Spec.Actions
	key := client.ObjectKeyFromObject(sp)
	var done []int32
	if sp.Status.Actions != nil {
		done = fleetv1.ParseOrdinals(sp.Status.Actions.Left)
	}
	for _, l := range pa.Leave {
		c.mu.Lock()
		ok := c.left[key][l.Ordinal]
		c.mu.Unlock()
		if ok || slices.Contains(done, l.Ordinal) {
			continue
		}
		if pa.Actions.MemberLeave == nil {
			c.recordLeft(key, l.Ordinal) // nothing to run: done
			continue
		}
		var pod *v1.Pod
		for _, p := range pods {
			if actions.Ordinal(p) == l.Ordinal && p.DeletionTimestamp == nil {
				pod = p
			}
		}
		name := sp.Name + "-" + strconv.FormatInt(int64(l.Ordinal), 10)
		l := l
		c.start(ctx, sp, "leave/"+name, func(ctx context.Context) bool {
			p := pod
			if p == nil {
				// The pod is gone: AnyLive runs for it with its name.
				p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sp.Namespace, Name: name,
					Labels: map[string]string{"apps.kubernetes.io/pod-index": strconv.FormatInt(int64(l.Ordinal), 10)}}}
			}
			_, err := c.runFor(ctx, sp, p, fleetv1.ActionMemberLeave, pa.Actions.MemberLeave, func(e *actions.Env) { e.LeaveReason = l.Reason })
			if err != nil {
				msg := statusMessage(fmt.Sprintf("%s: %v", name, err))
				c.mu.Lock()
				c.leaveFailed[key] = msg
				c.mu.Unlock()
				c.Recorder.Eventf(sp, related(pod), v1.EventTypeWarning, ReasonMemberLeaveFailed, "MemberLeave",
					"memberLeave of %s (reason %s) failed; the hub holds the scale-down: %v", name, l.Reason, err)
				return false
			}
			if pod != nil {
				if err := c.markLeft(ctx, pod, l.Reason); err != nil {
					klog.FromContext(ctx).Error(err, "Recording a leave on the claims", "pod", name)
					return false
				}
				if pa.Actions.MemberJoin != nil {
					// No longer a member: not Ready until it is removed, or
					// joins again (Rejoin) if the scale-down is taken back.
					if err := c.setConditionStatus(ctx, pod, v1.ConditionFalse, "MemberLeft", "memberLeave succeeded (reason "+string(l.Reason)+")"); err != nil {
						klog.FromContext(ctx).Error(err, "Clearing the member-joined condition", "pod", name)
					}
				}
			}
			c.recordLeft(key, l.Ordinal)
			c.Recorder.Eventf(sp, related(pod), v1.EventTypeNormal, ReasonMemberLeft, "MemberLeave", "memberLeave of %s (reason %s) succeeded", name, l.Reason)
			return true
		})
	}
}

func (c *Controller) recordLeft(key types.NamespacedName, ordinal int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left[key] == nil {
		c.left[key] = map[int32]bool{}
	}
	c.left[key][ordinal] = true
	delete(c.joined[key], ordinal)
	delete(c.leaveFailed, key)
}

// markLeft removes the member-joined marks of p's claims and marks them
// left with reason.
func (c *Controller) markLeft(ctx context.Context, p *v1.Pod, reason fleetv1.LeaveReason) error {
	ann := map[string]any{fleetv1.AnnotationMemberJoined: nil, fleetv1.AnnotationMemberJoinedEpoch: nil, fleetv1.AnnotationMemberLeft: string(reason)}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	for _, name := range ClaimNames(p) {
		_, err := c.Client.CoreV1().PersistentVolumeClaims(p.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotating claim %s: %w", name, err)
		}
	}
	return nil
}

// rolloutComplete starts rolloutComplete when sp asks for a revision not
// done yet: in its leader instance, or its lowest running ordinal.
func (c *Controller) rolloutComplete(ctx context.Context, sp *fleetv1.SubsetPlacement, pods []*v1.Pod) {
	pa := sp.Spec.Actions
	rev := pa.RolloutComplete
	key := client.ObjectKeyFromObject(sp)
	if rev == "" || (sp.Status.Actions != nil && sp.Status.Actions.RolloutComplete == rev) {
		return
	}
	c.mu.Lock()
	done := c.completed[key] == rev
	c.mu.Unlock()
	if done {
		return
	}
	if pa.Actions.RolloutComplete == nil {
		c.mu.Lock()
		c.completed[key] = rev
		c.mu.Unlock()
		return
	}
	target := rolloutCompleteTarget(sp, pods)
	if target == nil {
		return // a pod's event brings it back
	}
	c.start(ctx, sp, "rolloutComplete/"+key.String()+"/"+rev, func(ctx context.Context) bool {
		_, err := c.runFor(ctx, sp, target, fleetv1.ActionRolloutComplete, pa.Actions.RolloutComplete, func(e *actions.Env) { e.Revision = rev })
		if err != nil {
			c.Recorder.Eventf(sp, target, v1.EventTypeWarning, ReasonRolloutCompleteFailed, "RolloutComplete", "rolloutComplete for revision %s failed: %v", rev, err)
			return false
		}
		c.mu.Lock()
		c.completed[key] = rev
		c.mu.Unlock()
		c.Recorder.Eventf(sp, target, v1.EventTypeNormal, ReasonRolloutCompleteRan, "RolloutComplete", "rolloutComplete for revision %s succeeded in %s", rev, target.Name)
		return true
	})
}

// switchover runs the switchover action an operator asked for
// (spec.actions.switchover) in the leader pod it names, once per ID: with
// FLEETSET_CANDIDATE_NAME the request's candidate ("" lets the workload
// choose) and FLEETSET_LEADER_NAME the leader. A failure is reported
// (status.actions.switchoverFailed, Warning events) and the action runs
// again with a growing delay while the hub asks; the hub gives up at its
// deadline. It runs only while that pod runs here and this placement's
// role report (status.leaders) still names it the leader: once the role
// moved (a run whose report was lost, a new leader term that forgot it),
// it is not run again in the former leader. One switchover runs at a time
// per placement.
func (c *Controller) switchover(ctx context.Context, sp *fleetv1.SubsetPlacement, pods []*v1.Pod) {
	pa := sp.Spec.Actions
	req := pa.Switchover
	key := client.ObjectKeyFromObject(sp)
	if req == nil || pa.Actions.Switchover == nil || (sp.Status.Actions != nil && sp.Status.Actions.Switchover == req.ID) {
		return
	}
	c.mu.Lock()
	done := c.switched[key] == req.ID
	c.mu.Unlock()
	if done {
		return
	}
	if !slices.Contains(strings.Split(sp.Status.Leaders, ","), req.Leader) {
		return
	}
	var leader *v1.Pod
	for _, p := range pods {
		if p.Name == req.Leader && p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			leader = p
		}
	}
	if leader == nil {
		return
	}
	prefix := "switchover/" + key.String() + "/"
	c.mu.Lock()
	busy := false
	for task := range c.running {
		busy = busy || (strings.HasPrefix(task, prefix) && task != prefix+req.ID)
	}
	c.mu.Unlock()
	if busy {
		return // an earlier request's action still runs; its end requeues
	}
	c.start(ctx, sp, prefix+req.ID, func(ctx context.Context) bool {
		res, err := c.runFor(ctx, sp, leader, fleetv1.ActionSwitchover, pa.Actions.Switchover, func(e *actions.Env) {
			e.Leader, e.Candidate = req.Leader, req.Candidate
		})
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.switchoverFailed[key] = [2]string{req.ID, statusMessage(fmt.Sprintf("%s: %v", leader.Name, err))}
			c.Recorder.Eventf(sp, leader, v1.EventTypeWarning, ReasonSwitchoverFailed, "Switchover",
				"switchover action in leader %s (candidate %q) failed after %d attempts; it runs again while the hub asks: %v", leader.Name, req.Candidate, res.Attempts, err)
			return false
		}
		c.switched[key] = req.ID
		delete(c.switchoverFailed, key)
		c.Recorder.Eventf(sp, leader, v1.EventTypeNormal, ReasonSwitchoverRan, "Switchover",
			"switchover action succeeded in leader %s (candidate %q); the hub waits for the role to move", leader.Name, req.Candidate)
		klog.FromContext(ctx).Info("Requested switchover action succeeded", "pod", klog.KObj(leader), "candidate", req.Candidate, "id", req.ID, "stdout", res.Stdout)
		return true
	})
}

// writeStatus writes sp's status.actions when it differs from what is
// known now.
func (c *Controller) writeStatus(ctx context.Context, sp *fleetv1.SubsetPlacement) error {
	key := client.ObjectKeyFromObject(sp)
	cur := fleetv1.PlacementActionsStatus{}
	if sp.Status.Actions != nil {
		cur = *sp.Status.Actions
	}
	c.mu.Lock()
	done := map[int32]bool{}
	for _, o := range fleetv1.ParseOrdinals(cur.Left) {
		done[o] = true
	}
	for o := range c.left[key] {
		done[o] = true
	}
	joined := map[int32]bool{}
	for _, o := range fleetv1.ParseOrdinals(cur.Joined) {
		joined[o] = true
	}
	for o := range c.joined[key] {
		joined[o] = true
	}
	for o := range c.left[key] {
		delete(joined, o)
	}
	want := fleetv1.PlacementActionsStatus{
		Left:            fleetv1.FormatOrdinals(LeftOrdinals(sp.Spec.Actions.Leave, done)),
		LeaveFailed:     c.leaveFailed[key],
		RolloutComplete: cur.RolloutComplete,
		Joined:          fleetv1.FormatOrdinals(keys(joined)),
	}
	if r := c.completed[key]; r != "" {
		want.RolloutComplete = r
	}
	want.Switchover, want.SwitchoverFailed = cur.Switchover, cur.SwitchoverFailed
	if id := c.switched[key]; id != "" {
		want.Switchover = id
	}
	if req := sp.Spec.Actions.Switchover; req == nil || req.ID == want.Switchover {
		// No request, or this one done: no failure to report.
		delete(c.switchoverFailed, key)
		want.SwitchoverFailed = ""
	} else if f, ok := c.switchoverFailed[key]; ok && f[0] == req.ID {
		want.SwitchoverFailed = f[1]
	} else if ok {
		// An earlier request's failure.
		want.SwitchoverFailed = ""
	}
	if len(sp.Spec.Actions.Leave) == 0 {
		delete(c.left, key)
		delete(c.leaveFailed, key)
		want.LeaveFailed = ""
	}
	c.mu.Unlock()
	if want == cur {
		return nil
	}
	str := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"actions": map[string]any{
		"left": str(want.Left), "leaveFailed": str(want.LeaveFailed), "rolloutComplete": str(want.RolloutComplete), "joined": str(want.Joined),
		"switchover": str(want.Switchover), "switchoverFailed": str(want.SwitchoverFailed)}}})
	obj := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Status.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status.actions of SubsetPlacement %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote the lifecycle actions' status", "placement", key, "left", want.Left, "leaveFailed", want.LeaveFailed,
		"rolloutComplete", want.RolloutComplete, "joined", want.Joined, "switchover", want.Switchover, "switchoverFailed", want.SwitchoverFailed)
	return nil
}

func keys(m map[int32]bool) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// related is p as an event's related object: nil (not a typed nil) when p
// is nil.
func related(p *v1.Pod) runtime.Object {
	if p == nil {
		return nil
	}
	return p
}

// rolloutCompleteTarget returns the pod rolloutComplete runs in: the
// leader (spec.actions.leader) when it is an instance of sp — nil while it
// is not running —, else sp's lowest running ordinal (pods are in ordinal
// order); nil when none runs.
func rolloutCompleteTarget(sp *fleetv1.SubsetPlacement, pods []*v1.Pod) *v1.Pod {
	running := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil }
	if l := sp.Spec.Actions.Leader; instanceOf(sp.Name, l) {
		for _, p := range pods {
			if p.Name == l && running(p) {
				return p
			}
		}
		return nil
	}
	for _, p := range pods {
		if running(p) {
			return p
		}
	}
	return nil
}

// instanceOf reports whether pod name is <placement>-<ordinal>.
func instanceOf(placement, name string) bool {
	rest, ok := strings.CutPrefix(name, placement+"-")
	if !ok || rest == "" {
		return false
	}
	n, err := strconv.ParseUint(rest, 10, 31)
	return err == nil && strconv.FormatUint(n, 10) == rest
}

// maxStatusMessage is the longest failure message written to
// status.actions (the schema's MaxLength is 4096 characters).
const maxStatusMessage = 2048

// statusMessage returns s cut to maxStatusMessage bytes at a rune boundary,
// with "…" when cut, so a long action error never makes the status write
// fail.
func statusMessage(s string) string {
	if len(s) <= maxStatusMessage {
		return s
	}
	cut := maxStatusMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
