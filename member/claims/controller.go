package claims

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/internal/placementqueue"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// Event reasons, on the SubsetPlacement.
const (
	ReasonClaimsExpanded           = "ClaimsExpanded"
	ReasonStatefulSetReplaced      = "StatefulSetReplaced"
	ReasonClaimExpansionNotAllowed = "ClaimExpansionNotAllowed"
	ReasonClaimShrinkRefused       = "ClaimShrinkRefused"
	ReasonClaimsPending            = "ClaimsPending"
	ReasonNotOwned                 = "NotOwned"
	ReasonReplacementHeld          = "ReplacementHeld"
)

// DefaultResync is the default time between passes over every placement
// with claimStorage.
const DefaultResync = time.Minute

// Controller expands the claims of delivered StatefulSets to their
// SubsetPlacement's spec.claimStorage and replaces a StatefulSet whose claim
// templates are smaller (see the package documentation).
type Controller struct {
	// Placements reads SubsetPlacements (the scheduler's cache).
	Placements client.Reader
	// StatefulSets reads the StatefulSets labelled fleetset.io/set.
	StatefulSets appslisters.StatefulSetLister
	// Client lists and patches PVCs, reads StorageClasses and deletes
	// StatefulSets.
	Client kubernetes.Interface
	// Recorder records events on SubsetPlacements.
	Recorder events.EventRecorder
	// InContact, when set, says whether the member is in contact with the
	// hub, and why not: a StatefulSet is replaced (orphaning its pods) only
	// in contact. nil: always.
	InContact func() (bool, string)
	// Resync is the time between passes over every placement with
	// claimStorage: a refused or pending expansion is retried at that pace.
	Resync time.Duration

	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu sync.Mutex
	// done holds, per placement, the placement and StatefulSet whose claims
	// were all found expanded.
	done map[types.NamespacedName]stamp
	// warned holds, per placement, the last warning recorded, so that a
	// resync does not repeat it.
	warned map[types.NamespacedName]string
}

// stamp is what a finished check depends on.
type stamp struct {
	placement   types.UID
	generation  int64
	statefulSet types.UID
}

// New returns a Controller; its queue is fed by the handlers of
// PlacementHandler and StatefulSetHandler and by Run's resyncs.
func New(placements client.Reader, statefulSets appslisters.StatefulSetLister, cs kubernetes.Interface, recorder events.EventRecorder, resync time.Duration) *Controller {
	if resync <= 0 {
		resync = DefaultResync
	}
	return &Controller{
		Placements: placements, StatefulSets: statefulSets, Client: cs, Recorder: recorder, Resync: resync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "fleetset_member_claims"}),
		done:   map[types.NamespacedName]stamp{},
		warned: map[types.NamespacedName]string{},
	}
}

// Run runs a Controller over d until ctx is done: it registers its handlers
// on d's StatefulSet informer and placement cache, waits for their caches
// and runs two workers. Errors are a handler that cannot be registered, or
// caches that never synced before ctx ended.
func Run(ctx context.Context, d wiring.Deps, resync time.Duration) error {
	logger := klog.FromContext(ctx).WithName("claims")
	ctx = klog.NewContext(ctx, logger)
	c := New(d.Placements, d.StatefulSets.Lister(), d.Client, d.Recorder, resync)
	c.InContact = d.InContact
	var hs wiring.Handlers
	if err := hs.Add(d.StatefulSets.Informer(), c.StatefulSetHandler()); err != nil {
		return err
	}
	if err := hs.AddPlacements(ctx, d.Placements, c.PlacementHandler()); err != nil {
		return err
	}
	return hs.Run(ctx, "fleetset-member-claims", func(ctx context.Context) {
		logger.Info("Claim expansion controller started", "resync", c.Resync)
		c.Run(ctx, 2)
	})
}

// Run runs workers until ctx is done, and enqueues every placement with
// claimStorage every Resync.
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
	return placementqueue.ProcessNext(ctx, c.queue, c.Sync, "Claim expansion failed")
}

// enqueueAll adds every placement with claimStorage.
func (c *Controller) enqueueAll(ctx context.Context) {
	placementqueue.EnqueueMatching(ctx, c.Placements, c.queue, func(sp *fleetv1.SubsetPlacement) bool { return len(sp.Spec.ClaimStorage) > 0 })
}

