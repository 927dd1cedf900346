package fence

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/peers"
)

// Guard keeps the member's Verdict over time: it asks the peers (at most
// once per PeerPoll, and only while the member has lost the hub), notes when
// the fence started, and answers the scheduler's gate. Safe for concurrent
// use; Evaluate is called by one loop (the Fencer's).
type Guard struct {
	// Monitor is the member's contact with the hub.
	Monitor *contact.Monitor
	// Clock is the Monitor's clock.
	Clock clock.PassiveClock
	// Peers returns the other members' URLs (cluster → the URLs of its
	// replicas), as the hub currently lists them; an error is treated as no
	// peers known.
	Peers func(ctx context.Context) (peers.URLs, error)
	// Ask asks the peers (peers.Ask with the member's HTTP client).
	Ask func(ctx context.Context, peers peers.URLs) []peers.Result
	// PeerPoll is the least time between two rounds of questions, and how
	// long a Fenced decision must hold before the member fences: one
	// heartbeat period (v1alpha1.FenceConfirmation).
	PeerPoll time.Duration
	// FrozenAfter is how long without an evaluation means the process did
	// not run (frozen whole, suspended): on resuming, the member fences as
	// it would have (thawed). The Fencer evaluates every second; the member
	// component sets the heartbeat timeout. 0: never.
	FrozenAfter time.Duration
	// Epochs, when set, is the member's record of the highest epoch it ran
	// each placement at: a placement delivered below it is held (Allows).
	Epochs *Epochs

	mu          sync.Mutex
	verdict     Verdict
	fencedSince time.Time
	// candidate is when Decide first said Fenced in the current streak.
	candidate time.Time
	// disruptionEnd is the last time Decide found a full disruption.
	disruptionEnd time.Time
	asked         time.Time
	results       []peers.Result
	listeners     []func()
	// known is how many peers the last successful read of Peers returned
	// (valid when knownOK), tried at most once per PeerPoll; counted is when.
	known   int
	knownOK bool
	counted time.Time
	// restarted is true while evaluated and lastContact come from the
	// previous process (Restore), not from an evaluation of this one.
	restarted bool
	// evaluated is when Evaluate last ran, and lastContact the member's
	// last contact with the hub as that evaluation saw it: a gap in the
	// evaluations longer than the timeout means the process did not run
	// (frozen, suspended), and the contact before it is lastContact.
	evaluated, lastContact time.Time
}

