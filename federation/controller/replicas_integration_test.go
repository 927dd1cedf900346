//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
	"github.com/fleetset/fleetset/member/contact"
)

// TestTwoReplicasNoPeerChurn: both replicas of a member's component beat on
// the cluster's one heartbeat Lease, each with its own peer URL. The hub
// delivers both URLs to the other members, and the peers ConfigMap (so the
// resync work's manifests) stays the same from renewal to renewal: the
// replicas' alternating writes no longer rewrite it.
func TestTwoReplicasNoPeerChurn(t *testing.T) {
	createCluster(t, "rep-east", true)
	createCluster(t, "rep-west", true)
	createNamespace(t, "replicas")
	memberBeat(t, "rep-west")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	clk := clock.RealClock{}
	mon := contact.NewMonitor(clk, beatTimeout)
	done := make(chan struct{}, 2)
	for _, r := range []string{"r1", "r2"} {
		hb := &contact.Heartbeat{Cluster: "rep-east", Identity: "rep-east-" + r, PeerURL: "https://127.0.0.1:1/" + r,
			Hub: cs.CoordinationV1(), Monitor: mon, Clock: clk, Period: beatTimeout / 6}
		go func() { hb.Run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		_ = cs.CoordinationV1().Leases("rep-east").Delete(context.Background(), fleetv1.HeartbeatLeaseName, metav1.DeleteOptions{})
	})
	startHub(t, 3*time.Second)
	if err := k8sClient.Create(t.Context(), pairFleetSet("replicas", "rep", 2, fleetv1.Failover{})); err != nil {
		t.Fatal(err)
	}
	type delivered struct {
		peers string
		hash  string
	}
	read := func() delivered {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(t.Context(), types.NamespacedName{Namespace: "rep-west", Name: fleetv1.ResyncWorkName}, w); err != nil {
			return delivered{}
		}
		var cm corev1.ConfigMap
		if i, err := envelope.Find(w, envelope.Key{Kind: "ConfigMap", Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.PeersConfigMapName}, &cm); err != nil || i < 0 {
			t.Fatalf("resync work of rep-west: no peers ConfigMap (%v)", err)
		}
		return delivered{peers: cm.Data[fleetv1.PeersKey] + " " + cm.Data[fleetv1.PeersAllKey], hash: string(cm.Data[fleetv1.PeersAllKey])}
	}
	eventually(t, 20*time.Second, "rep-west delivered both replicas of rep-east", func() (bool, error) {
		all := map[string][]string{}
		d := read()
		if d.hash == "" {
			return false, nil
		}
		if err := json.Unmarshal([]byte(d.hash), &all); err != nil {
			return false, err
		}
		return slices.Equal(all["rep-east"], []string{"https://127.0.0.1:1/r1", "https://127.0.0.1:1/r2"}), nil
	})
	first := read()
	// Renewals every second, both replicas beating every half second.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got := read(); got.peers != first.peers {
			t.Fatalf("peers delivered to rep-west changed between renewals: %q → %q", first.peers, got.peers)
		}
	}
}
