package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// TestChooseWrites: what a reconcile writes of a FleetSet's ManifestWorks,
// by the subsets' plans and the works that exist.
func TestChooseWrites(t *testing.T) {
	fs := mydbFleetSet(6)
	noSelector := fs.DeepCopy()
	noSelector.Spec.Selector = nil
	subset := func(name, cluster string, replicas int32) subsetPlan {
		return subsetPlan{planned: plan.Subset{Name: name, Cluster: cluster, Replicas: replicas, BlockSize: 1000}, clusterExists: true, clusterAvailable: true}
	}
	east, west := subset("east", "east", 3), subset("west", "west", 3)
	westMissing := west
	westMissing.clusterExists, westMissing.clusterAvailable = false, false
	westDraining := west
	westDraining.draining, westDraining.failoverPhase = true, fleetv1.SubsetFailingBack
	westScaled := subset("west", "west", 4)

	// rendered returns the work the hub renders in cluster for subsets, as
	// the cache would hold it once written.
	rendered := func(cluster string, subsets ...subsetPlan) *workv1.ManifestWork {
		var ps []manifestwork.Subset
		for _, sp := range subsets {
			ps = append(ps, manifestwork.FromPlan(sp.planned))
		}
		works, err := manifestwork.Works(fs, ps, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range works {
			if w.Namespace == cluster {
				w.ResourceVersion = "1"
				return w
			}
		}
		t.Fatalf("no work rendered in %s", cluster)
		return nil
	}
	stale := func(cluster string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: manifestwork.WorkName("db", "mydb"),
			Labels: manifestwork.OwnerLabels("db", "mydb"), ResourceVersion: "1"}}
		return w
	}
	deleting := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		w = w.DeepCopy()
		w.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		return w
	}
	foreign := stale("east")
	foreign.Name = "other"
	oldDNS := stale("east")
	oldDNS.Name = fleetv1.FleetDNSWorkName("db", "mydb", 3)
	oldDNS.Labels[fleetv1.LabelWorkPart] = fleetv1.WorkPartFleetDNS

	for _, tc := range []struct {
		name     string
		fs       *fleetv1.FleetSet
		subsets  []subsetPlan
		existing []*workv1.ManifestWork
		// want lists "create <cluster>", "update <cluster>" and "delete
		// <namespace>/<name>", in the order chosen.
		want    []string
		wantErr bool
		edited  func(*workv1.ManifestWork) bool
	}{
		{name: "new FleetSet: one work created per cluster", fs: fs, subsets: []subsetPlan{east, west},
			want: []string{"create east", "create west"}},
		{name: "works up to date: nothing written", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west)}},
		{name: "a subset scaled: every work updated (the fleet view changed)", fs: fs, subsets: []subsetPlan{east, westScaled},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west)},
			want:     []string{"update east", "update west"}},
		{name: "a work not rendered by the hub: updated", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{stale("east"), rendered("west", east, west)},
			want:     []string{"update east"}},
		{name: "a cluster no longer used: its work deleted", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west), stale("south"), stale("north")},
			want:     []string{"delete north/db.mydb", "delete south/db.mydb"}},
		{name: "a fleet DNS work no longer rendered, in a used cluster: deleted", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west), oldDNS},
			want:     []string{"delete east/db.mydb.fleet-dns-3"}},
		{name: "a work being deleted: not deleted again", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west), deleting(stale("north"))}},
		{name: "a cluster not found: its work neither written nor deleted", fs: fs, subsets: []subsetPlan{east, westMissing},
			existing: []*workv1.ManifestWork{stale("east"), stale("west")},
			want:     []string{"update east"}},
		{name: "a subset draining (failing back): kept in its cluster's work, at replicas 0", fs: fs, subsets: []subsetPlan{east, westDraining},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west)},
			want:     []string{"update east", "update west"}},
		{name: "a work of another name in a used cluster: left alone", fs: fs, subsets: []subsetPlan{east},
			existing: []*workv1.ManifestWork{foreign},
			want:     []string{"create east"}},
		{name: "an up-to-date work someone else edited: restored", fs: fs, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{rendered("east", east, west), rendered("west", east, west)},
			edited:   func(w *workv1.ManifestWork) bool { return w.Namespace == "west" },
			want:     []string{"restore west"}},
		{name: "spec.selector missing: nothing chosen", fs: noSelector, subsets: []subsetPlan{east, west},
			existing: []*workv1.ManifestWork{stale("north")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			existing := map[types.NamespacedName]*workv1.ManifestWork{}
			for _, w := range tc.existing {
				existing[client.ObjectKeyFromObject(w)] = w
			}
			got, err := chooseWrites(tc.fs, tc.subsets, existing, tc.edited, nil, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("chooseWrites error = %v, want an error: %v", err, tc.wantErr)
			}
			var ops []string
			for _, ww := range got.apply {
				switch cur := existing[client.ObjectKeyFromObject(ww.desired)]; {
				case ww.existing != cur:
					t.Errorf("apply in %s: existing %p, want the cache's %p", ww.desired.Namespace, ww.existing, cur)
				case cur == nil:
					ops = append(ops, "create "+ww.desired.Namespace)
				case ww.restore:
					ops = append(ops, "restore "+ww.desired.Namespace)
				default:
					ops = append(ops, "update "+ww.desired.Namespace)
				}
			}
			for _, w := range got.remove {
				ops = append(ops, "delete "+client.ObjectKeyFromObject(w).String())
			}
			if diff := cmp.Diff(tc.want, ops); diff != "" {
				t.Errorf("chosen writes (-want,+got):\n%s", diff)
			}
			for _, sp := range tc.subsets {
				if !sp.draining {
					continue
				}
				for _, ww := range got.apply {
					if ww.desired.Namespace != sp.planned.Cluster {
						continue
					}
					sts := manifestwork.StatefulSetName("mydb", sp.planned.Name)
					var got appsv1.StatefulSet
					found := false
					for _, m := range ww.desired.Spec.Workload.Manifests {
						if json.Unmarshal(m.Raw, &got) == nil && got.Kind == "StatefulSet" && got.Name == sts {
							found = true
							break
						}
					}
					if !found || got.Spec.Replicas == nil || *got.Spec.Replicas != 0 {
						t.Errorf("draining subset %s: StatefulSet %s in %s found %v, replicas %v; want it at 0", sp.planned.Name, sts, sp.planned.Cluster, found, got.Spec.Replicas)
					}
				}
			}
		})
	}
}

