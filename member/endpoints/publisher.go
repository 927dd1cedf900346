// Package endpoints publishes a member cluster's instances to the hub for
// fleet DNS (see api/v1alpha1/fleetdns.go): for every FleetSet with
// instances in this cluster, one EndpointSlice in the member's cluster
// namespace on the hub, listing each instance this cluster's DNS serves:
// the endpoints with a hostname in the EndpointSlices the EndpointSlice
// controller keeps for the FleetSet's governing Service. The hub delivers
// them to the other members.
//
// The report follows those EndpointSlices, not the pods, because the hub
// withholds from a cluster the fleet record of any instance the cluster
// reports (its own EndpointSlice answers the name there): a report read
// from the pods runs ahead of the EndpointSlice controller, so a cluster
// whose copy of an instance was just deleted could receive the instance's
// record from elsewhere while its own EndpointSlice still listed the old
// copy, and answer two addresses for one name. Read from the
// EndpointSlices, the record is written in this cluster after the
// EndpointSlice dropped the copy, and DNS servers watching EndpointSlices
// see the two changes in that order.
//
// The report lists an endpoint only when it is an instance of the
// FleetSet (never by a label or a hostname alone; see Publisher.admit): its
// targetRef is a pod, with the UID the pod has, whose name is the
// endpoint's hostname; that pod is controlled by the delivered StatefulSet
// of a placement of the FleetSet (ownerReference controller=true with the
// StatefulSet's UID, named <statefulset>-<ordinal>), the ordinal in the
// placement's block; and the endpoint's address is the pod's. A pod in a
// member namespace with hostname and subdomain naming another cluster's
// instance, selected by the governing Service or by a Service of its
// author's, is not reported: the hub would otherwise stop delivering this
// cluster the other cluster's record and publish whatever name it claims.
// A pod once found to be an instance stays one (its UID and name never
// change) while an EndpointSlice lists it: after it is deleted, and while
// its StatefulSet is re-created (deleted with propagationPolicy Orphan,
// then adopting it again); a new leader term has not seen those pods and
// leaves them out until their StatefulSet controls them.
//
// The publisher runs in the member controllers' leader only. It never
// deletes a report because the hub is unreachable: a failed write is
// retried, and the hub keeps the last report (silence keeps records). It
// deletes a FleetSet's report only when no EndpointSlice here lists an
// instance of it.
package endpoints

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/internal/ownership"
	"github.com/fleetset/fleetset/member/internal/placementqueue"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// Results of publishes.
const (
	resultApplied = "applied"
	resultDeleted = "deleted"
	resultFailed  = "failed"
)

var publishes = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "fleetset", Subsystem: "member", Name: "fleet_dns_publishes_total",
	Help: "Writes of this member's fleet DNS reports (its instances' addresses, one EndpointSlice per FleetSet in its cluster namespace on the hub), " +
		"by result: applied (created or updated), deleted (no EndpointSlice here lists an instance of the FleetSet any more), failed (retried).",
	StabilityLevel: metrics.ALPHA,
}, []string{"result"})

var rejected = metrics.NewCounter(&metrics.CounterOpts{
	Namespace: "fleetset", Subsystem: "member", Name: "fleet_dns_rejected_endpoints_total",
	Help: "Endpoints of this member's EndpointSlices left out of its fleet DNS reports, counted per sync: not an instance of the FleetSet " +
		"(no pod targetRef, a hostname that is not the pod's name, a pod its placement's delivered StatefulSet does not control, an ordinal outside the placement's block, an address that is not the pod's).",
	StabilityLevel: metrics.ALPHA,
})

func init() {
	legacyregistry.MustRegister(publishes, rejected)
}

// SliceSelector selects the EndpointSlices the publisher reads: those the
// EndpointSlice controller keeps for a Service labelled fleetset.io/set (it
// copies the Service's labels to them), not the fleet DNS slices the hub
// delivers.
const SliceSelector = discoveryv1.LabelManagedBy + "=" + controllerManagedBy + "," + fleetv1.LabelSet