// Evaluate decides the member's state now, asking the peers when the
// member has lost the hub and the last round is older than PeerPoll, and
// returns it with the time the fence started (zero unless Fenced).
//
// A Fenced decision must hold for one PeerPoll, over a second round of
// questions, before the member is Fenced; until then it is Holding
// ("confirming"). A peer that reached the hub in the last seconds of a
// failing hub (an apiserver shutting down still serves the connections it
// has) no longer reaches it a poll later, and the member holds instead.
//
// The fence starts when it was confirmed and no earlier than the heartbeat
// timeout + one PeerPoll after the last contact, so a restarted member keeps
// the deadline it had; after a full-disruption hold, one PeerPoll after the
// hold ended (time for this member's own next heartbeat, which ends the
// fence if it succeeds). The hub counts from its own observation of the
// last heartbeat, or the end of the disruption, with the whole timeout +
// one heartbeat period (FenceConfirmation) + the graces + a margin
// (api/v1alpha1/member.go). Listeners (OnChange) run when the state
// changes.
func (g *Guard) Evaluate(ctx context.Context) (Verdict, time.Time) {
	// Reading and asking the peers never holds the evaluation longer than a
	// poll: a hung request fails and the peers count as silent.
	wait := g.PeerPoll
	if wait <= 0 {
		wait = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s := g.Monitor.Status()
	var results []peers.Result
	if s.Lost {
		results = g.peerResults(ctx)
	} else {
		g.countPeers(ctx)
	}
	v := Decide(s, results)
	now := g.Clock.Now()
	if v, since, ok := g.thawed(s, now); ok {
		return v, since
	}
	g.mu.Lock()
	prev := g.verdict
	switch {
	case v.State != Fenced:
		g.candidate = time.Time{}
		if v.State == Holding && v.Disruption {
			g.disruptionEnd = now
		}
	case g.candidate.IsZero():
		g.candidate = now
	}
	if v.State == Fenced && now.Sub(g.candidate) < g.PeerPoll {
		v.State = Holding
		v.Reason = fmt.Sprintf("confirming over one more round of peers before fencing: %s", v.Reason)
	}
	g.verdict = v
	switch {
	case v.State != Fenced:
		g.fencedSince = time.Time{}
	case prev.State == Fenced:
	default:
		lastContact := now.Add(-s.SinceContact)
		g.fencedSince = lastContact.Add(g.Monitor.Timeout() + g.PeerPoll)
		if after := g.disruptionEnd.Add(g.PeerPoll); g.disruptionEnd.After(lastContact) && after.After(g.fencedSince) {
			g.fencedSince = after
		}
	}
	since := g.fencedSince
	var fire []func()
	if prev.State != v.State {
		fire = append(fire, g.listeners...)
	}
	g.mu.Unlock()

	setStateMetrics(v, s)
	for _, fn := range fire {
		fn()
	}
	return v, since
}

// Restore tells the Guard of the process before this one, from the
// member's own record (contact.Heartbeat's Restored): it last ran
// sinceAlive ago and last reached the hub sinceContact ago. The first
// evaluation then judges the gap as it judges a thaw (thawed): a process
// restarted after more than FrozenAfter without any process running, while
// out of contact for at least the timeout + PeerPoll, fences at once, its
// records kept until the hub confirms its placements, whatever the first
// heartbeat of the new process finds. A restart after a shorter gap (a
// rollout, a crash restarted at once) continues the observation: a hub
// outage the peers confirm still holds. It changes nothing once this
// process has evaluated with a contact of its own.
func (g *Guard) Restore(sinceAlive, sinceContact time.Duration) {
	now := g.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.evaluated.IsZero() && !g.restarted && g.lastContact.After(now.Add(-sinceContact)) {
		return
	}
	g.evaluated, g.lastContact, g.restarted = now.Add(-sinceAlive), now.Add(-sinceContact), true
}

// thawed handles the first evaluation after the process did not run for
// longer than the heartbeat timeout (frozen whole, suspended) while the
// member was out of contact for at least timeout + PeerPoll: the hub may
// have relocated its subsets meanwhile, and the heartbeat that may already
// have succeeded since says nothing of that. The member fences as it would
// have had it run: Fenced, counted from its last contact before the gap +
// timeout + PeerPoll, so the Fencer at once deletes the pods whose fence
// grace is over, and the fence records stay until the hub confirms the
// placements are still this cluster's (a later evaluation in contact lifts
// nothing by itself). It reports false, changing nothing, otherwise.
// Without the gap in evaluations the member was observing: a hub outage it
// held through is never a reason to fence.
func (g *Guard) thawed(s contact.Status, now time.Time) (Verdict, time.Time, bool) {
	g.mu.Lock()
	timeout := g.Monitor.Timeout()
	prevEval, prevContact, restarted := g.evaluated, g.lastContact, g.restarted
	g.evaluated, g.restarted = now, false
	// After a restart prevContact is the previous process's last contact: a
	// contact this process has just made says nothing of the gap.
	if s.Known {
		g.lastContact = now.Add(-s.SinceContact)
	}
	if g.FrozenAfter <= 0 || prevEval.IsZero() || prevContact.IsZero() || now.Sub(prevEval) <= g.FrozenAfter || g.verdict.State == Fenced ||
		now.Sub(prevContact) < timeout+g.PeerPoll {
		g.mu.Unlock()
		return Verdict{}, time.Time{}, false
	}
	what := "this process did not run for %s (frozen or suspended)"
	if restarted {
		what = "no process of the member component ran for %s (restarted, as its record says)"
	}
	v := Verdict{State: Fenced, Reason: fmt.Sprintf(what+" while out of contact with the hub for %s: fencing as it would have, until the hub confirms its placements",
		now.Sub(prevEval).Round(time.Second), now.Sub(prevContact).Round(time.Second))}
	g.verdict, g.candidate = v, time.Time{}
	g.fencedSince = prevContact.Add(timeout + g.PeerPoll)
	since, fire := g.fencedSince, g.listeners
	g.mu.Unlock()
	if restarted {
		restartFences.Inc()
	} else {
		thaws.Inc()
	}
	setStateMetrics(v, s)
	for _, fn := range fire {
		fn()
	}
	return v, since, true
}

// peerResults asks the peers, or returns the last round's results when it
// is younger than PeerPoll.
func (g *Guard) peerResults(ctx context.Context) []peers.Result {
	now := g.Clock.Now()
	g.mu.Lock()
	if !g.asked.IsZero() && now.Sub(g.asked) < g.PeerPoll {
		r := g.results
		g.mu.Unlock()
		return r
	}
	g.mu.Unlock()
	urls, err := g.Peers(ctx)
	if err != nil {
		urls = nil
	}
	r := g.Ask(ctx, urls)
	g.mu.Lock()
	g.asked, g.results = now, r
	g.mu.Unlock()
	return r
}

// countPeers reads the peers, at most once per PeerPoll, for the heartbeat
// to report (Report); a failed read keeps the last count.
func (g *Guard) countPeers(ctx context.Context) {
	now := g.Clock.Now()
	g.mu.Lock()
	due := g.counted.IsZero() || now.Sub(g.counted) >= g.PeerPoll
	g.mu.Unlock()
	if !due {
		return
	}
	urls, err := g.Peers(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.counted = now
	if err == nil {
		g.known, g.knownOK = len(urls), true
	}
}

// Report is what the heartbeat tells the hub: the last Verdict and the
// peers known (see contact.Report).
func (g *Guard) Report() contact.Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	peers := -1
	if g.knownOK {
		peers = g.known
	}
	return contact.Report{State: string(g.verdict.State), Reason: g.verdict.Reason, Peers: peers, FenceSeconds: -1, FencedPlacements: -1}
}

// Current returns the last Verdict and when the fence started.
func (g *Guard) Current() (Verdict, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.verdict, g.fencedSince
}

// OnChange registers fn to run after every change of state, and after a
// placement's fence is lifted (see Lifted).
func (g *Guard) OnChange(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listeners = append(g.listeners, fn)
}

// Lifted runs the listeners: a placement's fence record was removed.
func (g *Guard) Lifted() {
	g.mu.Lock()
	fire := append([]func(){}, g.listeners...)
	g.mu.Unlock()
	for _, fn := range fire {
		fn()
	}
}

// Allows reports whether the pods of placement sp may be scheduled now, and
// why not: a placement without spec.fencing always may; one with it may not
// while the member is Fenced, nor while it carries a fence record
// (AnnotationFencedEpoch) at or above its spec.fencing.epoch — the member
// fenced it and the hub has not yet confirmed it here — nor, whatever the
// state, while its spec.fencing.epoch is below the highest this member has
// run it at (Epochs: a hub whose state is older than what ran). Holding
// allows.
func (g *Guard) Allows(sp *fleetv1.SubsetPlacement) (bool, string) {
	if sp.Spec.Fencing == nil {
		return true, ""
	}
	if below, h := g.Epochs.Below(sp); below {
		return false, fmt.Sprintf("delivered at epoch %d, below epoch %d this member has run it at (ConfigMap %s/%s): epochs are fencing tokens, and the hub's state is older than what ran (a hub restored from a backup?); held until the hub delivers it at epoch %d or above",
			sp.Spec.Fencing.Epoch, h, fleetv1.ResyncLeaseNamespace, EpochsConfigMapName, h)
	}
	g.mu.Lock()
	v := g.verdict
	g.mu.Unlock()
	if v.State == Fenced {
		return false, v.Reason
	}
	if e, ok := FencedEpoch(sp); ok && e >= sp.Spec.Fencing.Epoch {
		return false, fmt.Sprintf("fenced at epoch %d while cut off; waiting for the hub to confirm the placement here", e)
	}
	return true, ""
}

// FencedEpoch returns the epoch of sp's fence record, and whether it has a
// valid one.
func FencedEpoch(sp *fleetv1.SubsetPlacement) (int64, bool) {
	s, ok := sp.Annotations[fleetv1.AnnotationFencedEpoch]
	if !ok {
		return 0, false
	}
	e, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64, true // a record we cannot read fences until it is lifted
	}
	return e, true
}
