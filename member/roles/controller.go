package roles

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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

// Event reasons, on pods.
const (
	ReasonUnknownRole     = "UnknownRole"
	ReasonRoleProbeFailed = "RoleProbeFailed"
)

// Defaults of Start.
const (
	// DefaultResync is the time between two passes over every placement's
	// status.
	DefaultResync = time.Minute
	// DefaultWorkers is the number of probe workers.
	DefaultWorkers = 8
)

// maxBody bounds what is read of a probe's answer (a role name is at most
// 63 characters).
const maxBody = 1024

// Controller probes the instances of SubsetPlacements with roles, labels
// them with their role, and writes each placement's status (see the package
// documentation).
type Controller struct {
	// Placements reads SubsetPlacements (the scheduler's cache).
	Placements client.Reader
	// Pods reads pods (the scheduler's pod informer).
	Pods corelisters.PodLister
	// Client patches pods' labels.
	Client kubernetes.Interface
	// Status writes SubsetPlacements' status subresource.
	Status client.SubResourceWriter
	// StatefulSets reads the StatefulSets labelled fleetset.io/set: a
	// placement's instances are the pods its delivered StatefulSet
	// controls (ownership.NotInstance), and its status.updateRevision says
	// which leaders are updated. nil: no pod is an instance (nothing is
	// probed, no status written).
	StatefulSets appslisters.StatefulSetLister
	// Recorder records events on pods.
	Recorder events.EventRecorder
	// HTTP sends the probes; each request carries its own timeout.
	HTTP *http.Client
	// Resync is the time between two passes over every placement's status.
	Resync time.Duration
	// Workers is the number of probe workers.
	Workers int
	// Actions runs the roleProbe lifecycle action (spec.actions); nil:
	// placements with only that probe are not probed.
	Actions *actions.Runner
	// ClusterDomain ends the fleet DNS names in the action's environment.
	ClusterDomain string

	// queue holds placements whose status to check.
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// probes holds pods to probe, each one at most once (waiting or queued).
	probes workqueue.TypedDelayingInterface[types.NamespacedName]

	// instances remembers the pods found to be instances of their
	// placement's delivered StatefulSet (ownership.Instances).
	instances ownership.Instances

	mu sync.Mutex
	// state is each probed pod's record of failures and warnings.
	state map[types.NamespacedName]*podState
}

// podState is what the probes of one pod remember.
type podState struct {
	uid types.UID
	// failures is the number of failed probes in a row.
	failures int32
	// failedWarned: the RoleProbeFailed event of this run of failures was
	// recorded.
	failedWarned bool
	// unknown is the unknown role last warned about, "" after a known one.
	unknown string
}

// New returns a Controller; its queues are fed by PodHandler,
// PlacementHandler and Run's resyncs.
func New(placements client.Reader, pods corelisters.PodLister, cs kubernetes.Interface, status client.SubResourceWriter, recorder events.EventRecorder) *Controller {
	return &Controller{
		Placements: placements, Pods: pods, Client: cs, Status: status, Recorder: recorder,
		HTTP: NewHTTPClient(), Resync: DefaultResync, Workers: DefaultWorkers,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "fleetset_member_roles"}),
		probes: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.NamespacedName]{Name: "fleetset_member_role_probes"}),
		state:  map[types.NamespacedName]*podState{},
	}
}

// NewHTTPClient returns the probes' client: no proxy (pod IPs are reached
// directly), no keep-alive (as the kubelet's probes), no redirect followed (a
// 3xx is a failure).
func NewHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext, MaxIdleConnsPerHost: -1},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Run runs a Controller over d until ctx is done: it registers its handlers
// on d's pod and StatefulSet informers (a new update revision makes the
// leader outdated without any pod event) and placement cache, waits for
// their caches and runs two status workers. d.Writer must also write the
// status subresource (a controller-runtime client). Errors are such a
// writer missing, a handler that cannot be registered, or caches that never
// synced before ctx ended.
func Run(ctx context.Context, d wiring.Deps) error {
	sw, ok := d.Writer.(client.StatusClient)
	if !ok || d.Writer == nil {
		return fmt.Errorf("the SubsetPlacement writer %T cannot write the status subresource", d.Writer)
	}
	logger := klog.FromContext(ctx).WithName("roles")
	ctx = klog.NewContext(ctx, logger)
	c := New(d.Placements, d.Pods.Lister(), d.Client, sw.Status(), d.Recorder)
	c.StatefulSets = d.StatefulSets.Lister()
	c.Actions, c.ClusterDomain = d.Actions, d.ClusterDomain
	var hs wiring.Handlers
	if err := hs.Add(d.Pods.Informer(), c.PodHandler()); err != nil {
		return err
	}
	if err := hs.Add(d.StatefulSets.Informer(), toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.enqueueObject(obj) },
		UpdateFunc: func(o, n interface{}) {
			if a, b := o.(*appsv1.StatefulSet), n.(*appsv1.StatefulSet); a.Status.UpdateRevision != b.Status.UpdateRevision {
				c.enqueueObject(n)
			}
		},
	}); err != nil {
		return err
	}
	if err := hs.AddPlacements(ctx, d.Placements, c.PlacementHandler()); err != nil {
		return err
	}
	return hs.Run(ctx, "fleetset-member-roles", func(ctx context.Context) {
		logger.Info("Role controller started", "probeWorkers", c.Workers, "resync", c.Resync)
		c.Run(ctx, 2)
	})
}

