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

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
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

func init() {
	legacyregistry.MustRegister(publishes)
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

	queue placementqueue.Queue
	mu    sync.Mutex
	// known are the FleetSets (namespace/name) published and the endpoints
	// last written; a key is dropped once its report is deleted.
	known map[types.NamespacedName][]discoveryv1.Endpoint
}

// Run publishes the EndpointSlices of SliceSelector in d.Client's cluster
// (an informer of its own, for this leader term) to hub as cluster until
// ctx is done; it returns an error when the informer's handler cannot be
// registered or its cache never syncs.
func Run(ctx context.Context, d wiring.Deps, hub kubernetes.Interface, cluster string, resync time.Duration) error {
	logger := klog.FromContext(ctx).WithName("fleet-dns")
	ctx = klog.NewContext(ctx, logger)
	factory := wiring.NewLabelledFactory(d.Client, SliceSelector)
	slices := factory.Discovery().V1().EndpointSlices()
	p := &Publisher{Cluster: cluster, Slices: slices.Lister(), Hub: hub, Resync: resync}
	var hs wiring.Handlers
	if err := hs.Add(slices.Informer(), p.SliceHandler()); err != nil {
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
	for _, sl := range all {
		if k, ok := fleetSetOf(sl); ok {
			keys = append(keys, k)
		}
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
	want := Report(p.Cluster, key.Namespace, key.Name, local)
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
// by name. cluster is the member's cluster namespace on the hub.
func Report(cluster, namespace, name string, local []*discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
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
			if addr == "" {
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
