package contact

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var heartbeatFailures = metrics.NewCounter(&metrics.CounterOpts{
	Namespace:      "fleetset",
	Subsystem:      "member",
	Name:           "heartbeat_failures_total",
	Help:           "Heartbeats to the hub that failed (the hub's apiserver unreachable or refusing the write).",
	StabilityLevel: metrics.ALPHA,
})

func init() {
	legacyregistry.MustRegister(heartbeatFailures)
}