// controllerManagedBy is the value of endpointslice.kubernetes.io/managed-by
// on the EndpointSlices kube-controller-manager's EndpointSlice controller
// writes.
const controllerManagedBy = "endpointslice-controller.k8s.io"

// Publisher keeps the hub's copy of this member's instances current.
type Publisher struct {
	// Cluster is this member's ManagedCluster name: its namespace on the hub.
	Cluster string
	// Slices lists the member's EndpointSlices (those of SliceSelector; it
	// may hold others, which are ignored).
	Slices discoverylisters.EndpointSliceLister
	// Hub is the hub's clientset, with the add-on's credentials.
	Hub kubernetes.Interface
	// Resync is how often every FleetSet is published again, whether or
	// not a pod changed (a hub restored from backup gets its reports back).
	Resync time.Duration
	// Pods, StatefulSets and Placements read the pods the endpoints name,
	// the StatefulSets labelled fleetset.io/set and the SubsetPlacements:
	// an endpoint is reported only when its pod is an instance of a
	// placement of the FleetSet (admit).
	Pods         corelisters.PodLister
	StatefulSets appslisters.StatefulSetLister
	Placements   client.Reader

	// instances remembers the pods found to be instances.
	instances ownership.Instances

	queue placementqueue.Queue
	mu    sync.Mutex
	// known are the FleetSets (namespace/name) published and the endpoints
	// last written; a key is dropped once its report is deleted.
	known map[types.NamespacedName][]discoveryv1.Endpoint
	// admitted holds, per FleetSet, the endpoints the last Sync admitted
	// (admittedKey: hostname, address and pod UID): an endpoint admitted
	// once stays admitted while an EndpointSlice lists it with the same
	// pod, address and hostname, whatever its pod, StatefulSet or
	// placement look like meanwhile (deleted, terminating, re-created), so
	// the report drops an instance only after the EndpointSlice does (the
	// order fleet DNS relies on). A forged endpoint is never admitted in
	// the first place.
	admitted map[types.NamespacedName]map[string]bool
}

// admittedKey is an endpoint's identity in Publisher.admitted.
func admittedKey(ep discoveryv1.Endpoint, addr string) string {
	uid := types.UID("")
	if ep.TargetRef != nil {
		uid = ep.TargetRef.UID
	}
	return ptr.Deref(ep.Hostname, "") + "/" + addr + "/" + string(uid)
}

// Run publishes the EndpointSlices of SliceSelector in d.Client's cluster
// (an informer of its own, for this leader term) to hub as cluster until
// ctx is done; it returns an error when the informer's handler cannot be
// registered or its cache never syncs.
func Run(ctx context.Context, d wiring.Deps, hub kubernetes.Interface, cluster string, resync time.Duration) error {
	logger := klog.FromContext(ctx).WithName("fleet-dns")
	ctx = klog.NewContext(ctx, logger)
	if d.Pods == nil || d.StatefulSets == nil || d.Placements == nil {
		return fmt.Errorf("the fleet DNS publisher needs the pod and StatefulSet informers and the SubsetPlacement reader")
	}
	factory := wiring.NewLabelledFactory(d.Client, SliceSelector)
	slices := factory.Discovery().V1().EndpointSlices()
	p := &Publisher{Cluster: cluster, Slices: slices.Lister(), Hub: hub, Resync: resync,
		Pods: d.Pods.Lister(), StatefulSets: d.StatefulSets.Lister(), Placements: d.Placements}
	var hs wiring.Handlers
	if err := hs.Add(slices.Informer(), p.SliceHandler()); err != nil {
		return err
	}
	if err := hs.Add(d.Pods.Informer(), p.PodHandler()); err != nil {
		return err
	}
	if err := hs.Add(d.StatefulSets.Informer(), p.StatefulSetHandler()); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	return hs.Run(ctx, "fleetset-member-fleet-dns", func(ctx context.Context) {
		logger.Info("Fleet DNS publisher started", "cluster", cluster, "resync", resync)
		p.Run(ctx, 2)
	})
}