// TestChooseWritesRefusesWorksOverOCMsLimit: a cluster's work over OCM's
// manifest limit (here a 600 KB ConfigMap delivered with its subset) is not
// written, the other cluster's is, and a WorkTooLarge problem names the
// cluster; the existing work is kept, not deleted.
func TestChooseWritesRefusesWorksOverOCMsLimit(t *testing.T) {
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{Replicas: 2, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}},
	}
	east := subsetPlan{planned: plan.Subset{Name: "east", Cluster: "east", Replicas: 1, BlockSize: 1000}, clusterExists: true, clusterAvailable: true}
	west := subsetPlan{planned: plan.Subset{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 1, BlockSize: 1000}, clusterExists: true, clusterAvailable: true}
	big := make([]byte, 600*1024)
	for i := range big {
		big[i] = 'x'
	}
	west.rendered.dependencies = []runtime.Object{&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "huge"}, Data: map[string]string{"blob": string(big)}}}
	old := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "west", Name: manifestwork.WorkName("db", "mydb"), ResourceVersion: "1"}}
	got, err := chooseWrites(fs, []subsetPlan{east, west}, map[types.NamespacedName]*workv1.ManifestWork{client.ObjectKeyFromObject(old): old}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.apply) != 1 || got.apply[0].desired.Namespace != "east" {
		t.Errorf("applies %d works, want only east's", len(got.apply))
	}
	if len(got.remove) != 0 {
		t.Errorf("removes %d works; west's existing work must be kept", len(got.remove))
	}
	if len(got.tooLarge) != 1 || got.tooLarge[0].Reason != fleetv1.ReasonWorkTooLarge || got.tooLarge[0].Cluster != "west" {
		t.Errorf("problems %+v, want one WorkTooLarge for west", got.tooLarge)
	}
}
