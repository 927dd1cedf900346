// Package fencetest drives a real fence.Guard through its states on a fake
// clock, with the peers' answers chosen by the test: for the tests of the
// scheduler plugins and of the Fencer.
package fencetest

import (
	"context"
	"errors"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/peers"
)

// Timeout is the heartbeat timeout of a Driver's Monitor.
const Timeout = 15 * time.Second

// Driver is a Guard on a fake clock whose peers answer what the test says.
type Driver struct {
	Clock   *clocktesting.FakeClock
	Monitor *contact.Monitor
	Guard   *fence.Guard

	mu      sync.Mutex
	answers []peers.Result
}

// New returns a Driver whose member has just reached the hub (InContact
// once evaluated), at a fixed start time.
func New() *Driver {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	d := &Driver{Clock: clk, Monitor: contact.NewMonitor(clk, Timeout)}
	d.Guard = &fence.Guard{Monitor: d.Monitor, Clock: clk, PeerPoll: 0,
		Peers: func(context.Context) (peers.URLs, error) { return peers.URLs{}, nil },
		Ask: func(context.Context, peers.URLs) []peers.Result {
			d.mu.Lock()
			defer d.mu.Unlock()
			return append([]peers.Result(nil), d.answers...)
		},
	}
	d.Monitor.Attempt(clk.Now(), nil)
	return d
}

// SetPeers sets the peers' answers: each name in inContact reaches the hub,
// each in lost lost it, each in silent does not answer.
func (d *Driver) SetPeers(inContact, lost, silent []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers = nil
	for _, c := range inContact {
		d.answers = append(d.answers, peers.Result{Cluster: c, Answer: peers.Answer{Cluster: c, InContact: true}})
	}
	for _, c := range lost {
		d.answers = append(d.answers, peers.Result{Cluster: c, Answer: peers.Answer{Cluster: c}})
	}
	for _, c := range silent {
		d.answers = append(d.answers, peers.Result{Cluster: c, Err: errors.New("connection refused")})
	}
}

// Contact records a successful heartbeat now and evaluates.
func (d *Driver) Contact() fence.Verdict {
	d.Monitor.Attempt(d.Clock.Now(), nil)
	v, _ := d.Guard.Evaluate(context.Background())
	return v
}

// Lose advances the clock by after, records a failed heartbeat and
// evaluates.
func (d *Driver) Lose(after time.Duration) fence.Verdict {
	d.Clock.Step(after)
	d.Monitor.Attempt(d.Clock.Now(), errors.New("hub unreachable"))
	v, _ := d.Guard.Evaluate(context.Background())
	return v
}

// Fence drives the Guard to Fenced: a peer reaches the hub, the member has
// not for twice the timeout.
func (d *Driver) Fence() fence.Verdict {
	d.SetPeers([]string{"west"}, nil, nil)
	return d.Lose(2 * Timeout)
}

// Hold drives the Guard to Holding: both peers lost the hub too.
func (d *Driver) Hold() fence.Verdict {
	d.SetPeers(nil, []string{"west", "north"}, nil)
	return d.Lose(2 * Timeout)
}