func (p *Publisher) init() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queue == nil {
		p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "fleetset-member-fleet-dns"})
		p.known = map[types.NamespacedName][]discoveryv1.Endpoint{}
	}
}

// Run runs workers until ctx is done, and enqueues every FleetSet every
// Resync.
func (p *Publisher) Run(ctx context.Context, workers int) {
	p.init()
	defer p.queue.ShutDown()
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for placementqueue.ProcessNext(ctx, p.queue, p.Sync, "Publishing fleet DNS records failed") {
			}
		}, time.Second)
	}
	p.enqueueHubReports(ctx)
	wait.UntilWithContext(ctx, p.enqueueAll, p.Resync)
}

// enqueueHubReports adds every FleetSet this cluster has a report of on the
// hub, once per run (leader term): a report whose last instance left
// while no publisher ran here is then deleted, not left on the hub, where
// it would keep withholding that instance's record from this cluster. A
// failed list is logged; the reports published this term are resynced
// anyway.
func (p *Publisher) enqueueHubReports(ctx context.Context) {
	list, err := p.Hub.DiscoveryV1().EndpointSlices(p.Cluster).List(ctx, metav1.ListOptions{LabelSelector: fleetv1.LabelMemberEndpoints + "=true"})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing this cluster's fleet DNS reports on the hub; a report left from an earlier leader term is deleted only once a pod of its FleetSet runs here again")
		return
	}
	for _, s := range list.Items {
		ns, name := s.Labels[fleetv1.LabelOwnerNamespace], s.Labels[fleetv1.LabelOwnerName]
		if ns != "" && name != "" && s.Name == fleetv1.MemberEndpointsName(ns, name) {
			p.queue.Add(types.NamespacedName{Namespace: ns, Name: name})
		}
	}
}

// enqueueAll adds every FleetSet with an EndpointSlice here or a report
// published, and forgets what was last written, so the next sync reads the
// hub again.
func (p *Publisher) enqueueAll(ctx context.Context) {
	all, err := p.Slices.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing EndpointSlices")
		return
	}
	p.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(p.known))
	for k := range p.known {
		keys = append(keys, k)
		p.known[k] = nil
	}
	p.mu.Unlock()
	listed := map[types.UID]bool{}
	for _, sl := range all {
		if k, ok := fleetSetOf(sl); ok {
			keys = append(keys, k)
		}
		for _, ep := range sl.Endpoints {
			if ep.TargetRef != nil {
				listed[ep.TargetRef.UID] = true
			}
		}
	}
	if p.Pods != nil {
		p.instances.Sweep(p.Pods, func(uid types.UID) bool { return listed[uid] })
	}
	for _, k := range keys {
		p.queue.Add(k)
	}
}

// SliceHandler enqueues the FleetSet of every EndpointSlice event.
func (p *Publisher) SliceHandler() toolscache.ResourceEventHandler {
	p.init()
	add := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if sl, ok := obj.(*discoveryv1.EndpointSlice); ok {
			if k, ok := fleetSetOf(sl); ok {
				p.queue.Add(k)
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, n any) { add(n) }, DeleteFunc: add}
}

