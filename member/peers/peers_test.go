package peers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	out.Restore(time.Minute)
	west := httptest.NewServer(peers.Handler("west", in))
	defer west.Close()
	north := httptest.NewServer(peers.Handler("north", out))
	defer north.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	got := peers.Ask(context.Background(), http.DefaultClient, map[string]string{
		"west": west.URL, "north": north.URL, "south": closedURL, "liar": west.URL,
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
