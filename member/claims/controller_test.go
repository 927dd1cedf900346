package claims

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

const ns = "ns"

var owner = map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "fs-uid"}

func placement(storage string) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", UID: "sp-uid", Generation: 1, Labels: owner},
		Spec:       fleetv1.SubsetPlacementSpec{OrdinalStart: 5, ClaimStorage: []fleetv1.ClaimStorage{{Name: "data", Storage: resource.MustParse(storage)}}},
	}
}

func statefulSet(storage string, labels map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", UID: "sts-uid", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), Ordinals: &appsv1.StatefulSetOrdinals{Start: 5},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{
				claim("data", storage, "fast", ""),
				claim("logs", "1Gi", "fast", ""), // not in claimStorage: never touched
			},
		},
	}
}

func claim(name, storage, class string, phase v1.PersistentVolumeClaimPhase) v1.PersistentVolumeClaim {
	return v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(storage)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: phase},
	}
}

func class(name string, expand bool) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "x", AllowVolumeExpansion: ptr.To(expand)}
}

type rig struct {
	c   *Controller
	cs  *fake.Clientset
	rec *events.FakeRecorder
}

func newRig(t *testing.T, sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, objs ...runtime.Object) *rig {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	placements := crfake.NewClientBuilder().WithScheme(scheme).WithObjects(sp).Build()
	idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if sts != nil {
		_ = idx.Add(sts)
		objs = append(objs, sts)
	}
	cs := fake.NewSimpleClientset(objs...)
	rec := events.NewFakeRecorder(20)
	return &rig{c: New(placements, appslisters.NewStatefulSetLister(idx), cs, rec, 0), cs: cs, rec: rec}
}

func (r *rig) sync(t *testing.T) {
	t.Helper()
	if err := r.c.Sync(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}); err != nil {
		t.Fatal(err)
	}
}

// events drains the recorded events.
func (r *rig) events() []string {
	var out []string
	for {
		select {
		case e := <-r.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// writes lists the patches and deletes made, as "verb resource/name".
func (r *rig) writes() []string {
	var out []string
	for _, a := range r.cs.Actions() {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			out = append(out, "patch "+a.GetResource().Resource+"/"+a.GetName()+" "+string(a.GetPatch()))
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetResource().Resource+"/"+a.GetName())
		}
	}
	return out
}

func (r *rig) storage(t *testing.T, name string) string {
	t.Helper()
	pvc, err := r.cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	return q.String()
}

func hasEvent(evs []string, prefix string) bool {
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func TestGrowExpandsClaimsThenReplaces(t *testing.T) {
	pvcs := []v1.PersistentVolumeClaim{
		claim("data-db-east-5", "1Gi", "fast", v1.ClaimBound),
		claim("data-db-east-6", "1Gi", "fast", v1.ClaimBound),
		claim("data-db-east-50", "3Gi", "fast", v1.ClaimBound), // already larger: left
		claim("data-db-east-4", "1Gi", "fast", v1.ClaimBound),  // below ordinals.start
		claim("data-db-east-06", "1Gi", "fast", v1.ClaimBound), // not a canonical ordinal
		claim("data-db-east-x-5", "1Gi", "fast", v1.ClaimBound),
		claim("data-db-east-1005", "1Gi", "fast", v1.ClaimBound), // past the block
		claim("logs-db-east-5", "1Gi", "fast", v1.ClaimBound),    // template not in claimStorage
	}
	objs := []runtime.Object{class("fast", true)}
	for i := range pvcs {
		objs = append(objs, &pvcs[i])
	}
	r := newRig(t, placement("2Gi"), statefulSet("1Gi", owner), objs...)
	r.sync(t)
	want := []string{
		`patch persistentvolumeclaims/data-db-east-5 {"metadata":{"uid":"data-db-east-5-uid","resourceVersion":"7"},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`,
		`patch persistentvolumeclaims/data-db-east-6 {"metadata":{"uid":"data-db-east-6-uid","resourceVersion":"7"},"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`,
		`delete statefulsets/db-east`,
	}
	if got := r.writes(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range r.cs.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			o := d.GetDeleteOptions()
			if o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationOrphan || o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != "sts-uid" {
				t.Errorf("delete options %+v: want Orphan with UID precondition sts-uid", o)
			}
		}
	}
	evs := r.events()
	if !hasEvent(evs, "Normal ClaimsExpanded") || !hasEvent(evs, "Normal StatefulSetReplaced") {
		t.Errorf("events %q", evs)
	}
}

func TestClassWithoutExpansionStops(t *testing.T) {
	pvc := claim("data-db-east-5", "1Gi", "slow", v1.ClaimBound)
	r := newRig(t, placement("2Gi"), statefulSet("1Gi", owner), class("slow", false), &pvc)
	r.sync(t)
	r.sync(t)
	if w := r.writes(); len(w) != 0 {
		t.Fatalf("writes %q, want none", w)
	}
	evs := r.events()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ClaimExpansionNotAllowed") || !strings.Contains(evs[0], "StorageClass slow of claim data-db-east-5") {
		t.Fatalf("events %q: want one ClaimExpansionNotAllowed naming the class", evs)
	}
}