// PodHandler enqueues the FleetSet (label fleetset.io/set) of a pod that
// appears, or whose controller, IPs or phase change: the pod informer may
// see a pod after the EndpointSlice that lists it, and a StatefulSet
// adopting its pods again changes only their ownerReferences.
func (p *Publisher) PodHandler() toolscache.ResourceEventHandler {
	p.init()
	add := func(obj any) {
		if pod, ok := obj.(*v1.Pod); ok && pod.Labels[fleetv1.LabelSet] != "" {
			p.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[fleetv1.LabelSet]})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(o, n any) {
		a, ok1 := o.(*v1.Pod)
		b, ok2 := n.(*v1.Pod)
		if ok1 && ok2 && (a.Status.Phase != b.Status.Phase || !slices.Equal(a.Status.PodIPs, b.Status.PodIPs) ||
			!apiequality.Semantic.DeepEqual(metav1.GetControllerOfNoCopy(a), metav1.GetControllerOfNoCopy(b))) {
			add(n)
		}
	}}
}

// StatefulSetHandler enqueues the FleetSet (label fleetset.io/set) of a
// StatefulSet that appears or changes.
func (p *Publisher) StatefulSetHandler() toolscache.ResourceEventHandler {
	p.init()
	add := func(obj any) {
		if o, ok := obj.(metav1.Object); ok && o.GetLabels()[fleetv1.LabelSet] != "" {
			p.queue.Add(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[fleetv1.LabelSet]})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, n any) { add(n) }}
}

// fleetSetOf returns the FleetSet of an EndpointSlice the EndpointSlice
// controller keeps for a delivered Service: its namespace and label
// fleetset.io/set.
func fleetSetOf(sl *discoveryv1.EndpointSlice) (types.NamespacedName, bool) {
	set := sl.Labels[fleetv1.LabelSet]
	if set == "" || sl.Labels[discoveryv1.LabelManagedBy] != controllerManagedBy {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: sl.Namespace, Name: set}, true
}

// Sync publishes FleetSet key: writes its report when the endpoints differ
// from what the hub holds, or deletes it when no EndpointSlice here lists
// an instance of key. It returns the hub's error, to retry.
func (p *Publisher) Sync(ctx context.Context, key types.NamespacedName) error {
	sel := labels.SelectorFromSet(labels.Set{fleetv1.LabelSet: key.Name})
	local, err := p.Slices.EndpointSlices(key.Namespace).List(sel)
	if err != nil {
		return err
	}
	local = slices.DeleteFunc(local, func(sl *discoveryv1.EndpointSlice) bool { _, ok := fleetSetOf(sl); return !ok })
	var left []string
	p.mu.Lock()
	before := p.admitted[key]
	p.mu.Unlock()
	now := map[string]bool{}
	want := Report(p.Cluster, key.Namespace, key.Name, local, func(ep discoveryv1.Endpoint, addr string) bool {
		k := admittedKey(ep, addr)
		why := ""
		if ep.TargetRef == nil || ep.TargetRef.UID == "" || !before[k] {
			why = p.admit(ctx, key, ep, addr)
		}
		if why != "" {
			left = append(left, ptr.Deref(ep.Hostname, "")+" at "+addr+": "+why)
			return false
		}
		now[k] = true
		return true
	})
	p.mu.Lock()
	if p.admitted == nil {
		p.admitted = map[types.NamespacedName]map[string]bool{}
	}
	p.admitted[key] = now
	p.mu.Unlock()
	if len(left) > 0 {
		rejected.Add(float64(len(left)))
		klog.FromContext(ctx).V(2).Info("Endpoints left out of the fleet DNS report: not instances of the FleetSet", "fleetSet", key, "endpoints", left)
	}
	reports := p.Hub.DiscoveryV1().EndpointSlices(p.Cluster)
	name := fleetv1.MemberEndpointsName(key.Namespace, key.Name)
	if len(want.Endpoints) == 0 {
		if err := reports.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			publishes.WithLabelValues(resultFailed).Inc()
			return fmt.Errorf("deleting fleet DNS report %s/%s on the hub: %w", p.Cluster, name, err)
		}
		p.mu.Lock()
		_, had := p.known[key]
		delete(p.known, key)
		p.mu.Unlock()
		if had {
			publishes.WithLabelValues(resultDeleted).Inc()
		}
		return nil
	}
	p.mu.Lock()
	last, published := p.known[key]
	p.mu.Unlock()
	if published && last != nil && apiequality.Semantic.DeepEqual(last, want.Endpoints) {
		return nil
	}
	if err := p.write(ctx, want); err != nil {
		publishes.WithLabelValues(resultFailed).Inc()
		return err
	}
	publishes.WithLabelValues(resultApplied).Inc()
	p.mu.Lock()
	p.known[key] = want.Endpoints
	p.mu.Unlock()
	return nil
}

