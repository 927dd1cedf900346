//go:build integration

package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
)

// TestLiftNeedsPostReturnAck: a member that returns with a fence record
// lifts it only on a work the hub wrote after it read the member back. The
// member's real heartbeat reports its fence records; the hub stamps the
// renewTime it read on the member's works (fleetset.io/member-ack) at
// every beat while records remain, and stops once they are lifted. A work
// holding the placement without an acknowledgement of a heartbeat sent at
// or after the return confirms nothing.
func TestLiftNeedsPostReturnAck(t *testing.T) {
	createCluster(t, "ack-east", true)
	createCluster(t, "ack-west", true)
	createNamespace(t, "memberack")
	memberBeat(t, "ack-west")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	mon := contact.NewMonitor(clk, beatTimeout)
	var fenced atomic.Int64
	hb := &contact.Heartbeat{Cluster: "ack-east", Identity: "ack-east-member", PeerURL: "http://127.0.0.1:1/ack-east",
		Hub: cs.CoordinationV1(), Monitor: mon, Clock: clk, Period: beatTimeout / 6,
		Report: func() contact.Report {
			return contact.Report{State: "InContact", Peers: 1, FenceSeconds: -1, FencedPlacements: int(fenced.Load())}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hb.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		// No stale heartbeat is left for the next test's hub to count.
		_ = cs.CoordinationV1().Leases("ack-east").Delete(context.Background(), fleetv1.HeartbeatLeaseName, metav1.DeleteOptions{})
	})

	startHub(t, 3*time.Second)
	fs := pairFleetSet("memberack", "ack", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) { return len(works(t, "memberack", "db")) == 2, nil })
	returned := mon.Returned()
	if returned.IsZero() {
		t.Fatal("member never reached the hub")
	}
	const sp = "db-east"
	w := works(t, "memberack", "db")["ack-east"]
	if !fence.WorkHolds(w, "memberack", sp, 0) {
		t.Fatalf("work in ack-east does not hold %s with fencing", sp)
	}
	if fence.Confirms(w, "memberack", sp, 0, returned) {
		t.Fatalf("a work without an acknowledgement of the return (annotations %v) confirms the placement", w.Annotations)
	}

	// The member reports a fence record: the hub acknowledges its heartbeat.
	fenced.Store(1)
	eventually(t, 15*time.Second, "work acknowledges a heartbeat after the return", func() (bool, error) {
		return fence.Confirms(works(t, "memberack", "db")["ack-east"], "memberack", sp, 0, returned), nil
	})
	// A later return (the member lost and reached the hub again) needs a
	// later acknowledgement: the one it has is older.
	again := time.Now()
	if fence.Confirms(works(t, "memberack", "db")["ack-east"], "memberack", sp, 0, again) {
		t.Fatal("an acknowledgement older than the return confirms the placement")
	}
	eventually(t, 15*time.Second, "work acknowledges a heartbeat after the second return", func() (bool, error) {
		return fence.Confirms(works(t, "memberack", "db")["ack-east"], "memberack", sp, 0, again), nil
	})
	if w := works(t, "memberack", "db")["ack-west"]; w.Annotations[fleetv1.AnnotationMemberAck] != "" {
		t.Errorf("ack-west, whose member reports no fence record, acknowledged: %v", w.Annotations)
	}

	// Lifted: no more acknowledgements, no more writes.
	fenced.Store(0)
	time.Sleep(2 * hb.Period)
	rv := works(t, "memberack", "db")["ack-east"].ResourceVersion
	time.Sleep(4 * hb.Period)
	if got := works(t, "memberack", "db")["ack-east"].ResourceVersion; got != rv {
		t.Errorf("work in ack-east rewritten (%s → %s) after the member reported no fence record", rv, got)
	}
}
