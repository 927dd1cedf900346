//go:build integration

package member

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/internal/testing/netcut"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/peers"
)

// TestSilentPartitionFences cuts a member off the hub and its peer with a
// blackhole (netcut.Blackhole: every packet dropped both ways, connections
// left open and hanging, new ones never answered, as an iptables DROP does)
// and runs the member's real heartbeat (Heartbeat.Run over the hub client
// startFencing builds, through the proxy to a real kube-apiserver), Monitor
// and Guard. The member must never count a beat the hub did not answer
// (its last contact stays before the cut, the hub's Lease is not renewed),
// must lose the hub after its timeout and must reach Fenced one peer poll
// later; healed, it reaches the hub again.
func TestSilentPartitionFences(t *testing.T) {
	const timeout = 6 * time.Second
	period := timeout / 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// admin: the member's own apiserver and the test's view of the hub.
	hubLink, hub, admin := hubBehindLink(t, ctx, period)

	// The peer west, in contact with the hub, behind a link of its own.
	westMon := contact.NewMonitor(clock.RealClock{}, time.Hour)
	westMon.Attempt(time.Now(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peers.Serve(ctx, ln, peers.Handler("west", westMon), nil)
	peerLink, err := netcut.Start("127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peerLink.Close()

	clk := clock.RealClock{}
	mon := contact.NewMonitor(clk, timeout)
	g := &fence.Guard{Monitor: mon, Clock: clk, PeerPoll: fleetv1.FenceConfirmation(timeout), FrozenAfter: timeout,
		Peers: func(context.Context) (peers.URLs, error) {
			return peers.URLs{"west": {"http://" + peerLink.Addr()}}, nil
		},
		Ask: func(ctx context.Context, p peers.URLs) []peers.Result {
			return peers.Ask(ctx, peers.Plain(peers.NewClient()), p, min(2*time.Second, period))
		},
	}
	hb := &contact.Heartbeat{Cluster: "east", Identity: "east-scheduler", Hub: hub.CoordinationV1(), Local: admin.CoordinationV1(),
		Monitor: mon, Clock: clk, Period: period, Report: g.Report}
	go hb.Run(ctx)
	var mu sync.Mutex
	var verdict fence.Verdict
	go func() { // the Fencer's loop
		for ctx.Err() == nil {
			v, _ := g.Evaluate(ctx)
			mu.Lock()
			verdict = v
			mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
	}()
	state := func() fence.State {
		mu.Lock()
		defer mu.Unlock()
		return verdict.State
	}
	waitFor := func(what string, within time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				t.Fatalf("%s: not within %s (monitor %+v, verdict %s)", what, within, mon.Status(), state())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("in contact before the cut", 3*period, func() bool { return mon.Status().Known && state() == fence.InContact })
	time.Sleep(2 * period)

	lease := func() *metav1.MicroTime {
		l, err := admin.CoordinationV1().Leases("east").Get(ctx, fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime
	}
	hubLink.Blackhole()
	peerLink.Blackhole()
	cutAt := clk.Now()
	renewedBefore := lease()
	// The last contact never moves past the cut: nothing sent after it
	// reached the hub.
	toFenced := waitFor("Fenced after the blackhole", timeout+3*period+hubRequestTimeout(period), func() bool {
		s := mon.Status()
		if last := clk.Now().Add(-s.SinceContact); last.After(cutAt) {
			t.Fatalf("contact counted %s after the blackhole began: a beat the hub never received (monitor %+v)", last.Sub(cutAt), s)
		}
		return state() == fence.Fenced
	})
	s := mon.Status()
	if !s.Lost {
		t.Errorf("monitor when Fenced: %+v, want Lost", s)
	}
	t.Logf("blackholed: Fenced %s after the cut (timeout %s, period %s); last contact %s before the cut",
		toFenced.Round(100*time.Millisecond), timeout, period, (s.SinceContact - clk.Since(cutAt)).Round(10*time.Millisecond))
	if renewed := lease(); !renewed.Equal(renewedBefore) {
		t.Errorf("hub Lease renewed during the blackhole: %v → %v", renewedBefore, renewed)
	}
	// A few more beats through the hole change nothing.
	time.Sleep(2 * period)
	if st := mon.Status(); st.InContact || state() != fence.Fenced {
		t.Fatalf("two periods later: monitor %+v, verdict %s, want lost and Fenced", st, state())
	}

	if err := hubLink.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := peerLink.Heal(); err != nil {
		t.Fatal(err)
	}
	back := waitFor("in contact after the heal", 2*period+2*hubRequestTimeout(period)+5*time.Second, func() bool { return mon.Status().InContact })
	t.Logf("healed: in contact again %s after the heal", back.Round(100*time.Millisecond))
	if renewed := lease(); renewed.Equal(renewedBefore) {
		t.Error("hub Lease not renewed after the heal")
	}
}

// hubBehindLink starts a real kube-apiserver that plays both the hub and
// the member's own apiserver, with the namespaces east and
// v1alpha1.ResyncLeaseNamespace, and a netcut link to it: hub is the
// member's hub client (startFencing's, requests bounded to half of period)
// through the link, admin a clientset straight to the apiserver. Both stop
// with the test.
func hubBehindLink(t *testing.T, ctx context.Context, period time.Duration) (hubLink *netcut.Proxy, hub, admin kubernetes.Interface) {
	t.Helper()
	env, err := controlplane.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if hubLink, err = netcut.Start("127.0.0.1:0", u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hubLink.Close() })
	hubCfg := rest.CopyConfig(env.Config)
	hubCfg.Host = "https://" + hubLink.Addr()
	if hub, err = newHubClient(dedicatedHubConfig(hubCfg, hubRequestTimeout(period)), hubRequestTimeout(period)); err != nil {
		t.Fatal(err)
	}
	admin = kubernetes.NewForConfigOrDie(env.Config)
	for _, ns := range []string{"east", fleetv1.ResyncLeaseNamespace} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return hubLink, hub, admin
}
