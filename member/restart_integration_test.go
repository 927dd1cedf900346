//go:build integration

package member

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/peers"
)

// TestRestartedMemberFences: a member component cut off from the hub stops
// (its process ends), and a new process starts after longer than the
// heartbeat timeout, once the hub is reachable again: the hub may have
// relocated its subsets meanwhile. The new process reads, from the record
// Lease the first one kept on the member's apiserver (last contact, and
// fleetset.io/member-alive written at every attempt, failed ones too), how
// long nothing watched, and fences on start as a thawed process does,
// though its first heartbeat succeeds.
func TestRestartedMemberFences(t *testing.T) {
	const timeout = 6 * time.Second
	period := timeout / 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// admin: the member's own apiserver.
	hubLink, hub, admin := hubBehindLink(t, ctx, period)
	clk := clock.RealClock{}
	record := func() *metav1.ObjectMeta {
		l, err := admin.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.MemberLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return &l.ObjectMeta
	}

	// The first process reaches the hub, is cut off, and stops.
	ctx1, stop1 := context.WithCancel(ctx)
	mon1 := contact.NewMonitor(clk, timeout)
	hb1 := &contact.Heartbeat{Cluster: "east", Identity: "east-1", Hub: hub.CoordinationV1(), Local: admin.CoordinationV1(),
		Monitor: mon1, Clock: clk, Period: period}
	done1 := make(chan struct{})
	go func() { defer close(done1); hb1.Run(ctx1) }()
	waitUntil(t, 3*period, "first process in contact", func() bool { return mon1.Status().InContact })
	hubLink.Blackhole()
	cut := clk.Now()
	aliveBefore := record().Annotations[fleetv1.AnnotationMemberAlive]
	waitUntil(t, 3*period+hubRequestTimeout(period), "a failed attempt recorded as run", func() bool {
		return record().Annotations[fleetv1.AnnotationMemberAlive] != aliveBefore
	})
	stop1()
	<-done1
	// Nothing runs for longer than the timeout, out of contact for more
	// than timeout + one confirmation.
	time.Sleep(time.Until(cut.Add(timeout + fleetv1.FenceConfirmation(timeout) + time.Second)))
	if err := hubLink.Heal(); err != nil {
		t.Fatal(err)
	}

	// The new process: heartbeat, Guard, and the Fencer's evaluations.
	mon := contact.NewMonitor(clk, timeout)
	g := &fence.Guard{Monitor: mon, Clock: clk, PeerPoll: fleetv1.FenceConfirmation(timeout), FrozenAfter: timeout,
		Peers: func(context.Context) (peers.URLs, error) { return peers.URLs{}, nil },
		Ask:   func(context.Context, peers.URLs) []peers.Result { return nil },
	}
	hb := &contact.Heartbeat{Cluster: "east", Identity: "east-2", Hub: hub.CoordinationV1(), Local: admin.CoordinationV1(),
		Monitor: mon, Clock: clk, Period: period, Report: g.Report, Restored: g.Restore}
	go hb.Run(ctx)
	var mu sync.Mutex
	var seen []fence.Verdict
	go func() {
		for ctx.Err() == nil {
			v, _ := g.Evaluate(ctx)
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
	}()
	waitUntil(t, 3*period+hubRequestTimeout(period), "new process in contact", func() bool { return mon.Status().InContact })
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var fenced *fence.Verdict
	for i := range seen {
		if seen[i].State == fence.Fenced {
			fenced = &seen[i]
		}
	}
	if fenced == nil {
		t.Fatalf("the restarted process never fenced (verdicts %v), though no process ran for %s while out of contact", seen, timeout)
	}
	if !strings.Contains(fenced.Reason, "restarted") {
		t.Errorf("fence reason %q does not say the member restarted", fenced.Reason)
	}
}

// waitUntil polls ok every 50 ms until it holds, or fails after within.
func waitUntil(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
