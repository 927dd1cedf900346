package member

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/peers"
)

// TestPeerCASurvivesRestartDuringHubOutage: the member component keeps the
// fleet peer CA it read from the hub in its own cluster, and a component
// started while the hub cannot be read loads that copy, so it can ask and
// answer its peers instead of fencing on the outage. Without the copy
// (as before), the restarted component has no CA.
func TestPeerCASurvivesRestartDuringHubOutage(t *testing.T) {
	pem, _, err := certutil.GenerateSelfSignedCertKey("fleetset-peer-ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hubCA := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: peers.CANamespace, Name: peers.CAConfigMapName},
		Data: map[string]string{peers.CAConfigMapKey: string(pem)}}
	hub := fake.NewClientset(hubCA)
	member := fake.NewClientset()
	run := func(hub, member *fake.Clientset) *peers.CABundle {
		t.Helper()
		b := &peers.CABundle{}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); loadPeerCA(ctx, b, hub, member, time.Hour) }()
		for !b.Loaded() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
		return b
	}

	// Hub up: loaded from the hub, and a copy kept in the member cluster.
	if b := run(hub, member); !b.Loaded() {
		t.Fatal("hub up: no CA loaded")
	}
	local, err := member.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(t.Context(), LocalPeerCAName, metav1.GetOptions{})
	if err != nil || local.Data[peers.CAConfigMapKey] != string(pem) {
		t.Fatalf("member's copy of the CA: %v, %v; want the hub's", local, err)
	}

	// Restarted while the hub's apiserver is down: the member's copy.
	down := fake.NewClientset(hubCA)
	down.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	b := run(down, member)
	if !b.Loaded() {
		t.Fatal("restarted during a hub outage: no CA loaded from the member's copy")
	}
	if pool, err := b.Pool(); err != nil || pool == nil {
		t.Errorf("CA pool from the member's copy: %v, %v", pool, err)
	}

	// No copy (a member that never reached the hub): nothing to load.
	if b := run(down, fake.NewClientset()); b.Loaded() {
		t.Error("hub down and no copy: a CA was loaded from nowhere")
	}
}
