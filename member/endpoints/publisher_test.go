package endpoints

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/internal/ownership"
)

// ep is an endpoint of the EndpointSlice controller for a StatefulSet pod
// (hostname = the pod's name; "" for none), at ip.
func ep(hostname, ip string, serving, terminating bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses: []string{ip},
		Conditions: discoveryv1.EndpointConditions{
			Ready: ptr.To(true), Serving: ptr.To(serving), Terminating: ptr.To(terminating),
		},
	}
	if hostname != "" {
		e.Hostname = ptr.To(hostname)
		e.TargetRef = &v1.ObjectReference{Kind: "Pod", Namespace: "db", Name: hostname, UID: types.UID("pod-" + hostname)}
	}
	return e
}

// slice is an EndpointSlice of namespace db, labelled as the EndpointSlice
// controller labels those of the governing Service of FleetSet set.
func slice(name, set string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, Labels: map[string]string{
			fleetv1.LabelSet: set, discoveryv1.LabelManagedBy: controllerManagedBy, discoveryv1.LabelServiceName: set}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

// newPublisher returns a Publisher over local, whose pods, StatefulSets
// and placements are those the StatefulSet controller and the hub would
// have made for every endpoint with a hostname <statefulset>-<ordinal>
// (the pod, UID pod-<hostname>, with every address the endpoints give it,
// controlled by its StatefulSet; the StatefulSet and placement labelled
// with the slice's FleetSet), plus extra objects (forged ones).
func newPublisher(t *testing.T, local []*discoveryv1.EndpointSlice, extra ...runtime.Object) (*Publisher, *cache.Indexer, *fake.Clientset, cache.Indexer) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	stsIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	placements := ctrlfake.NewClientBuilder().WithScheme(scheme)
	pods := map[string]*v1.Pod{}
	sets := map[string]bool{}
	for _, sl := range local {
		if err := idx.Add(sl); err != nil {
			t.Fatal(err)
		}
		for _, e := range sl.Endpoints {
			host := ptr.Deref(e.Hostname, "")
			i := strings.LastIndexByte(host, '-')
			if i < 0 || sl.Labels[discoveryv1.LabelManagedBy] != controllerManagedBy || strings.HasPrefix(sl.Name, "forged") ||
				e.TargetRef == nil || e.TargetRef.Name != host {
				continue
			}
			stsName := host[:i]
			p := pods[host]
			if p == nil {
				p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: host, UID: types.UID("pod-" + host),
					Labels:          map[string]string{fleetv1.LabelSet: sl.Labels[fleetv1.LabelSet], fleetv1.LabelPodIndex: host[i+1:]},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: stsName, UID: types.UID("sts-" + stsName), Controller: ptr.To(true)}}}}
				pods[host] = p
			}
			p.Status.PodIPs = append(p.Status.PodIPs, v1.PodIP{IP: e.Addresses[0]})
			if !sets[stsName] {
				sets[stsName] = true
				l := map[string]string{fleetv1.LabelSet: sl.Labels[fleetv1.LabelSet]}
				_ = stsIdx.Add(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: stsName, UID: types.UID("sts-" + stsName), Labels: l}})
				placements.WithObjects(&fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: stsName, Labels: l}})
			}
		}
	}
	for _, p := range pods {
		_ = podIdx.Add(p)
	}
	for _, o := range extra {
		switch o := o.(type) {
		case *v1.Pod:
			_ = podIdx.Add(o)
		case *appsv1.StatefulSet:
			_ = stsIdx.Add(o)
		case *fleetv1.SubsetPlacement:
			placements.WithObjects(o)
		}
	}
	hub := fake.NewClientset()
	p := &Publisher{Cluster: "east", Slices: discoverylisters.NewEndpointSliceLister(idx), Hub: hub, Resync: time.Minute,
		Pods: corelisters.NewPodLister(podIdx), StatefulSets: appslisters.NewStatefulSetLister(stsIdx), Placements: placements.Build()}
	p.init()
	return p, &idx, hub, podIdx
}

var key = types.NamespacedName{Namespace: "db", Name: "mydb"}

