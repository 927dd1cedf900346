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
	// tenantWrites counts the tenant controller's writes of tenant works
	// (each namespace's executor in each cluster), by operation (create,
	// update, restore: written back after someone else changed it, delete)
	// and result (ok, error).
	tenantWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_tenant_work_writes_total",
		Help: "Tenant ManifestWork writes (a namespace's executor in a cluster), by operation (create, update, restore, delete) and result (ok, error).",
	}, []string{"operation", "result"})
	// relocations counts subset moves decided, by step.
	relocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_relocations_total",
		Help: "Subset moves decided, by step: FailedOver (relocated from a lost cluster), FailingBack, FailedBack, Moved (spec cluster edited).",
	}, []string{"step"})
	// degradedReports counts FleetSets reported Degraded (the condition
	// turned True or its reason or message changed), by reason: e.g.
	// ClusterNotBound, PodSecurityViolation, InvalidFeedback, ApplyFailed,
	// PlacementEmpty, RelocationHeld.
	degradedReports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_degraded_reports_total",
		Help: "FleetSets reported Degraded (condition turned True, or its reason or message changed), by reason.",
	}, []string{"reason"})
	// staleReads counts reconciles that were about to write ManifestWorks
	// from a cached FleetSet older than the apiserver's, and wrote nothing.
	staleReads = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetset_hub_stale_fleetset_reads_total",
		Help: "Reconciles that found, before writing ManifestWorks, that the cached FleetSet was older than the apiserver's, and wrote nothing (retried once the cache catches up).",
	})
	// workConflicts counts ManifestWork writes refused as a conflict, by
	// reason: conflict (an update at an older resourceVersion),
	// already_exists (a create of a work the cache lacks), foreign (a
	// create refused because a work of that name exists that is not the
	// FleetSet's: not retried, an ApplyFailed problem).
	workConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fleetset_hub_manifestwork_write_conflicts_total",
		Help: "ManifestWork writes the apiserver refused as a conflict, by reason: conflict (the work changed after the cached copy, most often by the work agent's status update) and already_exists (created meanwhile) run the reconcile again once the cache holds the change; foreign (a work of that name exists and is not the FleetSet's) is an ApplyFailed problem, retried every 30 s.",
	}, []string{"reason"})
	// relocationHolds counts relocations that were due and held.
	relocationHolds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetset_hub_relocation_holds_total",
		Help: "Relocations held back (full disruption, a FleetSet's majority lost, or no member heartbeat), counted once per subset and reason.",
	})
	// memberAcks counts acknowledgements of a returned member's heartbeat
	// stamped on its works (v1alpha1.AnnotationMemberAck).
	memberAcks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetset_hub_member_acks_total",
		Help: "Reconciles that acknowledged, in a member's ManifestWork, the heartbeat of a member reporting fence records not yet lifted (the member lifts them only on such an acknowledgement of a heartbeat sent after its return).",
	})
	// departedLeases counts heartbeat Leases forgotten because their cluster
	// is no longer a member.
	departedLeases = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetset_hub_departed_member_leases_deleted_total",
		Help: "Heartbeat Leases the hub deleted because their cluster is no longer a member (ManagedCluster deleted, or the fleetset add-on disabled); their peer URLs are no longer delivered and they no longer count as members.",
	})
)

func init() {
	metrics.Registry.MustRegister(workWrites, tenantWrites, leaseRenewals, relocations, relocationHolds, degradedReports, staleReads, workConflicts, memberAcks, departedLeases)
}
