package fence

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/contact"
)

// TestFenceCoversOrphansAndLabelledPods: once the grace is over, the fence
// deletes the running pods of the placement's StatefulSet, the pods a
// --cascade=orphan delete of it left behind (no controller, the protected
// placement label), and hand-made pods carrying the label; it spares the
// pods of another placement or controller, unscheduled pods and pods
// already terminating.
func TestFenceCoversOrphansAndLabelledPods(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east",
		Annotations: map[string]string{fleetv1.AnnotationFencedEpoch: "3"}},
		Spec: fleetv1.SubsetPlacementSpec{Fencing: &fleetv1.PlacementFencing{GraceSeconds: 10, Epoch: 3}}}
	pod := func(name, owner, placement string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, Controller: ptr.To(true)}}
		}
		if placement != "" {
			p.Labels = map[string]string{fleetv1.LabelPlacement: placement}
		}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("db-east-0", "db-east", "db-east"),    // delivered
		pod("db-east-1", "", "db-east"),           // orphaned by a --cascade=orphan delete
		pod("copy-of-east-0", "", "db-east"),      // hand-made, labelled
		pod("db-west-1000", "db-west", "db-west"), // another placement
		pod("tool-0", "tool", ""),                 // another controller
		pod("db-east-2", "db-east", "db-east", func(p *corev1.Pod) { p.Spec.NodeName = "" }),
		pod("db-east-3", "", "db-east", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var objs []runtime.Object
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, p)
	}
	kube := kubefake.NewSimpleClientset(objs...)
	f := &Fencer{Placements: fake.NewClientBuilder().WithScheme(scheme).WithObjects(sp).Build(),
		Writer: fake.NewClientBuilder().WithScheme(scheme).WithObjects(sp).Build(),
		Pods:   corelisters.NewPodLister(idx), Client: kube}
	now := time.Now()
	// Within the grace: nothing is deleted.
	if n, err := f.fence(t.Context(), Verdict{State: Fenced}, now.Add(-5*time.Second), now, []*fleetv1.SubsetPlacement{sp}); err != nil || n != 0 {
		t.Fatalf("within the grace: deleted %d, %v; want 0", n, err)
	}
	n, err := f.fence(t.Context(), Verdict{State: Fenced}, now.Add(-11*time.Second), now, []*fleetv1.SubsetPlacement{sp})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range kube.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.(interface{ GetName() string }).GetName())
		}
	}
	slices.Sort(deleted)
	want := []string{"copy-of-east-0", "db-east-0", "db-east-1"}
	if n != len(want) || !slices.Equal(deleted, want) {
		t.Errorf("fence deleted %d pods %v, want %v", n, deleted, want)
	}
}

// TestLiftBoundsHungConfirmations: hub confirmations that hang (a silent
// partition that began while the member was still in contact) share one
// deadline per sweep, ConfirmTimeout: a sweep over many fenced placements
// returns after it, not after one hung request per placement, and lifts
// nothing.
func TestLiftBoundsHungConfirmations(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var fencing []*fleetv1.SubsetPlacement
	for _, name := range []string{"a", "b", "c", "d"} {
		fencing = append(fencing, &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name,
			Annotations: map[string]string{fleetv1.AnnotationFencedEpoch: "3"}},
			Spec: fleetv1.SubsetPlacementSpec{Fencing: &fleetv1.PlacementFencing{Epoch: 3}}})
	}
	asked := 0
	mon := contact.NewMonitor(clock.RealClock{}, time.Minute)
	mon.Attempt(time.Now(), nil)
	f := &Fencer{ConfirmTimeout: 200 * time.Millisecond, Guard: &Guard{Monitor: mon},
		Confirm: func(ctx context.Context, _ *fleetv1.SubsetPlacement, _ int64, _ time.Time) (bool, error) {
			asked++
			<-ctx.Done() // the hub never answers
			return false, ctx.Err()
		}}
	start := time.Now()
	err := f.lift(t.Context(), start.Add(time.Hour), fencing)
	if took := time.Since(start); took > time.Second {
		t.Errorf("lift over %d hung confirmations took %s, want about ConfirmTimeout (200ms)", len(fencing), took)
	}
	if err == nil {
		t.Error("lift: nil error, want the confirmation's")
	}
	if asked != 1 {
		t.Errorf("confirmations asked: %d, want 1 (the others wait for the next sweep)", asked)
	}
}
