package endpoints

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func pod(name, ip string, ready bool, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, Labels: map[string]string{fleetv1.LabelSet: "mydb", fleetv1.LabelSubset: "east"}},
		Spec:       corev1.PodSpec{Hostname: name, Subdomain: "mydb"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	if ip != "" {
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

func newPublisher(t *testing.T, pods ...*corev1.Pod) (*Publisher, *cache.Indexer, *fake.Clientset) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	hub := fake.NewClientset()
	p := &Publisher{Cluster: "east", Pods: corelisters.NewPodLister(idx), Hub: hub, Resync: time.Minute}
	p.init()
	return p, &idx, hub
}

var key = types.NamespacedName{Namespace: "db", Name: "mydb"}

func TestPublishesLocalInstances(t *testing.T) {
	other := pod("web-east-0", "10.1.0.9", true, false)
	other.Labels[fleetv1.LabelSet] = "web"
	p, _, hub := newPublisher(t,
		pod("mydb-east-1", "10.1.0.2", false, false),
		pod("mydb-east-0", "10.1.0.1", true, false),
		pod("mydb-east-2", "", false, false), // no IP yet
		pod("mydb-east-3", "10.1.0.4", true, true),
		other)
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
	want := []ep{{"mydb-east-0", "10.1.0.1", true, false}, {"mydb-east-1", "10.1.0.2", false, false}, {"mydb-east-3", "10.1.0.4", true, true}}
	if len(got) != len(want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("endpoint %d = %v, want %v", i, got[i], want[i])
		}
	}
	// Unchanged pods: no second write.
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
// the report only once no pod of the FleetSet runs here and the hub
// answers.
func TestHubSilenceKeepsReports(t *testing.T) {
	p, idx, hub := newPublisher(t, pod("mydb-east-0", "10.1.0.1", true, false))
	if err := p.Sync(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	hub.PrependReactor("*", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("hub unreachable")
	})
	(*idx).Update(pod("mydb-east-0", "10.1.0.7", true, false))
	if err := p.Sync(t.Context(), key); err == nil {
		t.Error("a sync the hub refused returned no error: nothing would retry it")
	}
	(*idx).Delete(pod("mydb-east-0", "", true, false))
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
		t.Error("no pod of mydb runs here and the hub answers: the report should be deleted")
	}
}
