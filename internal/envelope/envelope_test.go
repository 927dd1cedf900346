package envelope

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func workOf(t *testing.T, objs ...runtime.Object) *workv1.ManifestWork {
	t.Helper()
	ms, err := Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	return &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: ms}}}
}

// TestEncodeFind: what Encode writes, Find reads back, by kind, namespace
// and name; the manifests carry no status and no null creationTimestamp.
func TestEncodeFind(t *testing.T) {
	sp := &fleetv1.SubsetPlacement{TypeMeta: metav1.TypeMeta{APIVersion: fleetv1.GroupVersion.String(), Kind: "SubsetPlacement"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb-east"},
		Spec:       fleetv1.SubsetPlacementSpec{Fencing: &fleetv1.PlacementFencing{Epoch: 3}}}
	sts := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb-east"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb-fleet"}}
	w := workOf(t, cm, sp, sts)
	for _, m := range w.Spec.Workload.Manifests {
		if s := string(m.Raw); strings.Contains(s, `"status"`) || strings.Contains(s, "creationTimestamp") {
			t.Errorf("manifest carries status or creationTimestamp: %s", s)
		}
	}

	var gotSP fleetv1.SubsetPlacement
	if i, err := Find(w, Key{Kind: "SubsetPlacement", Namespace: "db", Name: "mydb-east"}, &gotSP); i != 1 || err != nil {
		t.Fatalf("Find(SubsetPlacement) = %d, %v; want 1, nil", i, err)
	}
	if diff := cmp.Diff(sp, &gotSP); diff != "" {
		t.Errorf("decoded SubsetPlacement (-encoded,+decoded):\n%s", diff)
	}
	var gotSTS appsv1.StatefulSet
	if i, err := Find(w, Key{Kind: "StatefulSet", Name: "mydb-east"}, &gotSTS); i != 2 || err != nil || *gotSTS.Spec.Replicas != 2 {
		t.Errorf("Find(StatefulSet, any namespace) = %d, %v, replicas %v; want 2, nil, 2", i, err, gotSTS.Spec.Replicas)
	}
	if i, err := Find(w, Key{Kind: "SubsetPlacement", Namespace: "other", Name: "mydb-east"}, &gotSP); i != -1 || err != nil {
		t.Errorf("Find(another namespace) = %d, %v; want -1, nil", i, err)
	}
}

// TestFindSkipsUndecodable: a manifest without a readable kind and metadata
// is skipped; a selected manifest that does not decode is an error naming
// its index.
func TestFindSkipsUndecodable(t *testing.T) {
	raw := func(s string) workv1.Manifest {
		return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(s)}}
	}
	w := &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
		raw(`not json`),
		raw(`{"kind":"Lease","metadata":{"name":7}}`),
		raw(`{"kind":"Lease","metadata":{"name":"a"},"spec":{"holderIdentity":"hub"}}`),
		raw(`{"kind":"StatefulSet","metadata":{"name":"s"},"spec":{"replicas":"two"}}`),
	}}}}
	var l struct {
		Spec struct {
			HolderIdentity string `json:"holderIdentity"`
		} `json:"spec"`
	}
	if i, err := Find(w, Key{Kind: "Lease"}, &l); i != 2 || err != nil || l.Spec.HolderIdentity != "hub" {
		t.Errorf("Find(Lease) = %d, %v, %+v; want 2, nil, holder hub", i, err, l)
	}
	var sts appsv1.StatefulSet
	if i, err := Find(w, Key{Kind: "StatefulSet", Name: "s"}, &sts); i != 3 || err == nil || !strings.Contains(err.Error(), "manifests[3]") {
		t.Errorf("Find(undecodable StatefulSet) = %d, %v; want 3 and an error naming manifests[3]", i, err)
	}
}
