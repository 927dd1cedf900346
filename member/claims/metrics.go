package claims

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results of claimExpansions.
const (
	resultExpanded      = "expanded"
	resultNotExpandable = "not_expandable"
	resultFailed        = "failed"
)

// Results of replacements.
const (
	resultReplaced      = "replaced"
	resultShrinkRefused = "shrink_refused"
)

var (
	claimExpansions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "claim_expansions_total",
		Help: "PersistentVolumeClaims of delivered StatefulSets the member expanded to their SubsetPlacement's claimStorage, by result: " +
			"expanded (patched), not_expandable (its StorageClass does not allow expansion; the placement waits), failed (the patch failed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	replacements = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "fleetset", Subsystem: "member", Name: "statefulset_replacements_total",
		Help: "Delivered StatefulSets whose claim templates are smaller than their SubsetPlacement's claimStorage, by result: " +
			"replaced (deleted with propagationPolicy Orphan for the work agent to re-create), shrink_refused (a template is larger: left as it is), failed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

func init() {
	legacyregistry.MustRegister(claimExpansions, replacements)
}
