package updater

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	podDeletions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "rollout_pod_deletions_total",
		Help: "Outdated pods the member deleted in a role-ordered rollout (SubsetPlacement spec.update) for their StatefulSet to create them at its update revision, " +
			"by the pod's role (its fleetset.io/role label; empty without one).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"role"})
	switchoverRequests = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "rollout_switchover_requests_total",
		Help:           "Outdated leader pods the member annotated fleetset.io/switchover-requested in a role-ordered rollout (spec.update.leader Switchover).",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(podDeletions, switchoverRequests)
}
