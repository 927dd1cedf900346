package ordinaltarget

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func resyncLease(renewed time.Time, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("fleetset-hub"),
			RenewTime:            &metav1.MicroTime{Time: renewed},
			LeaseDurationSeconds: ptr.To(seconds),
		},
	}
}

// readers returns an in-memory reader holding objs.
func reader(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func TestLeaseFence(t *testing.T) {
	l := resyncLease(t0, 5)
	expiry := t0.Add(5 * time.Second)
	for _, tc := range []struct {
		name       string
		lease      *coordinationv1.Lease
		now        time.Time
		wantFenced bool
		wantReason string
		wantExpiry time.Time
	}{
		{"fresh", l, t0.Add(time.Second), false, "", expiry},
		{"at the expiry instant: not yet", l, expiry, false, "", expiry},
		{"just past the expiry", l, expiry.Add(time.Microsecond), true, "fenced: Lease fleetset-system/fleetset-resync expired at 2026-03-04T05:06:12Z", expiry},
		{"no renewTime", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](5)}}, t0, true,
			"fenced: Lease fleetset-system/fleetset-resync has no renewTime or leaseDurationSeconds", time.Time{}},
		{"no duration", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t0}}}, t0, true,
			"fenced: Lease fleetset-system/fleetset-resync has no renewTime or leaseDurationSeconds", time.Time{}},
	} {
		fenced, reason, exp := LeaseFence(tc.lease, tc.now)
		if fenced != tc.wantFenced || reason != tc.wantReason || !exp.Equal(tc.wantExpiry) {
			t.Errorf("%s: LeaseFence = %v %q %v, want %v %q %v", tc.name, fenced, reason, exp, tc.wantFenced, tc.wantReason, tc.wantExpiry)
		}
	}
	r := NewResolver(reader(t), nil)
	if fenced, reason, _ := r.Fenced(t0); !fenced || reason != "fenced: Lease fleetset-system/fleetset-resync not found" {
		t.Errorf("missing lease: Fenced = %v %q", fenced, reason)
	}
	r = NewResolver(reader(t, resyncLease(t0, 5)), nil)
	if fenced, reason, exp := r.Fenced(t0.Add(time.Second)); fenced || !exp.Equal(expiry) {
		t.Errorf("fresh lease: Fenced = %v %q %v", fenced, reason, exp)
	}
}

// fencerFixture: in namespace db, placements "slow" (fencing, grace 10s),
// "fast" (fencing, grace 0) and "open" (no fencing), and their pods.
type fencerFixture struct {
	cs   *k8sfake.Clientset
	pods corelisters.PodLister
	now  time.Time
}

func placement(name string, fencing *fleetv1.PlacementFencing) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name},
		Spec: fleetv1.SubsetPlacementSpec{Fencing: fencing}}
}

func runningPod(ns, name, placement string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
			Labels: map[string]string{fleetv1.LabelPlacement: placement}},
		Spec:   v1.PodSpec{NodeName: "node-1"},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func newFencerFixture(t *testing.T) *fencerFixture {
	t.Helper()
	pods := []*v1.Pod{
		runningPod("db", "slow-0", "slow"),
		runningPod("db", "slow-1", "slow", func(p *v1.Pod) { p.Spec.NodeName = ""; p.Status.Phase = v1.PodPending }),
		runningPod("db", "slow-2", "slow", func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }),
		runningPod("db", "slow-3", "slow", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }),
		runningPod("db", "fast-0", "fast"),
		runningPod("db", "open-0", "open"),
		runningPod("db", "plain-0", "", func(p *v1.Pod) { p.Labels = nil }),
		// Same placement name, other namespace: that namespace has no placement.
		runningPod("other", "fast-0", "fast"),
	}
	// Like the scheduler's pod informer: no namespace index.
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	objs := []runtime.Object{
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "data-slow-0",
			Labels: map[string]string{fleetv1.LabelPlacement: "slow"}}},
	}
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, p)
	}
	return &fencerFixture{cs: k8sfake.NewClientset(objs...), pods: corelisters.NewPodLister(indexer)}
}

func (fx *fencerFixture) fencer(cached, live client.Reader) *Fencer {
	return NewFencer(NewResolver(cached, live), fx.pods, fx.cs, func() time.Time { return fx.now })
}

// deletes returns the pods deleted through the clientset, with the UID
// precondition each carried, and fails on any other write.
func (fx *fencerFixture) deletes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range fx.cs.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		d, ok := a.(k8stesting.DeleteAction)
		if !ok || a.GetResource().Resource != "pods" {
			t.Errorf("unexpected write %s %s", a.GetVerb(), a.GetResource().Resource)
			continue
		}
		uid := ""
		if pre := d.GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil {
			uid = string(*pre.UID)
		}
		out = append(out, d.GetNamespace()+"/"+d.GetName()+"@"+uid)
	}
	fx.cs.ClearActions()
	sort.Strings(out)
	return out
}

