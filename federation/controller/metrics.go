package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// workWrites counts the hub's ManifestWork writes for FleetSets, by
	// operation (create, update, delete).
	workWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_manifestwork_writes_total",
		Help: "ManifestWork writes made for FleetSets, by operation (create, update, delete).",
	}, []string{"operation"})
	// leaseRenewals counts resync lease writes, by cluster.
	leaseRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_resync_lease_renewals_total",
		Help: "Resync lease ManifestWork writes (creations and renewals), by ManagedCluster.",
	}, []string{"cluster"})
)

func init() {
	metrics.Registry.MustRegister(workWrites, leaseRenewals)
}