// Run runs status workers and c.Workers probe workers until ctx is done,
// and enqueues every placement every Resync.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	defer c.probes.ShutDown()
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.next(ctx) {
			}
		}, time.Second)
	}
	for range max(c.Workers, 1) {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.nextProbe(ctx) {
			}
		}, time.Second)
	}
	wait.UntilWithContext(ctx, c.enqueueAll, c.Resync)
}

// next handles one placement; false once the queue is shut down.
func (c *Controller) next(ctx context.Context) bool {
	return placementqueue.ProcessNext(ctx, c.queue, c.Sync, "Writing the roles of a placement failed")
}

// enqueueAll adds every placement with roles or a status, and the running
// pods of those with a probe (a pod already waiting for its next probe is
// left waiting).
func (c *Controller) enqueueAll(ctx context.Context) {
	var list fleetv1.SubsetPlacementList
	if err := c.Placements.List(ctx, &list); err != nil {
		klog.FromContext(ctx).Error(err, "Listing SubsetPlacements")
		return
	}
	for i := range list.Items {
		sp := &list.Items[i]
		if sp.Spec.Roles != nil || sp.Status != (fleetv1.SubsetPlacementStatus{}) {
			c.queue.Add(client.ObjectKeyFromObject(sp))
		}
	}
}

// PodHandler wakes the placement of a pod whose role, phase, IP or
// placement changed, and starts probing a pod that starts running. It also
// counts role changes.
func (c *Controller) PodHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*v1.Pod); ok && p.Labels[fleetv1.LabelPlacement] != "" {
				c.enqueuePlacementOf(p)
				if Running(p) {
					c.probes.Add(client.ObjectKeyFromObject(p))
				}
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*v1.Pod)
			p, ok2 := newObj.(*v1.Pod)
			if !ok1 || !ok2 {
				return
			}
			op, np := o.Labels[fleetv1.LabelPlacement], p.Labels[fleetv1.LabelPlacement]
			if op == "" && np == "" {
				return
			}
			if o.Labels[fleetv1.LabelRole] != p.Labels[fleetv1.LabelRole] && p.Labels[fleetv1.LabelRole] != "" && np != "" && Running(p) {
				roleChanges.Inc()
			}
			if op == np && Running(o) == Running(p) && o.Status.PodIP == p.Status.PodIP && o.UID == p.UID &&
				o.Labels[fleetv1.LabelRole] == p.Labels[fleetv1.LabelRole] {
				return
			}
			if op != np && op != "" {
				c.enqueuePlacementOf(o)
			}
			if np != "" {
				c.enqueuePlacementOf(p)
				if Running(p) && (!Running(o) || o.Status.PodIP != p.Status.PodIP || o.UID != p.UID || op != np) {
					c.probes.Add(client.ObjectKeyFromObject(p))
				}
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				c.instances.Forget(p.UID)
				if p.Labels[fleetv1.LabelPlacement] != "" {
					c.enqueuePlacementOf(p)
				}
			}
		},
	}
}

func (c *Controller) enqueuePlacementOf(p *v1.Pod) {
	c.queue.Add(types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[fleetv1.LabelPlacement]})
}

