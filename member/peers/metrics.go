package peers

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// refusedAnswers counts the answers (or handshakes) the asking member
// refused, by Refused reason.
var refusedAnswers = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "fleetset", Subsystem: "member", Name: "peer_answers_refused_total",
	Help:           "Peer answers the member refused, by reason: untrusted (certificate not from the fleet peer CA), identity (certificate of another cluster), nonce (answer without the question's nonce: replayed), cluster (answer naming another cluster), no-ca (no fleet peer CA loaded yet).",
	StabilityLevel: metrics.ALPHA,
}, []string{"reason"})

func init() { legacyregistry.MustRegister(refusedAnswers) }
