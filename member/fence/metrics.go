package fence

import (
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fleetset/fleetset/member/contact"
)

var (
	stateGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "state",
		Help:           "1 for the member's current state towards the hub (state: InContact, Holding, Fenced), 0 for the others.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"state"})
	contactAge = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "hub_contact_age_seconds",
		Help:           "Seconds since the member last reached the hub (its last successful heartbeat was sent), by its monotonic clock.",
		StabilityLevel: metrics.ALPHA,
	})
	peersAnswered = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "peers_reachable",
		Help:           "Peers that answered the member's last round of questions (asked only while it has lost the hub).",
		StabilityLevel: metrics.ALPHA,
	})
	peersInContact = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "peers_in_contact",
		Help:           "Peers that answered, in the member's last round, that they reach the hub.",
		StabilityLevel: metrics.ALPHA,
	})
	fencedPods = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "fenced_pods_total",
		Help:           "Pods of failover-protected placements the member deleted because it was fenced.",
		StabilityLevel: metrics.ALPHA,
	})
	thaws = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "thaw_fences_total",
		Help:           "Times the member fenced on resuming after its process did not run for longer than the heartbeat timeout (frozen, suspended) while out of contact with the hub long enough to have been relocated.",
		StabilityLevel: metrics.ALPHA,
	})
	restartFences = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "restart_fences_total",
		Help:           "Times the member component fenced on start because, as its record says, no process of it ran for longer than the heartbeat timeout while the member was out of contact with the hub long enough to have been relocated.",
		StabilityLevel: metrics.ALPHA,
	})
	epochHeld = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "epoch_held_placements",
		Help:           "SubsetPlacements delivered at a fencing epoch below the highest this member has run them at, whose pods it holds (never scheduled).",
		StabilityLevel: metrics.ALPHA,
	})
	fencedPlacements = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "fenced_placements",
		Help:           "SubsetPlacements carrying a fence record the hub has not yet confirmed.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(stateGauge, contactAge, peersAnswered, peersInContact, fencedPods, thaws, restartFences, fencedPlacements, epochHeld)
}

// setStateMetrics publishes a verdict and the contact status.
func setStateMetrics(v Verdict, s contact.Status) {
	for _, st := range []State{InContact, Holding, Fenced} {
		val := 0.0
		if st == v.State {
			val = 1
		}
		stateGauge.WithLabelValues(string(st)).Set(val)
	}
	contactAge.Set(s.SinceContact.Round(time.Millisecond).Seconds())
	if !s.Lost {
		return
	}
	peersAnswered.Set(float64(v.PeersAnswered))
	peersInContact.Set(float64(v.PeersInContact))
}
