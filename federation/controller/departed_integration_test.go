//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// deliveredPeers returns the peers the hub delivers to cluster in its
// resync work (the ConfigMap's PeersKey), nil when there is no work yet.
func deliveredPeers(t testing.TB, cluster string) map[string]string {
	t.Helper()
	w := &workv1.ManifestWork{}
	if err := k8sClient.Get(t.Context(), types.NamespacedName{Namespace: cluster, Name: fleetv1.ResyncWorkName}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if i, err := envelope.Find(w, envelope.Key{Kind: "ConfigMap", Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.PeersConfigMapName}, &cm); err != nil || i < 0 {
		t.Fatalf("resync work of %s: no peers ConfigMap (%v)", cluster, err)
	}
	out := map[string]string{}
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.PeersKey]), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDepartedMemberForgotten: the heartbeat Lease of a cluster whose
// ManagedCluster is deleted is deleted by the hub (and again if the old
// member writes it anew), and its peer URL leaves the peers every other
// member is delivered, so the members' count of peers and the hub's agree
// and a departed cluster never counts as a silent peer.
func TestDepartedMemberForgotten(t *testing.T) {
	for _, c := range []string{"dep-a", "dep-b", "dep-c"} {
		createCluster(t, c, true)
	}
	createNamespace(t, "departed")
	memberBeat(t, "dep-a")
	memberBeat(t, "dep-b")
	stopC := memberBeat(t, "dep-c")
	startHub(t, 3*time.Second)
	if err := k8sClient.Create(t.Context(), threeClusterFleetSet("departed", "db", "dep-a", "dep-b", "dep-c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "dep-a delivered both peers", func() (bool, error) {
		p := deliveredPeers(t, "dep-a")
		return p["dep-b"] != "" && p["dep-c"] != "", nil
	})

	stopC()
	deleteCluster(t, "dep-c")
	leaseGone := func() (bool, error) {
		err := k8sClient.Get(t.Context(), types.NamespacedName{Namespace: "dep-c", Name: fleetv1.HeartbeatLeaseName}, &coordinationv1.Lease{})
		return apierrors.IsNotFound(err), client0(err)
	}
	eventually(t, 15*time.Second, "heartbeat Lease of the departed dep-c deleted", leaseGone)
	eventually(t, 15*time.Second, "dep-c no longer delivered as a peer", func() (bool, error) {
		for _, c := range []string{"dep-a", "dep-b"} {
			if _, ok := deliveredPeers(t, c)["dep-c"]; ok {
				return false, nil
			}
		}
		return deliveredPeers(t, "dep-a")["dep-b"] != "", nil
	})

	// The departed member's component writes its Lease once more: deleted
	// again, and never delivered.
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "dep-c", Name: fleetv1.HeartbeatLeaseName,
		Labels:      map[string]string{fleetv1.LabelHeartbeat: "true"},
		Annotations: map[string]string{fleetv1.AnnotationPeerURL: "http://127.0.0.1:1/dep-c"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dep-c-member"), LeaseDurationSeconds: ptr.To[int32](3), RenewTime: &now}}
	if err := k8sClient.Create(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "re-created heartbeat Lease of dep-c deleted", leaseGone)
	time.Sleep(2 * time.Second) // two renewals of the resync works
	if _, ok := deliveredPeers(t, "dep-a")["dep-c"]; ok {
		t.Error("dep-c delivered as a peer again after its Lease was re-created")
	}
}

// client0 is err unless it is a NotFound.
func client0(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// addOn returns OCM add-on object kind (ClusterManagementAddOn or
// ManagedClusterAddOn) fleetset in namespace ns ("" cluster-scoped).
func addOn(kind, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(addOnGroupVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(fleetv1.AddOnName)
	u.Object["spec"] = map[string]any{}
	return u
}

// TestAddOnDisabledMemberForgotten: with fleetset installed as an OCM
// add-on (ClusterManagementAddOn fleetset), disabling it in a cluster
// (deleting its ManagedClusterAddOn) makes the cluster no member: the hub
// deletes its heartbeat Lease and stops delivering its peer URL, while its
// ManagedCluster stays.
func TestAddOnDisabledMemberForgotten(t *testing.T) {
	cma := addOn(kindClusterManagementAddOn, "")
	if err := k8sClient.Create(t.Context(), cma); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), addOn(kindClusterManagementAddOn, "")) })
	for _, c := range []string{"ad-a", "ad-b", "ad-c"} {
		createCluster(t, c, true)
		if err := k8sClient.Create(t.Context(), addOn(kindManagedClusterAddOn, c)); err != nil {
			t.Fatal(err)
		}
		memberBeat(t, c)
	}
	createNamespace(t, "addonoff")
	startHub(t, 3*time.Second)
	if err := k8sClient.Create(t.Context(), threeClusterFleetSet("addonoff", "db", "ad-a", "ad-b", "ad-c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "ad-a delivered both peers", func() (bool, error) {
		p := deliveredPeers(t, "ad-a")
		return p["ad-b"] != "" && p["ad-c"] != "", nil
	})
	if err := k8sClient.Delete(t.Context(), addOn(kindManagedClusterAddOn, "ad-c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "heartbeat Lease of ad-c, whose add-on is disabled, deleted", func() (bool, error) {
		err := k8sClient.Get(t.Context(), types.NamespacedName{Namespace: "ad-c", Name: fleetv1.HeartbeatLeaseName}, &coordinationv1.Lease{})
		if err == nil {
			return false, nil
		}
		return apierrors.IsNotFound(err), client0(err)
	})
	eventually(t, 15*time.Second, "ad-c no longer delivered as a peer", func() (bool, error) {
		_, ok := deliveredPeers(t, "ad-a")["ad-c"]
		return !ok && deliveredPeers(t, "ad-a")["ad-b"] != "", nil
	})
}