// PlacementHandler enqueues the placement of every SubsetPlacement event.
func (c *Controller) PlacementHandler() toolscache.ResourceEventHandler {
	return c.handler()
}

// StatefulSetHandler enqueues the placement of the same name as the
// StatefulSet of every event.
func (c *Controller) StatefulSetHandler() toolscache.ResourceEventHandler {
	return c.handler()
}

// handler enqueues <namespace>/<name> of every event's object: the
// placement and its StatefulSet share it.
func (c *Controller) handler() toolscache.ResourceEventHandler {
	add := func(obj interface{}) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(metav1.Object); ok {
			c.queue.Add(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj interface{}) { add(obj) }, DeleteFunc: add}
}

// Sync takes the placement key one step further (see the package
// documentation); an error asks for a retry.
func (c *Controller) Sync(ctx context.Context, key types.NamespacedName) error {
	logger := klog.FromContext(ctx).WithValues("placement", key)
	ctx = klog.NewContext(ctx, logger)
	sp := &fleetv1.SubsetPlacement{}
	if err := c.Placements.Get(ctx, key, sp); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
			return nil
		}
		return err
	}
	if !sp.DeletionTimestamp.IsZero() || len(sp.Spec.ClaimStorage) == 0 {
		c.forget(key)
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
		return nil // being orphaned; the work agent creates the next one
	}
	desired := map[string]resource.Quantity{}
	for _, cs := range sp.Spec.ClaimStorage {
		desired[cs.Name] = cs.Storage
	}
	var grow, shrink []string
	for _, t := range sts.Spec.VolumeClaimTemplates {
		want, ok := desired[t.Name]
		if !ok {
			continue
		}
		have := t.Spec.Resources.Requests[v1.ResourceStorage]
		switch have.Cmp(want) {
		case -1:
			grow = append(grow, fmt.Sprintf("%s %s→%s", t.Name, have.String(), want.String()))
		case 1:
			shrink = append(shrink, fmt.Sprintf("%s %s→%s", t.Name, have.String(), want.String()))
		}
	}
	if why := wiring.NotOwned(sp, sts); why != "" {
		if len(grow)+len(shrink) > 0 {
			c.warn(ctx, sp, ReasonNotOwned, "Check", fmt.Sprintf(
				"StatefulSet %s/%s is not this placement's (%s): its claim templates (%s) are left as they are",
				sts.Namespace, sts.Name, why, strings.Join(append(grow, shrink...), ", ")))
		}
		return nil
	}
	if len(shrink) > 0 {
		if c.warn(ctx, sp, ReasonClaimShrinkRefused, "Check", fmt.Sprintf(
			"claimStorage is smaller than the claim templates of StatefulSet %s (%s): claims are never shrunk, the StatefulSet is left as it is",
			sts.Name, strings.Join(shrink, ", "))) {
			replacements.WithLabelValues(resultShrinkRefused).Inc()
		}
		return nil
	}
	st := stamp{placement: sp.UID, generation: sp.Generation, statefulSet: sts.UID}
	if len(grow) == 0 && c.isDone(key, st) {
		return nil
	}
	left, stop, err := c.expand(ctx, sp, sts, desired)
	if err != nil || stop {
		return err
	}
	if len(grow) > 0 {
		if c.InContact != nil {
			if ok, why := c.InContact(); !ok {
				// Orphaned pods have no StatefulSet for the fence to find,
				// and only the work agent, through the hub, re-creates it.
				c.warn(ctx, sp, ReasonReplacementHeld, "Replace", fmt.Sprintf("StatefulSet %s is not replaced while the member is not in contact with the hub (%s); its claims are expanded, the replacement waits", sts.Name, why))
				return fmt.Errorf("StatefulSet %s: replacement held: member not in contact with the hub", klog.KObj(sts))
			}
		}
		return c.replace(ctx, sp, sts, grow)
	}
	if left == 0 {
		c.markDone(key, st)
	}
	return nil
}

// need is a claim to expand.
type need struct {
	pvc  *v1.PersistentVolumeClaim
	want resource.Quantity
}