func sweep(t *testing.T, f *Fencer) int {
	t.Helper()
	n, err := f.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFencerExpiredLease(t *testing.T) {
	fx := newFencerFixture(t)
	placements := []client.Object{
		placement("slow", &fleetv1.PlacementFencing{GraceSeconds: 10}),
		placement("fast", &fleetv1.PlacementFencing{}),
		placement("open", nil),
	}
	expiry := t0.Add(5 * time.Second)
	f := fx.fencer(reader(t, append(placements, resyncLease(t0, 5))...), nil)

	for _, now := range []time.Time{t0, t0.Add(time.Second), expiry} {
		fx.now = now
		if n := sweep(t, f); n != 0 {
			t.Fatalf("fresh lease at %s: deleted %d pods", now, n)
		}
	}
	if d := fx.deletes(t); len(d) != 0 {
		t.Fatalf("fresh lease: deletes %v", d)
	}

	// Expired: grace 0 goes at once, grace 10s not yet.
	fx.now = expiry.Add(time.Millisecond)
	sweep(t, f)
	if diff := cmp.Diff([]string{"db/fast-0@uid-db-fast-0"}, fx.deletes(t)); diff != "" {
		t.Errorf("just expired: deletes (-want,+got):\n%s", diff)
	}
	fx.now = expiry.Add(9 * time.Second)
	sweep(t, f)
	if d := fx.deletes(t); len(d) != 1 || d[0] != "db/fast-0@uid-db-fast-0" { // the lister still holds fast-0; its Delete is NotFound
		t.Errorf("9s after expiry: deletes %v, want only the repeated fast-0", d)
	}
	fx.now = expiry.Add(10 * time.Second)
	sweep(t, f)
	got := fx.deletes(t)
	if diff := cmp.Diff([]string{"db/fast-0@uid-db-fast-0", "db/slow-0@uid-db-slow-0"}, got); diff != "" {
		t.Errorf("10s after expiry: deletes (-want,+got):\n%s", diff)
	}
	// Never: unbound, terminating, finished, unfenced or unlabelled pods, the
	// other namespace, the PVC.
	if _, err := fx.cs.CoreV1().PersistentVolumeClaims("db").Get(context.Background(), "data-slow-0", metav1.GetOptions{}); err != nil {
		t.Errorf("PVC: %v", err)
	}
	for _, name := range []string{"slow-1", "slow-2", "slow-3", "open-0", "plain-0"} {
		if _, err := fx.cs.CoreV1().Pods("db").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod db/%s: %v", name, err)
		}
	}
	if _, err := fx.cs.CoreV1().Pods("other").Get(context.Background(), "fast-0", metav1.GetOptions{}); err != nil {
		t.Errorf("pod other/fast-0: %v", err)
	}
}

// TestFencerMissingLease: a missing lease fences (also right after the
// cluster joined); the grace counts from the first sweep that saw it missing.
func TestFencerMissingLease(t *testing.T) {
	fx := newFencerFixture(t)
	f := fx.fencer(reader(t, placement("slow", &fleetv1.PlacementFencing{GraceSeconds: 10}), placement("open", nil)), nil)
	fx.now = t0
	if n := sweep(t, f); n != 0 {
		t.Errorf("first sweep without a lease deleted %d pods, grace is 10s", n)
	}
	fx.now = t0.Add(9 * time.Second)
	if n := sweep(t, f); n != 0 {
		t.Errorf("9s without a lease: deleted %d pods", n)
	}
	fx.now = t0.Add(10 * time.Second)
	sweep(t, f)
	if diff := cmp.Diff([]string{"db/slow-0@uid-db-slow-0"}, fx.deletes(t)); diff != "" {
		t.Errorf("10s without a lease: deletes (-want,+got):\n%s", diff)
	}
}

// TestFencerConfirmsOnTheAPIServer: the cache says expired but the apiserver
// holds a renewal the cache has not seen yet: nothing is deleted.
func TestFencerConfirmsOnTheAPIServer(t *testing.T) {
	fx := newFencerFixture(t)
	sp := placement("fast", &fleetv1.PlacementFencing{})
	fx.now = t0.Add(time.Minute)
	f := fx.fencer(reader(t, sp, resyncLease(t0, 5)), reader(t, sp, resyncLease(fx.now, 5)))
	if n := sweep(t, f); n != 0 {
		t.Errorf("renewed on the apiserver: deleted %d pods", n)
	}
	// Live renewed 25s ago and expired again 20s ago: a grace of 30s from
	// the cache's expiry (55s ago) would be over, from the live one it is not.
	slow := placement("slow", &fleetv1.PlacementFencing{GraceSeconds: 30})
	f = fx.fencer(reader(t, slow, resyncLease(t0, 5)), reader(t, slow, resyncLease(fx.now.Add(-25*time.Second), 5)))
	if n := sweep(t, f); n != 0 {
		t.Errorf("live expiry within grace: deleted %d pods", n)
	}
	if d := fx.deletes(t); len(d) != 0 {
		t.Errorf("deletes %v", d)
	}
}
