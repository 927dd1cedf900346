package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// restoreFleetSet is FleetSet db/mydb, policy Relocate, restored from a
// backup: identity uid-1, UID uid-2, status lost.
func restoreFleetSet() *fleetv1.FleetSet {
	fs := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb", UID: "uid-2",
		Annotations: map[string]string{fleetv1.AnnotationIdentity: "uid-1"}}}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate}
	fs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}}
	fs.Spec.Template.Labels = map[string]string{"app": "mydb"}
	fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}
	return fs
}

// worksOf renders fs's ManifestWorks for subsets (manifestwork.Works: what
// the hub delivered before the backup), by namespace/name.
func worksOf(t *testing.T, fs *fleetv1.FleetSet, subsets ...manifestwork.Subset) map[types.NamespacedName]*workv1.ManifestWork {
	t.Helper()
	ws, err := manifestwork.Works(fs, subsets, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.NamespacedName]*workv1.ManifestWork{}
	for _, w := range ws {
		out[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}] = w
	}
	return out
}

// TestRebuiltSubsetStatus: with status.subsets lost, where each subset runs
// is read back from the ManifestWorks: a subset relocated to its fallback
// cluster stays there, FailedOver at its epoch (never sent home, never
// doubled); one draining on its fallback is FailingBack; one at home is at
// home; two clusters running one subset hold.
func TestRebuiltSubsetStatus(t *testing.T) {
	fs := restoreFleetSet()
	fence := func(e int64) *fleetv1.PlacementFencing { return &fleetv1.PlacementFencing{Epoch: e, GraceSeconds: 30} }
	home := plan.Subset{Name: "east", Cluster: "east", Replicas: 3}
	for _, tc := range []struct {
		name    string
		subsets []manifestwork.Subset
		want    fleetv1.SubsetStatus
		held    string
	}{
		{name: "at home", subsets: []manifestwork.Subset{{Name: "east", Cluster: "east", Replicas: 3, BlockSize: 1000, Fencing: fence(2)}},
			want: fleetv1.SubsetStatus{Name: "east", Epoch: 2}},
		{name: "relocated to its fallback", subsets: []manifestwork.Subset{{Name: "east", Cluster: "west", Replicas: 3, BlockSize: 1000, Fencing: fence(3)}},
			want: fleetv1.SubsetStatus{Name: "east", Cluster: "west", Failover: fleetv1.SubsetFailedOver, Epoch: 3}},
		{name: "draining on its fallback (failing back)", subsets: []manifestwork.Subset{{Name: "east", Cluster: "west", Replicas: 0, BlockSize: 1000, Fencing: fence(4)}},
			want: fleetv1.SubsetStatus{Name: "east", Cluster: "west", Failover: fleetv1.SubsetFailingBack, Epoch: 4}},
		{name: "run by two clusters other than home", subsets: []manifestwork.Subset{
			{Name: "east", Cluster: "west", Replicas: 3, BlockSize: 1000, Fencing: fence(3)},
			{Name: "east", Cluster: "north", Replicas: 3, BlockSize: 1000, Fencing: fence(3)}},
			held: "the ManifestWorks of clusters [north west] all run subset east"},
		{name: "no work holds it", want: fleetv1.SubsetStatus{Name: "east"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, held := rebuiltSubsetStatus(fs, home, worksOf(t, fs, tc.subsets...))
			if !strings.Contains(held, tc.held) || (tc.held == "") != (held == "") {
				t.Fatalf("held = %q, want %q", held, tc.held)
			}
			if tc.held == "" && !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("rebuilt = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRestoreHold: a FleetSet restored without status and without any
// ManifestWork is held (the hub cannot know where its subsets run) until
// its works are back or the operator confirms; a new FleetSet, one that
// kept its status, one whose works exist and a confirmed one are not.
func TestRestoreHold(t *testing.T) {
	works := worksOf(t, restoreFleetSet(), manifestwork.Subset{Name: "east", Cluster: "east", Replicas: 3, BlockSize: 1000})
	for _, tc := range []struct {
		name  string
		edit  func(fs *fleetv1.FleetSet)
		works map[types.NamespacedName]*workv1.ManifestWork
		held  bool
	}{
		{name: "restored, no status, no works", held: true},
		{name: "restored, no status, works restored too", works: works},
		{name: "restored, status kept", edit: func(fs *fleetv1.FleetSet) {
			fs.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "east"}}
		}},
		{name: "restored, confirmed by the operator", edit: func(fs *fleetv1.FleetSet) {
			fs.Annotations[fleetv1.AnnotationRestoreConfirmed] = "true"
		}},
		{name: "new FleetSet: identity is its UID", edit: func(fs *fleetv1.FleetSet) { fs.UID = "uid-1" }},
		{name: "new FleetSet: no identity yet", edit: func(fs *fleetv1.FleetSet) { fs.Annotations = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := restoreFleetSet()
			if tc.edit != nil {
				tc.edit(fs)
			}
			why := restoreHold(fs, tc.works)
			if (why != "") != tc.held {
				t.Fatalf("restoreHold = %q, want held %v", why, tc.held)
			}
			if tc.held && (!strings.Contains(why, fleetv1.AnnotationRestoreConfirmed) || !strings.Contains(why, "identity uid-1, UID uid-2")) {
				t.Errorf("restoreHold = %q: want it to name the identities and the annotation that releases it", why)
			}
		})
	}
}
