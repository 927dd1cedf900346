// Package fence decides whether a member cluster is cut off from the hub
// and stops the pods of its failover-protected placements when it is.
//
// The decision (Decide) is pure; the Guard keeps it over time (when the
// fence started, which placements stay fenced after the member returns) and
// answers the scheduler's gate; the Fencer deletes the running pods of a
// fenced member once their grace is over. The contract is in
// api/v1alpha1/member.go.
package fence

import (
	"fmt"
	"strings"
	"time"

	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/peers"
)

// State is the member's state towards the hub.
type State string

const (
	// InContact: the member reached the hub within its heartbeat timeout.
	InContact State = "InContact"
	// Holding: the member lost the hub but must not fence: the hub is down
	// for a majority of the members (full disruption), or the member has
	// not yet seen one of its own attempts fail. Every pod keeps running.
	Holding State = "Holding"
	// Fenced: the member is the one cut off (a peer still reaches the hub,
	// or no peer answers): failover-protected pods are not scheduled and
	// are stopped after their grace.
	Fenced State = "Fenced"
)

// Verdict is a decision and its reason.
type Verdict struct {
	State State
	// Reason says why, naming the peers heard and the time since contact.
	Reason string
	// Disruption is true for a Holding verdict of a full disruption.
	Disruption bool
	// PeersAnswered and PeersInContact count the answers (for metrics).
	PeersAnswered, PeersInContact int
}

// Decide returns the member's state from its own contact status and, when
// it has lost the hub, its peers' answers (results of every peer asked; the
// peers are every other member). The rule (api/v1alpha1/member.go):
//   - in contact: InContact;
//   - not in contact, but no own attempt has failed yet: Holding;
//   - lost, and no peer known at the last contact (s.NoPeers): Holding,
//     as the hub holds its relocation;
//   - lost, and a peer answers that it reaches the hub: Fenced;
//   - lost, and no peer answers (or the peers are unknown): Fenced;
//   - lost, and the members confirmed lost (this one and the peers that
//     answered lost) are more than half of all members: Holding;
//   - otherwise (too few confirmations for a full disruption): Fenced.
//
// The hub relocates nothing while more than half of the members are lost
// (by a shorter threshold than the members' own), so a Holding member's
// subsets never move.
func Decide(s contact.Status, results []peers.Result) Verdict {
	since := s.SinceContact.Round(time.Second)
	if s.InContact {
		return Verdict{State: InContact, Reason: fmt.Sprintf("reached the hub %s ago", since)}
	}
	if !s.Lost {
		return Verdict{State: Holding, Reason: fmt.Sprintf("no contact with the hub for %s, but no attempt of this process has failed yet", since)}
	}
	if s.NoPeers {
		return Verdict{State: Holding, Reason: fmt.Sprintf("no contact with the hub for %s and no peer known at the last contact: "+
			"isolation cannot be told from a hub outage, so the member holds (the hub does not relocate its subsets unless the cluster is marked out of service)", since)}
	}
	v := Verdict{}
	var lost, inContact, silent []string
	for _, r := range results {
		switch {
		case r.Err != nil:
			silent = append(silent, r.Cluster)
		case r.Answer.InContact:
			inContact = append(inContact, r.Cluster)
		default:
			lost = append(lost, r.Cluster)
		}
	}
	v.PeersAnswered, v.PeersInContact = len(lost)+len(inContact), len(inContact)
	members := len(results) + 1
	switch {
	case len(inContact) > 0:
		v.State = Fenced
		v.Reason = fmt.Sprintf("cut off: no contact with the hub for %s while peer(s) %s reach it", since, strings.Join(inContact, ","))
	case len(lost) == 0:
		v.State = Fenced
		v.Reason = fmt.Sprintf("isolated: no contact with the hub for %s and no peer answers (%d asked)", since, len(results))
	case 2*(len(lost)+1) > members:
		v.State, v.Disruption = Holding, true
		v.Reason = fmt.Sprintf("hub outage: no contact with the hub for %s, and peer(s) %s lost it too (%d of %d members): holding", since, strings.Join(lost, ","), len(lost)+1, members)
	default:
		v.State = Fenced
		v.Reason = fmt.Sprintf("cut off: no contact with the hub for %s; only %d of %d members confirm losing it (peers %s), %s silent", since, len(lost)+1, members, strings.Join(lost, ","), strings.Join(silent, ","))
	}
	return v
}