// TestPublishesLocalInstances: the report lists what the EndpointSlice
// controller's slices of the FleetSet list with a hostname, once each,
// and nothing of another FleetSet's slices or of the fleet DNS slices the
// hub delivers here.
func TestPublishesLocalInstances(t *testing.T) {
	delivered := slice("mydb-fleet-0", "mydb", ep("mydb-west-1000", "10.2.0.1", true, false))
	delivered.Labels[discoveryv1.LabelManagedBy] = "fleetset-hub"
	p, _, hub, _ := newPublisher(t, []*discoveryv1.EndpointSlice{
		slice("mydb-b", "mydb",
			ep("mydb-east-1", "10.1.0.2", false, false),
			ep("mydb-east-0", "10.1.0.99", true, false), // also in mydb-a: the first slice by name wins
			ep("mydb-east-5", "10.1.0.6", true, false)), // also in mydb-a, terminating there: the live one wins
		slice("mydb-a", "mydb",
			ep("mydb-east-0", "10.1.0.1", true, false),
			ep("", "10.1.0.5", true, false), // no hostname: not the governing Service's
			ep("mydb-east-3", "10.1.0.4", true, true),
			ep("mydb-east-5", "10.1.0.55", true, true)),
		slice("web-a", "web", ep("web-east-0", "10.1.0.9", true, false)),
		delivered})
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	s, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels[fleetv1.LabelMemberEndpoints] != "true" || s.Labels[fleetv1.LabelOwnerName] != "mydb" || s.Labels[fleetv1.LabelOwnerNamespace] != "db" {
		t.Errorf("labels %v", s.Labels)
	}
	type ep struct {
		host, ip             string
		serving, terminating bool
	}
	var got []ep
	for _, e := range s.Endpoints {
		got = append(got, ep{*e.Hostname, e.Addresses[0], *e.Conditions.Serving, *e.Conditions.Terminating})
	}
	want := []ep{{"mydb-east-0", "10.1.0.1", true, false}, {"mydb-east-1", "10.1.0.2", false, false}, {"mydb-east-3", "10.1.0.4", true, true},
		{"mydb-east-5", "10.1.0.6", true, false}}
	if len(got) != len(want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("endpoint %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Unchanged slices: no second write.
	writes := len(hub.Actions())
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if n := len(hub.Actions()); n != writes {
		t.Errorf("a sync with nothing changed made %d requests to the hub", n-writes)
	}
}

// TestHubSilenceKeepsReports: while the hub refuses every request, the
// publisher deletes nothing and reports the failure to retry; it deletes
// the report only once no EndpointSlice here lists an instance of the
// FleetSet and the hub answers.
func TestHubSilenceKeepsReports(t *testing.T) {
	p, idx, hub, _ := newPublisher(t, []*discoveryv1.EndpointSlice{slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false),
		ep("mydb-east-0", "10.1.0.7", true, false))}) // the pod has both addresses
	(*idx).Update(slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false)))
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	hub.PrependReactor("*", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("hub unreachable")
	})
	(*idx).Update(slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.7", true, false)))
	if err := p.Sync(t.Context(), key); err == nil {
		t.Error("a sync the hub refused returned no error: nothing would retry it")
	}
	(*idx).Update(slice("mydb-a", "mydb"))
	if err := p.Sync(context.Background(), key); err == nil {
		t.Error("a delete the hub refused returned no error")
	}
	hub.ReactionChain = hub.ReactionChain[1:]
	if _, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{}); err != nil {
		t.Errorf("the report is gone while the hub was unreachable: %v", err)
	}
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{}); err == nil {
		t.Error("no EndpointSlice here lists an instance of mydb and the hub answers: the report should be deleted")
	}
}

// TestLeftoverReportIsDeleted: a report on the hub for a FleetSet with no
// EndpointSlice here (its last instance left while no publisher ran, e.g.
// between two leader terms) is deleted at the start of a run: the hub
// would otherwise keep withholding that instance's record from this
// cluster.
func TestLeftoverReportIsDeleted(t *testing.T) {
	p, _, hub, _ := newPublisher(t, nil)
	left := Report("east", "db", "mydb", []*discoveryv1.EndpointSlice{slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false))},
		func(discoveryv1.Endpoint, string) bool { return true })
	if _, err := hub.DiscoveryV1().EndpointSlices("east").Create(t.Context(), left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.enqueueHubReports(t.Context())
	if p.queue.Len() != 1 {
		t.Fatalf("%d FleetSets queued, want mydb's", p.queue.Len())
	}
	k, _ := p.queue.Get()
	if err := p.Sync(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	p.queue.Done(k)
	if _, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{}); err == nil {
		t.Error("the leftover report is still on the hub")
	}
}

