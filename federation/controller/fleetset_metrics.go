package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var (
	// fleetSetDegraded is 1 for a FleetSet whose Degraded condition is True,
	// labelled with its reason; a FleetSet not Degraded has no series.
	fleetSetDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetset_hub_fleetset_degraded",
		Help: "1 while a FleetSet's Degraded condition is True, by FleetSet namespace/name and the condition's reason; no series while it is not Degraded.",
	}, []string{"namespace", "fleetset", "reason"})
	// rolloutBlocked is 1 while a FleetSet's rollout is blocked
	// (Progressing RolloutBlocked: no progress past
	// progressDeadlineSeconds, an updating subset's cluster unavailable, or
	// a Required switchover held), else 0.
	rolloutBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetset_hub_rollout_blocked",
		Help: "1 while a FleetSet's rollout is blocked (Progressing RolloutBlocked: no progress past progressDeadlineSeconds, an updating subset's cluster unavailable, or a Required switchover held), else 0; by FleetSet namespace/name.",
	}, []string{"namespace", "fleetset"})
)

func init() {
	metrics.Registry.MustRegister(fleetSetDegraded, rolloutBlocked)
}

// observeConditions sets FleetSet key's gauges from the conditions of
// status: Degraded (its reason's series only) and RolloutBlocked.
func observeConditions(key types.NamespacedName, status *fleetv1.FleetSetStatus) {
	fleetSetDegraded.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "fleetset": key.Name})
	if c := apimeta.FindStatusCondition(status.Conditions, fleetv1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
		fleetSetDegraded.WithLabelValues(key.Namespace, key.Name, c.Reason).Set(1)
	}
	blocked := 0.0
	if c := apimeta.FindStatusCondition(status.Conditions, fleetv1.ConditionProgressing); c != nil && c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonRolloutBlocked {
		blocked = 1
	}
	rolloutBlocked.WithLabelValues(key.Namespace, key.Name).Set(blocked)
}

// forgetConditions removes the gauges of FleetSet key, which is gone.
func forgetConditions(key types.NamespacedName) {
	fleetSetDegraded.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "fleetset": key.Name})
	rolloutBlocked.DeleteLabelValues(key.Namespace, key.Name)
}
