package fence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/fence/fencetest"
	"github.com/fleetset/fleetset/member/peers"
)

// TestGuardFenceStart: a fence that follows contact starts when the
// heartbeat timed out (last contact + timeout), so a member that restarts
// while cut off keeps its deadline; one that follows a full-disruption hold
// starts when the hold ends; it ends on contact.
func TestGuardFenceStart(t *testing.T) {
	d := fencetest.New()
	start := d.Clock.Now()
	if v := d.Contact(); v.State != fence.InContact {
		t.Fatalf("after contact: %s", v.State)
	}
	if v := d.Fence(); v.State != fence.Fenced { // 30 s later, a peer reaches the hub
		t.Fatalf("cut off: %s %q", v.State, v.Reason)
	}
	_, since := d.Guard.Current()
	if want := start.Add(fencetest.Timeout); !since.Equal(want) {
		t.Errorf("fence started at %s, want last contact + timeout %s", since, want)
	}
	d.Lose(10 * time.Second)
	if _, again := d.Guard.Current(); !again.Equal(since) {
		t.Errorf("fence start moved from %s to %s while still fenced", since, again)
	}
	if v := d.Contact(); v.State != fence.InContact {
		t.Fatalf("back in contact: %s", v.State)
	}
	if _, since := d.Guard.Current(); !since.IsZero() {
		t.Errorf("fence start %s kept after contact", since)
	}

	// A hub outage: hold; then the peers reach the hub again while this
	// member still does not: the fence starts now, not at the timeout.
	if v := d.Hold(); v.State != fence.Holding || !v.Disruption {
		t.Fatalf("hub outage: %s %q", v.State, v.Reason)
	}
	held := d.Clock.Now()
	d.SetPeers([]string{"west"}, []string{"north"}, nil)
	v := d.Lose(5 * time.Second)
	_, since = d.Guard.Current()
	if v.State != fence.Fenced || !since.Equal(held) {
		t.Errorf("after the outage: %s since %s, want Fenced since the hold was last seen %s", v.State, since, held)
	}
}

// TestGuardConfirmsBeforeFencing: a Fenced decision must hold for one
// PeerPoll, over a second round of questions. A peer that still reached the
// hub in the last seconds of its outage, and no longer does a poll later,
// makes the member hold, not fence; a peer that keeps reaching it fences
// the member, with the fence counted from last contact + timeout + poll.
func TestGuardConfirmsBeforeFencing(t *testing.T) {
	d := fencetest.New()
	d.Guard.PeerPoll = 5 * time.Second
	last := d.Clock.Now()
	d.SetPeers([]string{"west"}, nil, nil)
	if v := d.Lose(fencetest.Timeout); v.State != fence.Holding || !strings.Contains(v.Reason, "confirming") {
		t.Fatalf("first round says fenced: %s %q, want Holding while confirming", v.State, v.Reason)
	}
	d.SetPeers(nil, []string{"west"}, nil) // west's last contact has aged out too: a hub outage
	if v := d.Lose(5 * time.Second); v.State != fence.Holding || !v.Disruption {
		t.Errorf("second round: %s %q, want a full-disruption hold", v.State, v.Reason)
	}

	d = fencetest.New()
	d.Guard.PeerPoll = 5 * time.Second
	last = d.Clock.Now()
	d.SetPeers([]string{"west"}, nil, nil)
	d.Lose(fencetest.Timeout)
	v := d.Lose(5 * time.Second)
	_, since := d.Guard.Current()
	if want := last.Add(fencetest.Timeout + 5*time.Second); v.State != fence.Fenced || !since.Equal(want) {
		t.Errorf("confirmed: %s since %s, want Fenced since last contact + timeout + poll %s", v.State, since, want)
	}
}

// TestGuardClockSkew: the Guard reads only its own monotonic clock. A member
// whose wall clock is minutes off the hub's decides exactly as one in step:
// contact every few seconds keeps it in contact for an hour of steps, and
// the fence comes only after its own heartbeat timeout.
func TestGuardClockSkew(t *testing.T) {
	for _, skew := range []time.Duration{-5 * time.Minute, 0, 5 * time.Minute} {
		d := fencetest.New()
		d.Clock.SetTime(d.Clock.Now().Add(skew)) // the member's clock is off the hub's
		d.Contact()
		d.SetPeers([]string{"west"}, nil, nil)
		for i := 0; i < 720; i++ {
			d.Clock.Step(5 * time.Second)
			if v := d.Contact(); v.State != fence.InContact {
				t.Fatalf("skew %s: step %d: %s", skew, i, v.State)
			}
		}
		if v := d.Lose(fencetest.Timeout - time.Second); v.State == fence.Fenced {
			t.Errorf("skew %s: fenced %s after contact, before the timeout %s", skew, fencetest.Timeout-time.Second, fencetest.Timeout)
		}
		if v := d.Lose(time.Second); v.State != fence.Fenced {
			t.Errorf("skew %s: %s at the timeout, want Fenced", skew, v.State)
		}
	}
}

