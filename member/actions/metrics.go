package actions

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	runs = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "lifecycle_actions_total",
		Help: "Runs of lifecycle actions (all attempts of one run count once), by action and result: " +
			"success, failure (every attempt failed or timed out; the step holds), refused (the target is no instance of the placement, " +
			"or the container is not one of its template's; nothing ran).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"action", "result"})
	durations = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "lifecycle_action_duration_seconds",
		Help:           "Duration of runs of lifecycle actions, retries included, in seconds, by action.",
		Buckets:        []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		StabilityLevel: metrics.ALPHA,
	}, []string{"action"})
)

func init() {
	legacyregistry.MustRegister(runs, durations)
}
