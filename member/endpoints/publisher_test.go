package endpoints

import (
	"context"
	"errors"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
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

func newPublisher(t *testing.T, local ...*discoveryv1.EndpointSlice) (*Publisher, *cache.Indexer, *fake.Clientset) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, sl := range local {
		if err := idx.Add(sl); err != nil {
			t.Fatal(err)
		}
	}
	hub := fake.NewClientset()
	p := &Publisher{Cluster: "east", Slices: discoverylisters.NewEndpointSliceLister(idx), Hub: hub, Resync: time.Minute}
	p.init()
	return p, &idx, hub
}

var key = types.NamespacedName{Namespace: "db", Name: "mydb"}

// TestPublishesLocalInstances: the report lists what the EndpointSlice
// controller's slices of the FleetSet list with a hostname, once each,
// and nothing of another FleetSet's slices or of the fleet DNS slices the
// hub delivers here.
func TestPublishesLocalInstances(t *testing.T) {
	delivered := slice("mydb-fleet-0", "mydb", ep("mydb-west-1000", "10.2.0.1", true, false))
	delivered.Labels[discoveryv1.LabelManagedBy] = "fleetset-hub"
	p, _, hub := newPublisher(t,
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
		delivered)
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
	p, idx, hub := newPublisher(t, slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false)))
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
	p, _, hub := newPublisher(t)
	left := Report("east", "db", "mydb", []*discoveryv1.EndpointSlice{slice("mydb-a", "mydb", ep("mydb-east-0", "10.1.0.1", true, false))})
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