// TestGuardAsksPeersOnlyWhenLost: no question while in contact; at most one
// round per PeerPoll while lost.
func TestGuardAsksPeersOnlyWhenLost(t *testing.T) {
	d := fencetest.New()
	asked := 0
	ask := d.Guard.Ask
	d.Guard.Ask = func(ctx context.Context, p peers.URLs) []peers.Result {
		asked++
		return ask(ctx, p)
	}
	d.Guard.PeerPoll = 5 * time.Second
	for i := 0; i < 10; i++ {
		d.Clock.Step(time.Second)
		d.Contact()
	}
	if asked != 0 {
		t.Fatalf("asked the peers %d times while in contact", asked)
	}
	d.SetPeers([]string{"west"}, nil, nil)
	d.Lose(fencetest.Timeout)
	for i := 0; i < 9; i++ {
		d.Lose(time.Second)
	}
	if asked != 2 {
		t.Errorf("asked %d rounds in 10 s lost with a 5 s poll, want 2", asked)
	}
}

// TestGuardNoPeersHolds: the Guard counts the peers while in contact for
// the heartbeat to report; a member whose last successful heartbeat
// reported none holds when it loses the hub, even if a peer delivered since
// says the hub is up, because the hub, holding the same count, does not
// relocate its subsets.
func TestGuardNoPeersHolds(t *testing.T) {
	d := fencetest.New()
	if r := d.Guard.Report(); r.Peers != -1 {
		t.Errorf("Report before any count: peers %d, want -1 (unknown)", r.Peers)
	}
	d.Contact()
	r := d.Guard.Report()
	if r.Peers != 0 || r.State != string(fence.InContact) {
		t.Fatalf("Report in contact with an empty peers ConfigMap: %+v, want InContact and 0 peers", r)
	}
	d.Monitor.AttemptReporting(d.Clock.Now(), nil, r.Peers) // the heartbeat that carried it
	d.SetPeers([]string{"west"}, nil, nil)
	for range 3 {
		if v := d.Lose(Timeout()); v.State != fence.Holding || !strings.Contains(v.Reason, "no peer known at the last contact") {
			t.Fatalf("lost with no peer at the last contact: %s %q, want Holding", v.State, v.Reason)
		}
	}
	// Back in contact, a beat that reports a peer: the next cut fences.
	d.Monitor.AttemptReporting(d.Clock.Now(), nil, 1)
	if v := d.Fence(); v.State != fence.Fenced {
		t.Errorf("cut off after reporting a peer: %s %q, want Fenced", v.State, v.Reason)
	}
}

// Timeout is fencetest's heartbeat timeout.
func Timeout() time.Duration { return fencetest.Timeout }

// TestGuardFencesOnThaw: a member frozen whole (no evaluation, no
// heartbeat) for longer than timeout + poll may have been relocated
// meanwhile. On resume, even when a heartbeat succeeded before the first
// evaluation, it is Fenced, counted from its last contact before the
// freeze; a shorter freeze, or a hub outage it observed and held through,
// fences nothing.
func TestGuardFencesOnThaw(t *testing.T) {
	d := fencetest.New()
	d.Guard.PeerPoll = 5 * time.Second
	d.Guard.FrozenAfter = fencetest.Timeout
	if v := d.Contact(); v.State != fence.InContact {
		t.Fatalf("after contact: %s", v.State)
	}
	last := d.Clock.Now()
	// Frozen 2 minutes: nothing runs; then the heartbeat wins the race.
	d.Clock.Step(2 * time.Minute)
	v := d.Contact()
	_, since := d.Guard.Current()
	if v.State != fence.Fenced || !strings.Contains(v.Reason, "did not run") {
		t.Fatalf("thawed after 2m: %s %q, want Fenced", v.State, v.Reason)
	}
	if want := last.Add(fencetest.Timeout + 5*time.Second); !since.Equal(want) {
		t.Errorf("fence counted from %s, want last contact + timeout + poll %s", since, want)
	}
	// The next evaluation, in contact, is InContact (the Fencer lifts its
	// records only on the hub's confirmation).
	d.Clock.Step(time.Second)
	if v := d.Contact(); v.State != fence.InContact {
		t.Errorf("a second later, in contact: %s", v.State)
	}

	// Frozen 18 s (over the timeout, under timeout + poll): the hub cannot
	// have relocated; nothing fences.
	d.Clock.Step(18 * time.Second)
	if v := d.Contact(); v.State != fence.InContact {
		t.Errorf("thawed after 18s: %s %q, want InContact", v.State, v.Reason)
	}

	// A hub outage observed every second for 2 minutes: held, and when the
	// hub returns nothing fences.
	d.SetPeers(nil, []string{"west", "north"}, nil)
	for range 120 {
		d.Lose(time.Second)
	}
	if v := d.Contact(); v.State != fence.InContact {
		t.Errorf("after an observed hub outage: %s %q, want InContact", v.State, v.Reason)
	}
}

