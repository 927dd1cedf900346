//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// backup returns obj as a backup of the hub keeps it (`kubectl get -o
// yaml` with uid, resourceVersion, creationTimestamp, generation,
// managedFields and status stripped, as Velero restores it), in YAML.
func backup(t *testing.T, obj client.Object) []byte {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	out, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHubRestoreLosesNothing restores the hub's objects from a backup: a
// Relocate FleetSet runs over every member; its namespace and the FleetSet
// are backed up, fleetset-hub stops (the hub is lost), the namespace is
// deleted from the hub with everything in it (the FleetSet without any
// cascade: the hub that would cascade is down), then the namespace, its
// ManagedClusterSetBinding and the FleetSet are re-created from the
// backup (a new UID, no status) and fleetset-hub starts again. No pod of
// any member is deleted or restarted (UIDs sampled every second), none
// runs twice, the FleetSet is Ready again with every subset at home, every
// member applied its restored works (Degraded False: fleetset-never-adopt
// refused nothing), and
// the members' objects keep their owner identity (label
// fleetset.io/owner-uid: the first UID, recorded as annotation
// fleetset.io/identity and carried by the backup).
func TestHubRestoreLosesNothing(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpStop, "hub", "fleetset-hub")
	f.skipUnless(t, framework.OpRestart, "hub", "fleetset-hub")
	ns := f.newNamespace(t, "e2e-restore")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)}
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	var first *fleetv1.FleetSet
	eventually(t, 30*time.Second, "the FleetSet's identity annotation", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		first = got
		id := got.Annotations[fleetv1.AnnotationIdentity]
		return id == string(got.UID), "annotation " + id + ", UID " + string(got.UID), nil
	})
	var hubNS corev1.Namespace
	if err := f.hub.Get(t.Context(), client.ObjectKey{Name: ns}, &hubNS); err != nil {
		t.Fatal(err)
	}
	nsBackup, fsBackup := backup(t, &hubNS), backup(t, first)
	t.Logf("backup of FleetSet %s/db:\n%s", ns, fsBackup)

	s := f.sample(t, ns, "db")
	started := time.Now()
	f.do(t, framework.OpStop, "hub", "fleetset-hub")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			f.do(t, framework.OpRestart, "hub", "fleetset-hub")
		}
	})
	if err := f.hub.Delete(t.Context(), &hubNS); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "namespace "+ns+" gone from the hub", func(ctx context.Context) (bool, string, error) {
		err := f.hub.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", client.IgnoreNotFound(err)
	})
	var restoredNS corev1.Namespace
	if err := yaml.Unmarshal(nsBackup, &restoredNS); err != nil {
		t.Fatal(err)
	}
	if err := f.hub.Create(t.Context(), &restoredNS); err != nil {
		t.Fatalf("restoring namespace %s: %v", ns, err)
	}
	f.bindClusterSet(t, ns, "global")
	restoredFS := &fleetv1.FleetSet{}
	if err := yaml.Unmarshal(fsBackup, restoredFS); err != nil {
		t.Fatal(err)
	}
	if err := f.hub.Create(t.Context(), restoredFS); err != nil {
		t.Fatalf("restoring FleetSet %s/db: %v", ns, err)
	}
	if restoredFS.UID == first.UID {
		t.Fatalf("the restored FleetSet has the UID of the first, %s: not a restore", first.UID)
	}
	f.do(t, framework.OpRestart, "hub", "fleetset-hub")
	restarted = true
	f.waitReady(t, ns, "db", 4)
	eventually(t, time.Minute, "the restored FleetSet Ready at home", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		c := condition(got, fleetv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, "not Ready", nil
		}
		// Degraded False: every member applied the restored FleetSet's
		// works (a refusal by fleetset-never-adopt would be ApplyFailed).
		if d := condition(got, fleetv1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
			_, why, _ := f.degraded(ctx, ns, "db")
			return false, why, nil
		}
		var works workv1.ManifestWorkList
		if err := f.hub.List(ctx, &works, client.MatchingLabels(manifestwork.OwnerLabels(ns, "db"))); err != nil {
			return false, "", err
		}
		if len(works.Items) != len(f.members) {
			return false, fmt.Sprintf("%d ManifestWorks, want %d", len(works.Items), len(f.members)), nil
		}
		for i := range works.Items {
			if !manifestwork.AppliedAtGeneration(&works.Items[i]) {
				return false, "ManifestWork " + works.Items[i].Namespace + "/" + works.Items[i].Name + " not Applied at its generation: " + strings.Join(manifestwork.ApplyFailures(&works.Items[i]), "; "), nil
			}
		}
		for i, ss := range got.Status.Subsets {
			if ss.Cluster != got.Spec.Topology.Subsets[i].Cluster || ss.Failover != "" {
				return false, "subset " + ss.Name + " at " + ss.Cluster + " " + string(ss.Failover), nil
			}
		}
		return len(got.Status.Subsets) == len(got.Spec.Topology.Subsets), "", nil
	})
	// Past a heartbeat timeout and fence deadline, nothing moved.
	time.Sleep(20 * time.Second)
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "db"}); err != nil {
			t.Fatal(err)
		}
		for _, o := range sts.Items {
			if got := o.Labels[fleetv1.LabelOwnerUID]; got != string(first.UID) {
				t.Errorf("%s: StatefulSet %s label %s = %q, want the first identity %s", m.name, o.Name, fleetv1.LabelOwnerUID, got, first.UID)
			}
		}
	}
	samples, dual, deleted := s.result()
	t.Logf("%d samples over %v: %d pods stopped or replaced, %d with a pod Running in two clusters", samples, time.Since(started).Round(time.Second), len(deleted), len(dual))
	if samples < 10 {
		t.Errorf("only %d samples", samples)
	}
	for pod, at := range deleted {
		t.Errorf("%s: pod %s no longer Running as before", at, pod)
	}
	for _, v := range dual {
		t.Error(v)
	}
}
