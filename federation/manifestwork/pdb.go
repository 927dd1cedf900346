package manifestwork

import (
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
	"github.com/fleetset/fleetset/internal/envelope"
)

// PodDisruptionBudgets renders, when spec.disruptionBudget is set, one
// PodDisruptionBudget per subset (named and selecting like its StatefulSet)
// whose maxUnavailable is the subset's part of the fleet budget (percents of
// spec.replicas rounded down): the first budget seats of the subsets' seat
// sequence, cut to the subset's delivered replicas. unhealthyPodEvictionPolicy
// is AlwaysAllow: a part of 0 or a crash-looping pod must not block drains.
func PodDisruptionBudgets(fs *fleetv1.FleetSet, subsets []Subset) ([]*policyv1.PodDisruptionBudget, error) {
	if fs.Spec.DisruptionBudget == nil || len(subsets) == 0 {
		return nil, nil
	}
	parts, err := budgetParts(fs)
	if err != nil {
		return nil, err
	}
	out := make([]*policyv1.PodDisruptionBudget, 0, len(subsets))
	for _, sp := range subsets {
		sel, err := subsetSelector(fs, sp.Name)
		if err != nil {
			return nil, err
		}
		part := min(parts[sp.Name], max(sp.Replicas, 0))
		out = append(out, &policyv1.PodDisruptionBudget{
			TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      envelope.StatefulSetName(fs.Name, sp.Name),
				Namespace: fs.Namespace,
				Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name, fleetv1.LabelSubset: sp.Name}),
			},
			Spec: policyv1.PodDisruptionBudgetSpec{
				Selector:                   sel,
				MaxUnavailable:             ptr.To(intstr.FromInt32(part)),
				UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
			},
		})
	}
	return out, nil
}

// budgetParts returns each subset's part (by subset name) of fs's
// fleet-wide disruption budget, over all of spec.topology.subsets; nil when
// spec.disruptionBudget is unset. See PodDisruptionBudgets for the division.
// The parts are before the cut to a subset's delivered replicas.
func budgetParts(fs *fleetv1.FleetSet) (map[string]int32, error) {
	if fs.Spec.DisruptionBudget == nil {
		return nil, nil
	}
	budget, err := fleetBudget(fs.Spec.DisruptionBudget.MaxUnavailable, fs.Spec.Replicas)
	if err != nil {
		return nil, err
	}
	div, err := apportion.Divide(budget, apportion.SubsetShares(fs.Spec.Topology.Subsets))
	if err != nil {
		return nil, fmt.Errorf("spec.disruptionBudget: dividing over spec.topology.subsets: %w", err)
	}
	parts := make(map[string]int32, len(div.Assignments))
	for _, a := range div.Assignments {
		parts[a.Name] = a.Replicas
	}
	return parts, nil
}

// fleetBudget returns maxUnavailable in instances of replicas: an int as
// is, a percent of replicas rounded down, at most replicas (and 0 when
// replicas is not positive).
func fleetBudget(maxUnavailable intstr.IntOrString, replicas int32) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(max(replicas, 0)), false)
	if err != nil {
		return 0, fmt.Errorf("spec.disruptionBudget.maxUnavailable: %w", err)
	}
	if n < 0 {
		return 0, fmt.Errorf("spec.disruptionBudget.maxUnavailable: must not be negative, got %s", maxUnavailable.String())
	}
	return int32(min(n, int(max(replicas, 0)))), nil
}

// subsetSelector returns the pod selector of subset's StatefulSet, as
// StatefulSet builds it: a copy of spec.selector plus fleetset.io/set and
// fleetset.io/subset, so subsets sharing a cluster never select each
// other's pods. It returns an error if spec.selector is nil.
func subsetSelector(fs *fleetv1.FleetSet, subset string) (*metav1.LabelSelector, error) {
	if fs.Spec.Selector == nil {
		return nil, fmt.Errorf("spec.selector: required")
	}
	sel := fs.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[fleetv1.LabelSet] = fs.Name
	sel.MatchLabels[fleetv1.LabelSubset] = subset
	return sel, nil
}

// pdbConfig is the ManifestConfigOption of a subset's PodDisruptionBudget:
// server-side apply with force, as every delivered object.
func pdbConfig(namespace, name string) workv1.ManifestConfigOption {
	return applyConfig(policyv1.GroupName, "poddisruptionbudgets", namespace, name)
}
