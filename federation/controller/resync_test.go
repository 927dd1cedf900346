package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestLeaseClustersChanged: the FleetSet updates that reach the resync
// controller are those that change what it reads; a status update of
// feedback or conditions is not one of them.
func TestLeaseClustersChanged(t *testing.T) {
	base := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb"}}
	base.Spec.Topology.Subsets = []fleetv1.Subset{{Name: "east", Cluster: "east"}, {Name: "west", Cluster: "west", FallbackClusters: []string{"north"}}}
	base.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "east"}, {Name: "west", Cluster: "west"}}
	p := leaseClustersChanged()
	for _, c := range []struct {
		name   string
		change func(fs *fleetv1.FleetSet)
		want   bool
	}{
		{"feedback and conditions", func(fs *fleetv1.FleetSet) {
			fs.Status.ReadyReplicas = 3
			fs.Status.Subsets[0].ReadyReplicas = 3
			fs.Status.Conditions = []metav1.Condition{{Type: fleetv1.ConditionReady, Status: metav1.ConditionTrue}}
		}, false},
		{"finalizer", func(fs *fleetv1.FleetSet) { fs.Finalizers = []string{fleetv1.FleetSetFinalizer} }, false},
		{"deletion", func(fs *fleetv1.FleetSet) { fs.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, true},
		{"new cluster", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].Cluster = "south" }, true},
		{"new fallback", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].FallbackClusters = []string{"south"} }, true},
		{"relocated", func(fs *fleetv1.FleetSet) {
			fs.Status.Subsets[1].Cluster, fs.Status.Subsets[1].Failover = "north", fleetv1.SubsetFailedOver
		}, true},
	} {
		n := base.DeepCopy()
		c.change(n)
		if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}); got != c.want {
			t.Errorf("%s: passes = %v, want %v", c.name, got, c.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: base}) || !p.Delete(event.DeleteEvent{Object: base}) {
		t.Error("creations and deletions must pass")
	}
}

// TestLeaseRelevant: every event of the resync work passes; of a FleetSet's
// work, deletions and changes of Applied at its generation do, creations
// and feedback do not.
func TestLeaseRelevant(t *testing.T) {
	p := leaseRelevant()
	resync := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: fleetv1.ResyncWorkName}}
	if !p.Create(event.CreateEvent{Object: resync}) || !p.Update(event.UpdateEvent{ObjectOld: resync, ObjectNew: resync.DeepCopy()}) {
		t.Error("resync work events must pass")
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "db.mydb", Generation: 1}}
	if p.Create(event.CreateEvent{Object: w}) {
		t.Error("a FleetSet work's creation passes")
	}
	fed := w.DeepCopy()
	fed.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	if !p.Update(event.UpdateEvent{ObjectOld: w, ObjectNew: fed}) {
		t.Error("Applied at the generation does not pass")
	}
	more := fed.DeepCopy()
	more.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{}}
	if p.Update(event.UpdateEvent{ObjectOld: fed, ObjectNew: more}) {
		t.Error("a feedback update passes")
	}
	deleting := fed.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	if !p.Update(event.UpdateEvent{ObjectOld: fed, ObjectNew: deleting}) || !p.Delete(event.DeleteEvent{Object: fed}) {
		t.Error("deletions must pass")
	}
}
