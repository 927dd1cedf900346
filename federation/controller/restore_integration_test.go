//go:build integration

package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/member/contact"
)

// restoreFromBackup stops h, deletes FleetSet ns/name from the hub (no
// finalizer, no hub running: its works stay), and re-creates it as a
// backup restores it: same namespace, name, labels, annotations and spec,
// a new UID, no status. It returns the restored FleetSet.
func restoreFromBackup(t *testing.T, h *hub, ns, name string) *fleetv1.FleetSet {
	t.Helper()
	h.stop()
	old := getFleetSet(t, ns, name)
	if err := k8sClient.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "FleetSet deleted", func() (bool, error) {
		err := k8sClient.Get(t.Context(), clientKey(ns, name), &fleetv1.FleetSet{})
		return apierrors.IsNotFound(err), client404(err)
	})
	restored := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: old.Labels, Annotations: old.Annotations}, Spec: old.Spec}
	if err := k8sClient.Create(t.Context(), restored); err != nil {
		t.Fatal(err)
	}
	if restored.UID == old.UID || restored.Annotations[fleetv1.AnnotationIdentity] != string(old.UID) {
		t.Fatalf("restored FleetSet: UID %s, identity %s; want a new UID and the first UID %s as identity", restored.UID, restored.Annotations[fleetv1.AnnotationIdentity], old.UID)
	}
	return restored
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// TestRestoredStatusKeepsRelocation: a subset relocated to its fallback
// cluster, then the hub restored from a backup that lost the status while
// the home cluster is back: the restored hub keeps the subset where it
// runs (FailedOver on the fallback, epoch 1, rebuilt from the
// ManifestWorks, a StatusRebuilt event), never delivers it home (failback
// is Manual) nor in two clusters, and the restored works carry the first
// owner identity.
func TestRestoredStatusKeepsRelocation(t *testing.T) {
	stopEast := beatingPair(t, "rsto", "restored")
	opts := Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second}
	h := startHubWith(t, opts)
	fs := pairFleetSet("restored", "rsto", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) {
		ws := works(t, "restored", "db")
		return ws["rsto-east"] != nil && ws["rsto-west"] != nil, nil
	})
	markApplied(t, "rsto-east", "restored", "db")
	markApplied(t, "rsto-west", "restored", "db")
	stopEast()
	setAvailable(t, "rsto-east", false)
	eventually(t, 30*time.Second, "east relocated to west", func() (bool, error) {
		ws := works(t, "restored", "db")
		return ws["rsto-east"] == nil && ws["rsto-west"] != nil && manifestwork.HoldsStatefulSet(ws["rsto-west"], "db-east"), nil
	})
	markApplied(t, "rsto-west", "restored", "db")
	first := getFleetSet(t, "restored", "db")

	restored := restoreFromBackup(t, h, "restored", "db")
	setAvailable(t, "rsto-east", true)
	memberBeat(t, "rsto-east")
	startHubWith(t, opts)
	eventually(t, 20*time.Second, "status rebuilt: east FailedOver on rsto-west, epoch 1", func() (bool, error) {
		got := getFleetSet(t, "restored", "db")
		return len(got.Status.Subsets) == 2 && got.Status.Subsets[0].Cluster == "rsto-west" &&
			got.Status.Subsets[0].Failover == fleetv1.SubsetFailedOver && got.Status.Subsets[0].Epoch == 1, nil
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ws := works(t, "restored", "db")
		if w := ws["rsto-east"]; w != nil && manifestwork.HoldsStatefulSet(w, "db-east") {
			t.Fatalf("the restored hub delivered db-east home to rsto-east while rsto-west runs it")
		}
		if w := ws["rsto-west"]; w == nil || !manifestwork.HoldsStatefulSet(w, "db-east") {
			t.Fatalf("the restored hub took db-east from rsto-west")
		} else if r, _ := manifestwork.HeldReplicas(w, "db-east"); r == 0 {
			t.Fatalf("the restored hub drained db-east in rsto-west without a failback request")
		}
		time.Sleep(200 * time.Millisecond)
	}
	var sts struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	manifest(t, works(t, "restored", "db")["rsto-west"], "StatefulSet", "db-east", &sts)
	if got := sts.Metadata.Labels[fleetv1.LabelOwnerUID]; got != string(first.UID) || restored.UID == first.UID {
		t.Errorf("restored db-east label %s = %q, want the first identity %s", fleetv1.LabelOwnerUID, got, first.UID)
	}
	if !hasEvent(t, "restored", "db", EventStatusRebuilt) {
		t.Errorf("no %s event", EventStatusRebuilt)
	}
}