// TestForgedEndpointsAreNotReported (issue 48): the EndpointSlice
// controller lists whatever pods a Service selects with the hostname they
// claim; the report lists only the endpoints of the FleetSet's instances.
// Left out: a bare pod named and hostnamed as another cluster's instance
// (no owner), a pod naming the StatefulSet with another UID, an endpoint
// whose hostname is not its pod's name, an address that is not the pod's,
// an owned pod outside the placement's ordinal block, and an instance of
// another FleetSet listed in this one's slices. A real instance deleted
// while the slice still lists it stays reported (it was found to be an
// instance); a forged pod is never remembered.
func TestForgedEndpointsAreNotReported(t *testing.T) {
	forgedEP := func(host, pod, uid, ip string) discoveryv1.Endpoint {
		e := ep(host, ip, true, false)
		e.TargetRef = &v1.ObjectReference{Kind: "Pod", Namespace: "db", Name: pod, UID: types.UID(uid)}
		return e
	}
	forgedPod := func(name, uid, ip string, owner *metav1.OwnerReference) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: types.UID(uid),
			Labels: map[string]string{fleetv1.LabelSet: "mydb", fleetv1.LabelPlacement: "mydb-east", fleetv1.LabelPodIndex: name[strings.LastIndexByte(name, '-')+1:]}},
			Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}}}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return p
	}
	ref := func(name, uid string) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: types.UID(uid), Controller: ptr.To(true)}
	}
	p, idx, hub, podIdx := newPublisher(t, []*discoveryv1.EndpointSlice{
		slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false)),
		slice("web-a", "web", ep("web-east-0", "10.1.0.9", true, false)),
		slice("forged-a", "mydb",
			forgedEP("mydb-west-1000", "mydb-west-1000", "bare", "10.1.0.50"),
			forgedEP("mydb-east-1", "mydb-east-1", "wrong-owner", "10.1.0.51"),
			forgedEP("mydb-west-1001", "mydb-east-0", "pod-mydb-east-0", "10.1.0.1"),
			forgedEP("mydb-east-0", "mydb-east-0", "pod-mydb-east-0", "10.9.9.9"),
			forgedEP("mydb-east-1500", "mydb-east-1500", "beyond", "10.1.0.52"),
			forgedEP("web-east-0", "web-east-0", "pod-web-east-0", "10.1.0.9"),
			ep("", "10.1.0.53", true, false)),
	},
		forgedPod("mydb-west-1000", "bare", "10.1.0.50", nil),
		forgedPod("mydb-east-1", "wrong-owner", "10.1.0.51", ref("mydb-east", "fake")),
		forgedPod("mydb-east-1500", "beyond", "10.1.0.52", ref("mydb-east", "sts-mydb-east")))
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	reported := func() []string {
		s, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.Endpoints {
			got = append(got, *e.Hostname+"="+e.Addresses[0])
		}
		return got
	}
	if got := reported(); len(got) != 1 || got[0] != "mydb-east-0=10.1.0.1" {
		t.Fatalf("reported %v, want only the instance mydb-east-0=10.1.0.1", got)
	}
	// The instance's pod terminates and loses its IP in status while the
	// slice still lists it at its address: reported still.
	obj, ok, _ := podIdx.GetByKey("db/mydb-east-0")
	if !ok {
		t.Fatal("no pod db/mydb-east-0 in the pod index")
	}
	term := obj.(*v1.Pod).DeepCopy()
	term.DeletionTimestamp = ptr.To(metav1.Now())
	term.Status.PodIP, term.Status.PodIPs = "", nil
	if err := podIdx.Update(term); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := reported(); len(got) != 1 || got[0] != "mydb-east-0=10.1.0.1" {
		t.Fatalf("with the instance terminating without an IP, reported %v, want mydb-east-0=10.1.0.1 (the slice lists it still)", got)
	}
	// The instance's pod is deleted; the slices still list it: reported
	// until they drop it. The forged ones are not, whatever happens.
	for _, name := range []string{"mydb-east-0", "mydb-west-1000", "mydb-east-1"} {
		obj, ok, _ := podIdx.GetByKey("db/" + name)
		if ok {
			_ = podIdx.Delete(obj)
		}
	}
	p.enqueueAll(t.Context())
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := reported(); len(got) != 1 || got[0] != "mydb-east-0=10.1.0.1" {
		t.Fatalf("after the pods' deletion, reported %v, want mydb-east-0=10.1.0.1 (the slice lists it still)", got)
	}
	_ = (*idx).Delete(slice("mydb-a", "mydb"))
	p.enqueueAll(t.Context())
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{}); err == nil {
		t.Errorf("a report is on the hub with no instance listed here: %v", reported())
	}
}

// TestAdmittedEndpointStaysWhileListed: an instance's endpoint, once
// admitted, is reported for as long as an EndpointSlice lists it with the
// same pod, address and hostname, even when nothing else vouches for it
// any more (its pod gone and forgotten by the instance memory, as a new
// sweep or a re-created StatefulSet may leave it); the report drops it
// only after the EndpointSlice does, the order fleet DNS relies on.
func TestAdmittedEndpointStaysWhileListed(t *testing.T) {
	p, idx, hub, podIdx := newPublisher(t, []*discoveryv1.EndpointSlice{
		slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false)),
	})
	report := func() []string {
		s, err := hub.DiscoveryV1().EndpointSlices("east").Get(t.Context(), "db.mydb", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.Endpoints {
			got = append(got, *e.Hostname+"="+e.Addresses[0])
		}
		return got
	}
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := report(); len(got) != 1 || got[0] != "mydb-east-0=10.1.0.1" {
		t.Fatalf("reported %v, want mydb-east-0=10.1.0.1", got)
	}
	obj, ok, _ := podIdx.GetByKey("db/mydb-east-0")
	if !ok {
		t.Fatal("no pod db/mydb-east-0")
	}
	_ = podIdx.Delete(obj)
	p.instances = ownership.Instances{}
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := report(); len(got) != 1 || got[0] != "mydb-east-0=10.1.0.1" {
		t.Fatalf("with the pod gone and forgotten, reported %v, want mydb-east-0=10.1.0.1 (the slice lists it still)", got)
	}
	_ = (*idx).Update(slice("mydb-a", "mydb"))
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if got := report(); got != nil {
		t.Errorf("after the slice dropped it, reported %v, want no report", got)
	}
}
