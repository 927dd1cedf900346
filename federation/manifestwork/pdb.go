package manifestwork

// The fleet-wide disruption budget (spec.disruptionBudget): one
// PodDisruptionBudget per subset, with the subset's part of the budget.
//
// Not wired yet: work() in manifestwork.go (another owner's) is to append,
// for its cluster's subsets, PodDisruptionBudgets(fs, subsets) to its
// objects and a pdbConfig for each. Passing only one cluster's subsets is
// right: the parts are divided over all of fs's subsets whatever is passed.

import (
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/apportion"
	"github.com/fleetset/fleetset/internal/envelope"
)

// PodDisruptionBudgets renders, when fs.Spec.DisruptionBudget is set, one
// policy/v1 PodDisruptionBudget per subset of subsets (in their order),
// named like the subset's StatefulSet (StatefulSetName), selecting exactly
// that StatefulSet's pods (spec.selector plus fleetset.io/set and
// fleetset.io/subset), with spec.maxUnavailable the subset's part of the
// fleet budget. It returns nil when the budget is unset.
//
// The fleet budget in instances is maxUnavailable as an int, or that
// percent of spec.replicas rounded down (a budget is never exceeded), and
// never more than spec.replicas. It is divided over all of fs's subsets
// (spec.topology.subsets, whichever of them subsets holds) as the first
// budget seats of the seat sequence the hub divides spec.replicas with
// (apportion.Divide over the same shares): the parts sum to the budget, and
// since the budget is at most spec.replicas, no part exceeds its subset's
// replicas (house monotonicity) and a subset with 0 replicas gets 0. A
// subset's part is also cut to its delivered replicas (a subset cut to its
// ordinal block), so the delivered parts never sum over the budget. A part
// of 0 refuses every eviction of a healthy pod of the subset.
//
// Every budget has unhealthyPodEvictionPolicy AlwaysAllow: a pod that is not
// Ready does not count as available, so evicting it takes nothing from the
// budget, and with the default (IfHealthyBudget) a subset whose part is 0,
// or one already short of ready pods (a crash-looping or stuck instance),
// would block every node drain holding that pod until an operator stepped
// in; the Kubernetes documentation recommends AlwaysAllow for such
// applications.
//
// It returns an error if spec.selector is nil, maxUnavailable is malformed
// or negative, or spec.topology.subsets cannot be divided.
func PodDisruptionBudgets(fs *fleetv1.FleetSet, subsets []plan.Subset) ([]*policyv1.PodDisruptionBudget, error) {
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