// TestRestoreWithoutWorksHolds: a FleetSet restored without status and
// without any ManifestWork is held (Degraded RestoreHeld naming the
// annotation that releases it, nothing delivered) until the operator
// annotates it fleetset.io/restore-confirmed.
func TestRestoreWithoutWorksHolds(t *testing.T) {
	beatingPair(t, "rh", "restorehold")
	opts := Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second}
	h := startHubWith(t, opts)
	fs := pairFleetSet("restorehold", "rh", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) {
		ws := works(t, "restorehold", "db")
		return ws["rh-east"] != nil && ws["rh-west"] != nil, nil
	})
	restoreFromBackup(t, h, "restorehold", "db")
	for _, w := range works(t, "restorehold", "db") {
		if err := k8sClient.Delete(t.Context(), w); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "works gone", func() (bool, error) { return len(works(t, "restorehold", "db")) == 0, nil })
	startHubWith(t, opts)
	eventually(t, 20*time.Second, "Degraded RestoreHeld", func() (bool, error) {
		c := condition(getFleetSet(t, "restorehold", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonRestoreHeld && strings.Contains(c.Message, fleetv1.AnnotationRestoreConfirmed), nil
	})
	time.Sleep(2 * time.Second)
	if ws := works(t, "restorehold", "db"); len(ws) != 0 {
		t.Fatalf("held, yet the hub wrote %d ManifestWorks", len(ws))
	}
	updateFleetSet(t, "restorehold", "db", func(fs *fleetv1.FleetSet) {
		fs.Annotations[fleetv1.AnnotationRestoreConfirmed] = "true"
	})
	eventually(t, 20*time.Second, "works delivered once confirmed", func() (bool, error) {
		ws := works(t, "restorehold", "db")
		return ws["rh-east"] != nil && ws["rh-west"] != nil && manifestwork.HoldsStatefulSet(ws["rh-east"], "db-east"), nil
	})
}

// TestRestoredHubLearnsEpochs (issue 48): the hub restored from a backup
// taken before east's subset was relocated to west: its status says
// subset east runs on ep-east at epoch 0, while west's member reports that
// it ran db-east at epoch 1 (its heartbeat's fleetset.io/member-epochs).
// The hub learns the epoch from the members before it moves anything: the
// subset stays on ep-west at epoch 1 (FailedOver, failback Manual), never
// delivered to ep-east at the older epoch 0, with an EpochLearned event.
func TestRestoredHubLearnsEpochs(t *testing.T) {
	const id = "backup-identity"
	createCluster(t, "ep-east", true)
	createCluster(t, "ep-west", true)
	createNamespace(t, "epochs")
	report := func(east, west int64) contact.Report {
		b, err := json.Marshal(map[string]int64{"epochs.db-east." + id: east, "epochs.db-west." + id: west})
		if err != nil {
			t.Fatal(err)
		}
		return contact.Report{State: "InContact", Peers: 1, FenceSeconds: -1, FencedPlacements: -1, Epochs: string(b)}
	}
	memberBeatReport(t, "ep-east", beatTimeout, report(0, 0))
	memberBeatReport(t, "ep-west", beatTimeout, report(1, 0))

	fs := pairFleetSet("epochs", "ep", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0), Failback: fleetv1.FailbackManual})
	fs.Annotations = map[string]string{fleetv1.AnnotationIdentity: id}
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	// The status of the backup, taken before the relocation.
	fs.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "ep-east"}, {Name: "west", Cluster: "ep-west"}}
	if err := k8sClient.Status().Update(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: beatTimeout, RelocationMargin: time.Second})
	check := func() {
		t.Helper()
		if w := works(t, "epochs", "db")["ep-east"]; w != nil && manifestwork.HoldsStatefulSet(w, "db-east") {
			e, _ := manifestwork.HeldEpoch(w, "db-east")
			t.Fatalf("the restored hub delivered db-east to ep-east at epoch %d, while ep-west ran it at epoch 1", e)
		}
	}
	eventually(t, 20*time.Second, "db-east on ep-west at epoch 1", func() (bool, error) {
		check()
		got := getFleetSet(t, "epochs", "db")
		w := works(t, "epochs", "db")["ep-west"]
		if w == nil || len(got.Status.Subsets) != 2 {
			return false, nil
		}
		e, ok := manifestwork.HeldEpoch(w, "db-east")
		ss := got.Status.Subsets[0]
		return ok && e == 1 && ss.Cluster == "ep-west" && ss.Epoch == 1 && ss.Failover == fleetv1.SubsetFailedOver, nil
	})
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		check()
	}
	if !hasEvent(t, "epochs", "db", EventEpochLearned) {
		t.Errorf("no %s event", EventEpochLearned)
	}
}