// expand patches the existing claims of sts whose request is below
// desired. It returns how many it had to leave for later (not Bound, or
// changed meanwhile), and stop when a StorageClass forbids the expansion
// (then nothing is patched, and the event says which).
func (c *Controller) expand(ctx context.Context, sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, desired map[string]resource.Quantity) (left int, stop bool, err error) {
	logger := klog.FromContext(ctx)
	list, err := c.Client.CoreV1().PersistentVolumeClaims(sts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, false, fmt.Errorf("listing PersistentVolumeClaims in %s: %w", sts.Namespace, err)
	}
	needs := claimsToExpand(list.Items, sts, sp.Spec.OrdinalBlockSizeOrDefault(), desired)
	if len(needs) == 0 {
		return 0, false, nil
	}
	// Every class first: nothing is patched unless all claims can grow.
	classes := map[string]*storagev1.StorageClass{}
	var refused []string
	for _, n := range needs {
		name := ptr.Deref(n.pvc.Spec.StorageClassName, "")
		if name == "" {
			refused = append(refused, fmt.Sprintf("claim %s has no StorageClass", n.pvc.Name))
			continue
		}
		sc, ok := classes[name]
		if !ok {
			sc, err = c.Client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				sc = nil
			} else if err != nil {
				return 0, false, fmt.Errorf("reading StorageClass %s: %w", name, err)
			}
			classes[name] = sc
		}
		switch {
		case sc == nil:
			refused = append(refused, fmt.Sprintf("StorageClass %s of claim %s does not exist", name, n.pvc.Name))
		case !ptr.Deref(sc.AllowVolumeExpansion, false):
			refused = append(refused, fmt.Sprintf("StorageClass %s of claim %s does not allow volume expansion (allowVolumeExpansion is not true)", name, n.pvc.Name))
		}
	}
	if len(refused) > 0 {
		if c.warn(ctx, sp, ReasonClaimExpansionNotAllowed, "Expand", fmt.Sprintf(
			"cannot expand the claims of StatefulSet %s to claimStorage: %s; the StatefulSet is left as it is until they can be",
			sts.Name, list10(refused))) {
			claimExpansions.WithLabelValues(resultNotExpandable).Add(float64(len(refused)))
		}
		return 0, true, nil
	}
	var expanded, pending []string
	var errs []error
	for _, n := range needs {
		if n.pvc.Status.Phase != v1.ClaimBound {
			pending = append(pending, n.pvc.Name)
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q},"spec":{"resources":{"requests":{"storage":%q}}}}`,
			n.pvc.UID, n.pvc.ResourceVersion, n.want.String())
		_, err := c.Client.CoreV1().PersistentVolumeClaims(n.pvc.Namespace).Patch(ctx, n.pvc.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			left++ // gone or changed since the list: the next pass sees it
		case err != nil:
			claimExpansions.WithLabelValues(resultFailed).Inc()
			errs = append(errs, fmt.Errorf("expanding PersistentVolumeClaim %s to %s: %w", klog.KObj(n.pvc), n.want.String(), err))
		default:
			claimExpansions.WithLabelValues(resultExpanded).Inc()
			expanded = append(expanded, n.pvc.Name)
			old := n.pvc.Spec.Resources.Requests[v1.ResourceStorage]
			logger.Info("Expanded claim", "claim", klog.KObj(n.pvc), "from", old.String(), "to", n.want.String(), "statefulSet", sts.Name)
		}
	}
	if len(expanded) > 0 {
		c.clearWarning(sp)
		c.Recorder.Eventf(sp, nil, v1.EventTypeNormal, ReasonClaimsExpanded, "Expand",
			"Expanded %d claims of StatefulSet %s to claimStorage: %s", len(expanded), sts.Name, list10(expanded))
	}
	if len(pending) > 0 {
		left += len(pending)
		c.warn(ctx, sp, ReasonClaimsPending, "Expand", fmt.Sprintf(
			"claims of StatefulSet %s are not Bound and cannot be expanded yet (retried): %s", sts.Name, list10(pending)))
	}
	return left, false, errors.Join(errs...)
}

// claimsToExpand returns the claims of list made from a claim template of
// sts named in desired, whose request is below it: those named exactly
// <template>-<statefulset>-<ordinal>, for the ordinals of the block
// [ordinals.start, ordinals.start+block), that are not being deleted and
// are not owned by another StatefulSet. They are sorted by name.
func claimsToExpand(list []v1.PersistentVolumeClaim, sts *appsv1.StatefulSet, block int32, desired map[string]resource.Quantity) []need {
	start := 0
	if sts.Spec.Ordinals != nil {
		start = int(sts.Spec.Ordinals.Start)
	}
	var out []need
	for i := range list {
		pvc := &list[i]
		if pvc.DeletionTimestamp != nil || ownedByOther(pvc, sts) {
			continue
		}
		for _, t := range sts.Spec.VolumeClaimTemplates {
			want, ok := desired[t.Name]
			if !ok {
				continue
			}
			rest, ok := strings.CutPrefix(pvc.Name, t.Name+"-"+sts.Name+"-")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(rest)
			if err != nil || strconv.Itoa(n) != rest || n < start || n >= start+int(block) {
				continue
			}
			have := pvc.Spec.Resources.Requests[v1.ResourceStorage]
			if have.Cmp(want) < 0 {
				out = append(out, need{pvc: pvc, want: want})
			}
			break
		}
	}
	slices.SortFunc(out, func(a, b need) int { return strings.Compare(a.pvc.Name, b.pvc.Name) })
	return out
}

// ownedByOther reports whether pvc names another StatefulSet as an owner.
func ownedByOther(pvc *v1.PersistentVolumeClaim, sts *appsv1.StatefulSet) bool {
	for _, ref := range pvc.OwnerReferences {
		if ref.Kind == "StatefulSet" && strings.HasPrefix(ref.APIVersion, "apps/") && ref.Name != sts.Name {
			return true
		}
	}
	return false
}

// replace deletes sts with propagationPolicy Orphan and a UID precondition.
func (c *Controller) replace(ctx context.Context, sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, grow []string) error {
	err := c.Client.AppsV1().StatefulSets(sts.Namespace).Delete(ctx, sts.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
		Preconditions:     metav1.NewUIDPreconditions(string(sts.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another one: its events bring it back here
	}
	if err != nil {
		replacements.WithLabelValues(resultFailed).Inc()
		return fmt.Errorf("deleting StatefulSet %s (orphan): %w", klog.KObj(sts), err)
	}
	replacements.WithLabelValues(resultReplaced).Inc()
	c.clearWarning(sp)
	klog.FromContext(ctx).Info("Deleted StatefulSet with propagationPolicy Orphan for the work agent to re-create it with larger claim templates",
		"statefulSet", klog.KObj(sts), "uid", sts.UID, "templates", grow)
	c.Recorder.Eventf(sp, nil, v1.EventTypeNormal, ReasonStatefulSetReplaced, "Replace",
		"Deleted StatefulSet %s (uid %s) with propagationPolicy Orphan, its claim templates being smaller than claimStorage (%s): "+
			"its pods keep running, and the work agent creates it again with the larger templates",
		sts.Name, sts.UID, strings.Join(grow, ", "))
	return nil
}

// warn records a Warning event on sp unless it is the last one recorded for
// it; it reports whether it did.
func (c *Controller) warn(ctx context.Context, sp *fleetv1.SubsetPlacement, reason, action, msg string) bool {
	key := client.ObjectKeyFromObject(sp)
	c.mu.Lock()
	if c.warned[key] == reason+": "+msg {
		c.mu.Unlock()
		return false
	}
	c.warned[key] = reason + ": " + msg
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Claim expansion waits", "reason", reason, "message", msg)
	c.Recorder.Eventf(sp, nil, v1.EventTypeWarning, reason, action, "%s", msg)
	return true
}

func (c *Controller) clearWarning(sp *fleetv1.SubsetPlacement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.warned, client.ObjectKeyFromObject(sp))
}

func (c *Controller) isDone(key types.NamespacedName, st stamp) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done[key] == st
}

func (c *Controller) markDone(key types.NamespacedName, st stamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[key] = st
	delete(c.warned, key)
}

func (c *Controller) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.done, key)
	delete(c.warned, key)
}

// list10 joins at most 10 items, and says how many more there are (an
// event's note is at most 1 kB).
func list10(items []string) string {
	if len(items) <= 10 {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:10], "; "), len(items)-10)
}
