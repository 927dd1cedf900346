package heartbeat

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	heartbeatAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetset_hub_member_heartbeat_age_seconds",
		Help: "Seconds since the hub observed each member's last heartbeat, by ManagedCluster, by the hub's clock.",
	}, []string{"cluster"})
	membersLost = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetset_hub_members_lost",
		Help: "Members whose heartbeat the hub has not observed for half their timeout.",
	})
	membersCounted = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetset_hub_members",
		Help: "Members whose heartbeat the hub counts (clusters that are still members and have a heartbeat Lease): the count a member's peers (fleetset.io/member-peers) is one less than.",
	})
	fullDisruption = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fleetset_hub_full_disruption",
		Help: "1 while more than half of the members are lost at once: the hub relocates nothing.",
	})
)

func init() {
	metrics.Registry.MustRegister(heartbeatAge, membersLost, fullDisruption, membersCounted)
}