func TestShrinkRefused(t *testing.T) {
	pvc := claim("data-db-east-5", "2Gi", "fast", v1.ClaimBound)
	r := newRig(t, placement("1Gi"), statefulSet("2Gi", owner), class("fast", true), &pvc)
	r.sync(t)
	if w := r.writes(); len(w) != 0 {
		t.Fatalf("writes %q, want none", w)
	}
	if evs := r.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning ClaimShrinkRefused") {
		t.Fatalf("events %q", evs)
	}
}

func TestNotOwnedUntouched(t *testing.T) {
	pvc := claim("data-db-east-5", "1Gi", "fast", v1.ClaimBound)
	for name, labels := range map[string]map[string]string{
		"no labels":   nil,
		"other owner": {fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "other"},
		"other set":   {fleetv1.LabelSet: "other"},
		// The placement carries the owner UID, the StatefulSet does not:
		// someone else's StatefulSet, never expanded nor replaced (the
		// claims controller used to call it owned; the updater did not).
		"no owner UID": {fleetv1.LabelSet: "db"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, placement("2Gi"), statefulSet("1Gi", labels), class("fast", true), pvc.DeepCopy())
			r.sync(t)
			if w := r.writes(); len(w) != 0 {
				t.Fatalf("writes %q, want none", w)
			}
			if evs := r.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning NotOwned") {
				t.Fatalf("events %q", evs)
			}
		})
	}
}

// An interrupted run: the StatefulSet already has the larger template, one
// claim is still small. It is expanded, the StatefulSet stays, and once all
// are done no further list is made.
func TestTemplateMatchesClaimsFinished(t *testing.T) {
	small := claim("data-db-east-6", "1Gi", "fast", v1.ClaimBound)
	big := claim("data-db-east-5", "2Gi", "fast", v1.ClaimBound)
	r := newRig(t, placement("2Gi"), statefulSet("2Gi", owner), class("fast", true), &small, &big)
	r.sync(t)
	if w := r.writes(); len(w) != 1 || !strings.HasPrefix(w[0], "patch persistentvolumeclaims/data-db-east-6") {
		t.Fatalf("writes %q", w)
	}
	if got := r.storage(t, "data-db-east-6"); got != "2Gi" {
		t.Fatalf("data-db-east-6 requests %s", got)
	}
	r.sync(t)
	n := len(r.cs.Actions())
	r.sync(t)
	if len(r.cs.Actions()) != n {
		t.Fatalf("a finished placement was checked again: %v", r.cs.Actions()[n:])
	}
}

// A claim that is not Bound cannot be resized: it is left (and retried),
// and the StatefulSet is replaced all the same.
func TestPendingClaimLeft(t *testing.T) {
	pending := claim("data-db-east-5", "1Gi", "fast", v1.ClaimPending)
	r := newRig(t, placement("2Gi"), statefulSet("1Gi", owner), class("fast", true), &pending)
	r.sync(t)
	if w := r.writes(); len(w) != 1 || w[0] != "delete statefulsets/db-east" {
		t.Fatalf("writes %q", w)
	}
	if evs := r.events(); !hasEvent(evs, "Warning ClaimsPending") {
		t.Fatalf("events %q", evs)
	}
}

func TestNoStatefulSetWaits(t *testing.T) {
	r := newRig(t, placement("2Gi"), nil)
	r.sync(t)
	if a := r.cs.Actions(); len(a) != 0 {
		t.Fatalf("actions %v", a)
	}
}

// TestReplacementHeldOutOfContact: claims are expanded while the member is
// out of contact with the hub, but the StatefulSet is not deleted (its
// orphaned pods would have no StatefulSet for the fence to find, and only
// the work agent re-creates it); back in contact, it is.
func TestReplacementHeldOutOfContact(t *testing.T) {
	pvc := claim("data-db-east-5", "1Gi", "fast", v1.ClaimBound)
	r := newRig(t, placement("2Gi"), statefulSet("1Gi", owner), class("fast", true), &pvc)
	inContact := false
	r.c.InContact = func() (bool, string) { return inContact, "Fenced: cut off" }
	if err := r.c.Sync(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}); err == nil {
		t.Fatal("Sync out of contact returned no error, want a retry")
	}
	for _, w := range r.writes() {
		if strings.HasPrefix(w, "delete ") {
			t.Fatalf("writes %q out of contact, want no delete", r.writes())
		}
	}
	if evs := r.events(); !hasEvent(evs, "Warning ReplacementHeld") {
		t.Errorf("events %q, want ReplacementHeld", evs)
	}
	inContact = true
	r.sync(t)
	if w := r.writes(); len(w) == 0 || w[len(w)-1] != "delete statefulsets/db-east" {
		t.Errorf("writes %q in contact, want the StatefulSet deleted last", w)
	}
}