// PlacementHandler wakes a placement at every event, and probes its running
// pods at once when its roles change.
func (c *Controller) PlacementHandler() toolscache.ResourceEventHandler {
	add := func(obj interface{}, rolesChanged bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		sp, ok := obj.(*fleetv1.SubsetPlacement)
		if !ok {
			return
		}
		c.queue.Add(client.ObjectKeyFromObject(sp))
		if rolesChanged && sp.Spec.Roles != nil && (sp.Spec.Roles.Probe != nil || (sp.Spec.Actions != nil && sp.Spec.Actions.Actions.RoleProbe != nil)) {
			pods, _ := c.podsOf(sp)
			for _, p := range pods {
				c.probes.Add(client.ObjectKeyFromObject(p))
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { add(obj, true) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, _ := oldObj.(*fleetv1.SubsetPlacement)
			n, _ := newObj.(*fleetv1.SubsetPlacement)
			add(newObj, o == nil || n == nil || o.Generation != n.Generation)
		},
		DeleteFunc: func(obj interface{}) { add(obj, false) },
	}
}

// Running reports whether p is an instance: Running, with a pod IP, not
// being deleted.
func Running(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil
}

// podsOf returns the running instances of sp: the pods labelled into it
// that its delivered StatefulSet controls (or controlled: c.instances), or
// nil and why not when that StatefulSet is not known. A pod carrying the
// placement's labels without being one of them (a forged pod) is left
// out, never probed and never counted.
func (c *Controller) podsOf(sp *fleetv1.SubsetPlacement) ([]*v1.Pod, string) {
	sts, why := wiring.DeliveredStatefulSet(c.StatefulSets, sp)
	list, err := c.Pods.Pods(sp.Namespace).List(labels.SelectorFromSet(labels.Set{fleetv1.LabelPlacement: sp.Name}))
	if err != nil {
		return nil, err.Error()
	}
	out := slices.DeleteFunc(list, func(p *v1.Pod) bool { return !Running(p) || c.instances.Check(sts, p) != "" })
	if sts == nil && len(out) == 0 {
		return nil, why
	}
	return out, ""
}

// Sync writes the status of placement key when it differs from its pods'
// roles; an error asks for a retry.
func (c *Controller) Sync(ctx context.Context, key types.NamespacedName) error {
	sp := &fleetv1.SubsetPlacement{}
	if err := c.Placements.Get(ctx, key, sp); err != nil {
		return client.IgnoreNotFound(err)
	}
	if sp.Spec.Roles == nil && sp.Status.Roles == "" && sp.Status.Leaders == "" && sp.Status.UpdatedLeaders == "" {
		return nil // no roles, or cleared already
	}
	// status.actions is the actions controller's (its patch leaves it).
	want := fleetv1.SubsetPlacementStatus{ObservedGeneration: sp.Generation, Actions: sp.Status.Actions}
	if sp.Spec.Roles != nil {
		pods, why := c.podsOf(sp)
		if why != "" {
			// Which pods are its instances cannot be told: hold the
			// status as it is (its StatefulSet's events bring it back).
			klog.FromContext(ctx).V(2).Info("Holding the roles of a placement: its instances cannot be told", "placement", key, "reason", why)
			return nil
		}
		want.Roles, want.Leaders = Summarize(sp.Spec.Roles.Roles, pods)
		if c.StatefulSets != nil {
			if sts, err := c.StatefulSets.StatefulSets(sp.Namespace).Get(sp.Name); err == nil {
				want.UpdatedLeaders = UpdatedLeaders(want.Leaders, pods, sts.Status.UpdateRevision)
			}
		}
	}
	if sp.Status == want {
		return nil
	}
	patch, err := StatusPatch(want)
	if err != nil {
		return err
	}
	obj := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Status.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching the status of SubsetPlacement %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Wrote the roles of a placement", "placement", key, "roles", want.Roles, "leaders", want.Leaders)
	return nil
}

// StatusPatch is the JSON merge patch setting a placement's status to s (an
// empty field is removed).
func StatusPatch(s fleetv1.SubsetPlacementStatus) ([]byte, error) {
	str := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	var gen any
	if s.ObservedGeneration != 0 {
		gen = s.ObservedGeneration
	}
	return json.Marshal(map[string]any{"status": map[string]any{
		"roles": str(s.Roles), "leaders": str(s.Leaders), "updatedLeaders": str(s.UpdatedLeaders), "observedGeneration": gen}})
}

// Summarize returns a placement's status roles and leaders over its running
// pods: "<pod>=<role>" for each pod whose label fleetset.io/role names one of
// roles, sorted by pod name and joined by commas, and the pods holding the
// leader role, sorted and joined by commas.
func Summarize(roles []fleetv1.Role, pods []*v1.Pod) (summary, leaders string) {
	known := map[string]bool{}
	for _, r := range roles {
		known[r.Name] = r.IsLeader
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var s, l []string
	for _, p := range pods {
		role, ok := p.Labels[fleetv1.LabelRole]
		if !ok {
			continue
		}
		leader, ok := known[role]
		if !ok {
			continue
		}
		s = append(s, p.Name+"="+role)
		if leader {
			l = append(l, p.Name)
		}
	}
	return strings.Join(s, ","), strings.Join(l, ",")
}

// UpdatedLeaders returns those of leaders (comma-joined pod names) whose
// pod carries controller-revision-hash updateRevision, comma-joined; "" when
// updateRevision is unknown.
func UpdatedLeaders(leaders string, pods []*v1.Pod, updateRevision string) string {
	if leaders == "" || updateRevision == "" {
		return ""
	}
	var out []string
	for _, name := range strings.Split(leaders, ",") {
		for _, p := range pods {
			if p.Name == name && p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
				out = append(out, name)
			}
		}
	}
	return strings.Join(out, ",")
}

// enqueueObject queues the placement named like obj (a StatefulSet).
func (c *Controller) enqueueObject(obj interface{}) {
	if o, ok := obj.(metav1.Object); ok {
		c.queue.Add(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	}
}

// LabelsFor returns the labels a pod holding role carries: the role, and its
// access mode (None when unset); ok is false when role is none of roles.
func LabelsFor(roles []fleetv1.Role, role string) (map[string]string, bool) {
	for _, r := range roles {
		if r.Name == role {
			mode := r.AccessMode
			if mode == "" {
				mode = fleetv1.AccessNone
			}
			return map[string]string{fleetv1.LabelRole: r.Name, fleetv1.LabelAccessMode: string(mode)}, true
		}
	}
	return nil, false
}
