package roles

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of probes.
const (
	resultOK          = "ok"
	resultUnknownRole = "unknown_role"
	resultFailed      = "failed"
)

var (
	probes = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "role_probes_total",
		Help: "Role probes of the instances of SubsetPlacements with spec.roles.probe, by result: " +
			"ok (answered one of the roles), unknown_role (answered another name; label left as it is), failed (error, timeout or non-2xx status).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	roleChanges = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "role_changes_total",
		Help: "Changes of the label fleetset.io/role of running instances of SubsetPlacements with spec.roles, as this member observed them " +
			"(set by its probes or by the workload), a first role included.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(probes, roleChanges)
}
