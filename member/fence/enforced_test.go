package fence

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestEnforcedSeconds: the member reports the fence it would really take:
// the placement's grace plus the longest termination grace of the pods it
// would delete (an old-revision pod with 90 s counts, a pod of another
// controller does not); placements without fencing count for nothing.
func TestEnforcedSeconds(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	placement := func(name string, grace int32, fencing bool) *fleetv1.SubsetPlacement {
		sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}}
		if fencing {
			sp.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: grace}
		}
		return sp
	}
	pod := func(name, owner string, grace *int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: grace}}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{
		pod("db-east-0", "db-east", ptr.To[int64](20)),
		pod("db-east-1", "db-east", ptr.To[int64](90)), // an old revision
		pod("other-0", "other", ptr.To[int64](3600)),   // not the placement's
		pod("db-west-1000", "db-west", nil),            // default 30
	} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		placements []*fleetv1.SubsetPlacement
		want       int64
	}{
		{"no fencing", []*fleetv1.SubsetPlacement{placement("db-east", 10, false)}, -1},
		{"longest pod grace", []*fleetv1.SubsetPlacement{placement("db-east", 10, true)}, 100},
		{"largest of placements", []*fleetv1.SubsetPlacement{placement("db-east", 10, true), placement("db-west", 200, true)}, 230},
		{"no pod yet", []*fleetv1.SubsetPlacement{placement("db-north", 5, true)}, 35},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, sp := range tc.placements {
				b = b.WithObjects(sp)
			}
			f := &Fencer{Placements: b.Build(), Pods: corelisters.NewPodLister(idx)}
			got, err := f.EnforcedSeconds(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("EnforcedSeconds = %d, want %d", got, tc.want)
			}
		})
	}
}