// write creates want on the hub, or updates the existing report when its
// endpoints or labels differ.
func (p *Publisher) write(ctx context.Context, want *discoveryv1.EndpointSlice) error {
	c := p.Hub.DiscoveryV1().EndpointSlices(want.Namespace)
	cur, err := c.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.Create(ctx, want, metav1.CreateOptions{FieldManager: wiring.Component}); err != nil {
			return fmt.Errorf("creating fleet DNS report %s/%s on the hub: %w", want.Namespace, want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading fleet DNS report %s/%s on the hub: %w", want.Namespace, want.Name, err)
	}
	if apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) && labels.Equals(cur.Labels, want.Labels) {
		return nil
	}
	cur.Labels, cur.Endpoints = want.Labels, want.Endpoints
	if _, err := c.Update(ctx, cur, metav1.UpdateOptions{FieldManager: wiring.Component}); err != nil {
		return fmt.Errorf("updating fleet DNS report %s/%s on the hub: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// Report returns the EndpointSlice a member publishes on the hub for the
// FleetSet namespace/name from local, the EndpointSlices the EndpointSlice
// controller keeps here for its governing Service: one endpoint per
// hostname they list (a StatefulSet pod's name; endpoints without one
// are not the governing Service's instances), with its first IPv4 address
// and its Serving and Terminating conditions as the controller set them
// (Ready is the hub's to compute), sorted by hostname. A hostname listed
// twice (the controller moving an endpoint between slices) is reported
// once: the serving, not terminating one, else the one of the slice first
// by name. cluster is the member's cluster namespace on the hub. Only the
// endpoints admit accepts (called with the endpoint and the address
// reported) are listed.
func Report(cluster, namespace, name string, local []*discoveryv1.EndpointSlice, admit func(ep discoveryv1.Endpoint, addr string) bool) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fleetv1.MemberEndpointsName(namespace, name),
			Namespace: cluster,
			Labels: map[string]string{
				fleetv1.LabelMemberEndpoints: "true",
				fleetv1.LabelOwnerNamespace:  namespace,
				fleetv1.LabelOwnerName:       name,
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	local = slices.Clone(local)
	slices.SortFunc(local, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	seen := map[string]int{} // hostname → index in s.Endpoints
	for _, sl := range local {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range sl.Endpoints {
			host := ptr.Deref(ep.Hostname, "")
			if host == "" {
				continue
			}
			addr := ""
			for _, ip := range ep.Addresses {
				if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
					addr = a.String()
					break
				}
			}
			if addr == "" || !admit(ep, addr) {
				continue
			}
			e := discoveryv1.Endpoint{
				Addresses: []string{addr},
				Hostname:  ptr.To(host),
				Conditions: discoveryv1.EndpointConditions{
					Serving:     ptr.To(ptr.Deref(ep.Conditions.Serving, false)),
					Terminating: ptr.To(ptr.Deref(ep.Conditions.Terminating, false)),
				},
			}
			i, dup := seen[host]
			switch {
			case !dup:
				seen[host] = len(s.Endpoints)
				s.Endpoints = append(s.Endpoints, e)
			case live(e) && !live(s.Endpoints[i]):
				s.Endpoints[i] = e
			}
		}
	}
	slices.SortFunc(s.Endpoints, func(a, b discoveryv1.Endpoint) int { return strings.Compare(*a.Hostname, *b.Hostname) })
	return s
}

// live reports whether e is serving and not terminating.
func live(e discoveryv1.Endpoint) bool {
	return ptr.Deref(e.Conditions.Serving, false) && !ptr.Deref(e.Conditions.Terminating, false)
}

// admit says why ep, listed for FleetSet key with address addr by an
// EndpointSlice here, is not one of key's instances, "" when it is: its
// targetRef is a pod of key's namespace with the pod's UID and the
// endpoint's hostname as its name; that pod is an instance
// (ownership.NotInstance) of the delivered StatefulSet of a placement of
// key (the StatefulSet and placement labelled fleetset.io/set=<key>, the
// placement owning the StatefulSet), with its ordinal in the placement's
// block, and addr is one of its IPs; or it was found so before
// (p.instances: deleted since, or its StatefulSet being re-created).
func (p *Publisher) admit(ctx context.Context, key types.NamespacedName, ep discoveryv1.Endpoint, addr string) string {
	host, ref := ptr.Deref(ep.Hostname, ""), ep.TargetRef
	switch {
	case ref == nil || ref.Kind != "Pod" || ref.UID == "":
		return "no pod targetRef"
	case ref.Namespace != "" && ref.Namespace != key.Namespace:
		return "targetRef in namespace " + ref.Namespace
	case ref.Name != host:
		return fmt.Sprintf("hostname %q is not its pod's name %q", host, ref.Name)
	}
	if p.Pods == nil {
		return "no pod lister"
	}
	pod, err := p.Pods.Pods(key.Namespace).Get(ref.Name)
	if err != nil || pod.UID != ref.UID {
		// Gone (or replaced) while the EndpointSlice lists it still: an
		// instance only when it was found one before.
		if p.instances.Known(ref.UID, key.Namespace, ref.Name, addr) {
			return ""
		}
		return fmt.Sprintf("pod %s (uid %s) not found", ref.Name, ref.UID)
	}
	if !slices.ContainsFunc(pod.Status.PodIPs, func(ip v1.PodIP) bool { return ip.IP == addr }) && pod.Status.PodIP != addr {
		// A terminating instance may have lost its IP in status while
		// its EndpointSlice still lists it: reported at the address it
		// was found an instance with, as a deleted one is, so the report
		// drops it only after the EndpointSlice does.
		if p.instances.Known(ref.UID, key.Namespace, ref.Name, addr) {
			return ""
		}
		return fmt.Sprintf("address %s is not pod %s's", addr, pod.Name)
	}
	var sts *appsv1.StatefulSet
	if c := metav1.GetControllerOfNoCopy(pod); c != nil && c.Kind == "StatefulSet" && p.StatefulSets != nil {
		if s, err := p.StatefulSets.StatefulSets(key.Namespace).Get(c.Name); err == nil && s.Labels[fleetv1.LabelSet] == key.Name {
			sp := &fleetv1.SubsetPlacement{}
			if p.Placements != nil && p.Placements.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: s.Name}, sp) == nil &&
				wiring.NotOwned(sp, s) == "" {
				o, ok := ownership.OrdinalOfName(s.Name, pod.Name)
				if ok && (o < sp.Spec.OrdinalStart || int64(o) >= int64(sp.Spec.OrdinalStart)+int64(sp.Spec.OrdinalBlockSizeOrDefault())) {
					return fmt.Sprintf("ordinal %d is outside placement %s's block [%d, %d)", o, sp.Name, sp.Spec.OrdinalStart,
						int64(sp.Spec.OrdinalStart)+int64(sp.Spec.OrdinalBlockSizeOrDefault()))
				}
				sts = s
			}
		}
	}
	if why := p.instances.Check(sts, pod); why != "" {
		if sts == nil {
			return "pod " + pod.Name + " is not controlled by the delivered StatefulSet of a placement of " + key.Name + ": " + why
		}
		return why
	}
	return ""
}
