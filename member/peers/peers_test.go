package peers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/peers"
)

// TestAsk serves two real peer endpoints over loopback HTTP, one in contact
// with the hub and one not, and asks them with a closed address and an
// endpoint answering under another cluster's name.
func TestAsk(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	in := contact.NewMonitor(clk, 15*time.Second)
	in.Attempt(clk.Now(), nil)
	out := contact.NewMonitor(clk, 15*time.Second)
	out.Restore(time.Minute, -1)
	west := httptest.NewServer(peers.Handler("west", in))
	defer west.Close()
	north := httptest.NewServer(peers.Handler("north", out))
	defer north.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	got := peers.Ask(context.Background(), peers.Plain(http.DefaultClient), peers.URLs{
		"west": {west.URL}, "north": {north.URL}, "south": {closedURL}, "liar": {west.URL},
	}, time.Second)
	errored := map[string]bool{}
	for i := range got {
		if got[i].Err != nil {
			errored[got[i].Cluster] = true
			got[i].Err = nil
		}
	}
	want := []peers.Result{
		{Cluster: "liar"},
		{Cluster: "north", Answer: peers.Answer{Cluster: "north", SinceContactSeconds: 60}},
		{Cluster: "south"},
		{Cluster: "west", Answer: peers.Answer{Cluster: "west", InContact: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ask (-want,+got):\n%s", diff)
	}
	if !errored["liar"] || !errored["south"] {
		t.Errorf("errors: %v, want liar and south", errored)
	}
}

// TestAnswerCountsOnlyRecentContact: a peer that reached the hub 10 s ago,
// within its 15 s timeout (in contact by its own measure), does not answer
// that it reaches the hub: in a hub outage it may have outlived the asker
// by one heartbeat period; only contact within half the timeout counts.
func TestAnswerCountsOnlyRecentContact(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := contact.NewMonitor(clk, 15*time.Second)
	m.Restore(10*time.Second, -1)
	if !m.Status().InContact {
		t.Fatal("10 s after contact with a 15 s timeout: not in contact by its own measure")
	}
	srv := httptest.NewServer(peers.Handler("west", m))
	defer srv.Close()
	got := peers.Ask(context.Background(), peers.Plain(http.DefaultClient), peers.URLs{"west": {srv.URL}}, time.Second)
	if len(got) != 1 || got[0].Err != nil || got[0].Answer.InContact || got[0].Answer.SinceContactSeconds != 10 {
		t.Errorf("answer %+v, want not in contact, 10 s since contact", got)
	}
	clk.Step(-4 * time.Second) // 6 s after contact: within half the timeout
	m2 := contact.NewMonitor(clk, 15*time.Second)
	m2.Restore(6*time.Second, -1)
	srv2 := httptest.NewServer(peers.Handler("west", m2))
	defer srv2.Close()
	got = peers.Ask(context.Background(), peers.Plain(http.DefaultClient), peers.URLs{"west": {srv2.URL}}, time.Second)
	if len(got) != 1 || !got[0].Answer.InContact {
		t.Errorf("answer %+v, want in contact (6 s < 7.5 s)", got)
	}
}

// TestAskFollowsNoRedirect: a peer that redirects the question is a failed
// answer; the client never asks the address it was sent to.
func TestAskFollowsNoRedirect(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	in := contact.NewMonitor(clk, 15*time.Second)
	in.Attempt(clk.Now(), nil)
	asked := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		peers.Handler("west", in).ServeHTTP(w, r)
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+peers.Path, http.StatusFound))
	defer redirector.Close()
	got := peers.Ask(context.Background(), peers.Plain(peers.NewClient()), peers.URLs{"west": {redirector.URL}}, time.Second)
	if len(got) != 1 || got[0].Err == nil || got[0].Answer.InContact {
		t.Fatalf("Ask through a redirect = %+v, want a failed answer", got)
	}
	select {
	case <-asked:
		t.Error("the client followed the redirect")
	default:
	}
}

// TestServeLimitsConnections: connections beyond MaxConnections wait, and
// one that sends nothing is closed by the server's read timeout; the
// endpoint then answers again.
func TestServeLimitsConnections(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	in := contact.NewMonitor(clk, 15*time.Second)
	in.Attempt(clk.Now(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers.Serve(ctx, ln, peers.Handler("west", in), nil)
	url := "http://" + ln.Addr().String()
	var idle []net.Conn
	for range peers.MaxConnections {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	got := peers.Ask(context.Background(), peers.Plain(peers.NewClient()), peers.URLs{"west": {url}}, 500*time.Millisecond)
	if got[0].Err == nil {
		t.Fatalf("answered with %d idle connections held: %+v, want the question to wait past its timeout", peers.MaxConnections, got[0])
	}
	start := time.Now()
	got = peers.Ask(context.Background(), peers.Plain(peers.NewClient()), peers.URLs{"west": {url}}, 5*time.Second)
	if got[0].Err != nil || !got[0].Answer.InContact {
		t.Fatalf("after the idle connections timed out: %+v, want an answer", got[0])
	}
	t.Logf("answered %s after the idle connections were dropped by the server", time.Since(start).Round(100*time.Millisecond))
	for _, c := range idle {
		_ = c.Close()
	}
}

// TestAskTriesEveryReplica: a peer whose member component runs two
// replicas answers through either; with the first replica down, the second
// answers for the cluster. No URL answering is a failed answer.
func TestAskTriesEveryReplica(t *testing.T) {
	m := contact.NewMonitor(clock.RealClock{}, time.Minute)
	m.Attempt(time.Now(), nil)
	up := httptest.NewServer(peers.Handler("west", m))
	defer up.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	got := peers.Ask(context.Background(), peers.Plain(peers.NewClient()), peers.URLs{"west": {downURL, up.URL}, "north": {downURL}}, time.Second)
	if len(got) != 2 || got[0].Cluster != "north" || got[0].Err == nil || got[1].Cluster != "west" || got[1].Err != nil || !got[1].Answer.InContact {
		t.Errorf("results %+v, want north failed and west answering in contact through its second replica", got)
	}
}
