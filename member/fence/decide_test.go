package fence_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/peers"
)

func answer(cluster string, inContact bool) peers.Result {
	return peers.Result{Cluster: cluster, Answer: peers.Answer{Cluster: cluster, InContact: inContact}}
}

func silent(cluster string) peers.Result {
	return peers.Result{Cluster: cluster, Err: errors.New("connection refused")}
}

// TestDecide covers the rule of api/v1alpha1/member.go, case by case.
func TestDecide(t *testing.T) {
	lost := contact.Status{SinceContact: 40 * time.Second, Known: true, Lost: true}
	noPeers := lost
	noPeers.NoPeers = true
	tests := []struct {
		name       string
		status     contact.Status
		results    []peers.Result
		want       fence.State
		disruption bool
		reason     string
	}{
		{name: "in contact", status: contact.Status{SinceContact: 3 * time.Second, Known: true, InContact: true}, want: fence.InContact,
			reason: "reached the hub 3s ago"},
		{name: "timed out but no own attempt failed yet (just started)", status: contact.Status{SinceContact: 70 * time.Second}, want: fence.Holding,
			reason: "no attempt of this process has failed yet"},
		{name: "lost, one peer of two still reaches the hub", status: lost, results: []peers.Result{answer("north", false), answer("west", true)},
			want: fence.Fenced, reason: "cut off: no contact with the hub for 40s while peer(s) west reach it"},
		{name: "lost, no peer answers", status: lost, results: []peers.Result{silent("north"), silent("west")},
			want: fence.Fenced, reason: "isolated: no contact with the hub for 40s and no peer answers (2 asked)"},
		{name: "lost, no peers asked (peers unknown)", status: lost, want: fence.Fenced, reason: "isolated"},
		// The safe default: a member that told the hub it knows no peer
		// holds, whatever the current peers say; the hub holds too.
		{name: "lost, no peer known at the last contact", status: noPeers, want: fence.Holding,
			reason: "no peer known at the last contact: isolation cannot be told from a hub outage"},
		{name: "lost, no peer at the last contact, one delivered since that reaches the hub", status: noPeers,
			results: []peers.Result{answer("west", true)}, want: fence.Holding, reason: "no peer known at the last contact"},
		{name: "lost, every peer lost the hub too: hub outage", status: lost, results: []peers.Result{answer("north", false), answer("west", false)},
			want: fence.Holding, disruption: true, reason: "hub outage: no contact with the hub for 40s, and peer(s) north,west lost it too (3 of 3 members): holding"},
		{name: "lost, one of two peers lost it, the other silent: 2 of 3 is a majority", status: lost, results: []peers.Result{answer("north", false), silent("west")},
			want: fence.Holding, disruption: true, reason: "(2 of 3 members)"},
		{name: "lost, one of four peers lost it, three silent: 2 of 5 is no majority", status: lost,
			results: []peers.Result{answer("a", false), silent("b"), silent("c"), silent("d")},
			want:    fence.Fenced, reason: "only 2 of 5 members confirm losing it (peers a), b,c,d silent"},
		{name: "lost, the only peer lost it too: 2 of 2", status: lost, results: []peers.Result{answer("west", false)},
			want: fence.Holding, disruption: true, reason: "(2 of 2 members)"},
		// An even number of members: exactly half is no majority (the
		// rule is "more than half"), so a member that cannot tell a hub
		// outage from its own cut with half the votes fences.
		{name: "lost, one of three peers lost it, two silent: 2 of 4 is no majority", status: lost,
			results: []peers.Result{answer("north", false), silent("south"), silent("west")},
			want:    fence.Fenced, reason: "only 2 of 4 members confirm losing it (peers north), south,west silent"},
		{name: "lost, two of three peers lost it, one silent: 3 of 4 is a majority", status: lost,
			results: []peers.Result{answer("north", false), answer("south", false), silent("west")},
			want:    fence.Holding, disruption: true, reason: "(3 of 4 members)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fence.Decide(tt.status, tt.results)
			if v.State != tt.want || v.Disruption != tt.disruption {
				t.Errorf("Decide = %s (disruption %v), want %s (disruption %v); reason %q", v.State, v.Disruption, tt.want, tt.disruption, v.Reason)
			}
			if !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", v.Reason, tt.reason)
			}
		})
	}
}