// TestGuardFencesOnRestart: a member component that starts (a new process)
// after no process of it ran for longer than the timeout, while its last
// contact is older than timeout + poll (its record, Restore), fences on its
// first evaluation even when its first heartbeat reaches the hub, as a
// thawed process does; one that starts after a short gap (a rollout)
// continues the observation, and a hub outage its peers confirm still
// holds.
func TestGuardFencesOnRestart(t *testing.T) {
	d := fencetest.New()
	d.Guard.PeerPoll = 5 * time.Second
	d.Guard.FrozenAfter = fencetest.Timeout
	// The previous process last ran 2 minutes ago, last reached the hub 3
	// minutes ago; this one's first heartbeat succeeds.
	d.Guard.Restore(2*time.Minute, 3*time.Minute)
	start := d.Clock.Now()
	v := d.Contact()
	_, since := d.Guard.Current()
	if v.State != fence.Fenced || !strings.Contains(v.Reason, "restarted") {
		t.Fatalf("started after a 2m gap, 3m out of contact: %s %q, want Fenced", v.State, v.Reason)
	}
	if want := start.Add(-3*time.Minute + fencetest.Timeout + 5*time.Second); !since.Equal(want) {
		t.Errorf("fence counted from %s, want the previous process's last contact + timeout + poll %s", since, want)
	}

	// A rollout: the previous process ran a second ago, through a hub
	// outage its peers confirm; the new one holds.
	d = fencetest.New()
	d.Guard.PeerPoll = 5 * time.Second
	d.Guard.FrozenAfter = fencetest.Timeout
	d.SetPeers(nil, []string{"west", "north"}, nil)
	d.Monitor.Restore(3*time.Minute, 2)
	d.Guard.Restore(time.Second, 3*time.Minute)
	for range 40 {
		if v = d.Lose(time.Second); v.State == fence.Fenced {
			t.Fatalf("restarted at once during a hub outage the peers confirm: %s %q, want Holding", v.State, v.Reason)
		}
	}
	if v.State != fence.Holding || !v.Disruption {
		t.Errorf("40 s into the outage: %s %q, want Holding (full disruption)", v.State, v.Reason)
	}
}

// TestGuardAllows: a failover-protected placement (spec.fencing) may not be
// scheduled while the member is Fenced, nor, back in contact, while it
// carries a fence record at or above its spec.fencing.epoch (the hub has not
// confirmed it here yet; an unreadable record counts as one); a record below
// the delivered epoch (the hub moved the subset on since) and a placement
// without fencing allow.
func TestGuardAllows(t *testing.T) {
	placement := func(fencing bool, record string) *fleetv1.SubsetPlacement {
		sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east"}}
		if fencing {
			sp.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: 10, Epoch: 3}
		}
		if record != "" {
			sp.Annotations = map[string]string{fleetv1.AnnotationFencedEpoch: record}
		}
		return sp
	}
	d := fencetest.New()
	if v := d.Contact(); v.State != fence.InContact {
		t.Fatalf("after contact: %s", v.State)
	}
	for _, tc := range []struct {
		name    string
		sp      *fleetv1.SubsetPlacement
		allowed bool
		reason  string
	}{
		{"no fencing", placement(false, ""), true, ""},
		{"fencing, no record", placement(true, ""), true, ""},
		{"record at the delivered epoch", placement(true, "3"), false, "fenced at epoch 3 while cut off; waiting for the hub to confirm"},
		{"record above the delivered epoch", placement(true, "4"), false, "fenced at epoch 4"},
		{"unreadable record", placement(true, "x"), false, "waiting for the hub to confirm"},
		{"record below the delivered epoch", placement(true, "2"), true, ""},
	} {
		t.Run("in contact, "+tc.name, func(t *testing.T) {
			ok, why := d.Guard.Allows(tc.sp)
			if ok != tc.allowed || !strings.Contains(why, tc.reason) {
				t.Errorf("Allows = %v %q, want %v %q", ok, why, tc.allowed, tc.reason)
			}
		})
	}
	d.SetPeers([]string{"west"}, nil, nil)
	if v := d.Lose(fencetest.Timeout); v.State != fence.Fenced {
		t.Fatalf("cut off: %s %q", v.State, v.Reason)
	}
	if ok, why := d.Guard.Allows(placement(true, "")); ok || !strings.Contains(why, "cut off") {
		t.Errorf("Fenced, placement with fencing: Allows = %v %q, want refused with the verdict's reason", ok, why)
	}
	if ok, _ := d.Guard.Allows(placement(false, "")); !ok {
		t.Error("Fenced, placement without fencing: refused, want allowed")
	}
}
