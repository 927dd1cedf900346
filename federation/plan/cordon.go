package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
)

// subsetShares returns the division's shares of fs's subsets with the
// cordon applied (fleetv1.FleetSet.CordonCap): a subset on a cordoned
// cluster has its maxReplicas (and minReplicas) lowered to its cap, and an
// integer share above the cap is cut to it, with a finding.
func subsetShares(fs *fleetv1.FleetSet) ([]apportion.Share, []Finding) {
	shares := apportion.SubsetShares(fs.Spec.Topology.Subsets)
	var findings []Finding
	for i, s := range fs.Spec.Topology.Subsets {
		limit, cordoned := fs.CordonCap(s)
		if !cordoned {
			continue
		}
		sh := &shares[i]
		if sh.Replicas != nil && sh.Replicas.Type == intstr.Int {
			if sh.Replicas.IntVal > limit {
				findings = append(findings, Finding{Reason: fleetv1.ReasonDivisionInfeasible, Subset: s.Name, Cluster: s.Cluster,
					Message: fmt.Sprintf("spec.topology.subsets[%d].replicas %d cut to %d: cluster %s is cordoned (spec.topology.cordonedClusters)", i, sh.Replicas.IntVal, limit, s.Cluster)})
				sh.Replicas = ptr.To(intstr.FromInt32(limit))
			}
			continue
		}
		if sh.MaxReplicas == nil || *sh.MaxReplicas > limit {
			sh.MaxReplicas = ptr.To(limit)
		}
		if sh.MinReplicas != nil && *sh.MinReplicas > limit {
			sh.MinReplicas = ptr.To(limit)
		}
	}
	return shares, findings
}
