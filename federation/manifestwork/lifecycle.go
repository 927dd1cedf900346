package manifestwork

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// Feedback names of a SubsetPlacement's lifecycle-action report
// (v1alpha1.PlacementActionsStatus), requested when the FleetSet has
// lifecycle actions.
const (
	FeedbackActionsLeft            = "actionsLeft"
	FeedbackActionsLeaveFailed     = "actionsLeaveFailed"
	FeedbackActionsRolloutComplete = "actionsRolloutComplete"
)

// placementActions returns what sp's SubsetPlacement carries of fs's
// lifecycle actions and the hub's instructions about them; nil when fs has
// none.
func placementActions(fs *fleetv1.FleetSet, sp Subset) *fleetv1.PlacementActions {
	if fs.Spec.LifecycleActions == nil {
		return nil
	}
	pa := &fleetv1.PlacementActions{
		Actions:         *fs.Spec.LifecycleActions.DeepCopy(),
		FleetSet:        fs.Name,
		ServiceName:     envelope.ServiceName(fs),
		Members:         slices.Clone(sp.Members),
		Leader:          sp.Leader,
		Epoch:           sp.Epoch,
		Leave:           slices.Clone(sp.Leave),
		Origin:          sp.Origin.DeepCopy(),
		Candidates:      slices.Clone(sp.Candidates),
		RolloutComplete: sp.RolloutComplete,
	}
	return pa
}

// readinessGates returns gates plus the readiness gate
// v1alpha1.ConditionMemberJoined when fs has a memberJoin action (once).
func readinessGates(fs *fleetv1.FleetSet, gates []corev1.PodReadinessGate) []corev1.PodReadinessGate {
	if fs.Spec.LifecycleActions == nil || fs.Spec.LifecycleActions.MemberJoin == nil {
		return gates
	}
	for _, g := range gates {
		if g.ConditionType == fleetv1.ConditionMemberJoined {
			return gates
		}
	}
	return append(slices.Clone(gates), corev1.PodReadinessGate{ConditionType: fleetv1.ConditionMemberJoined})
}

// actionsFeedback are the JSONPaths of a SubsetPlacement's lifecycle-action
// report.
func actionsFeedback() []workv1.JsonPath {
	return []workv1.JsonPath{
		{Name: FeedbackActionsLeft, Path: ".status.actions.left"},
		{Name: FeedbackActionsLeaveFailed, Path: ".status.actions.leaveFailed"},
		{Name: FeedbackActionsRolloutComplete, Path: ".status.actions.rolloutComplete"},
	}
}

// ActionsReport is what a member reported of one SubsetPlacement's
// lifecycle actions.
type ActionsReport struct {
	// Left are the ordinals whose memberLeave succeeded.
	Left []int32
	// LeaveFailed says why a memberLeave fails; empty when none does.
	LeaveFailed string
	// RolloutComplete is the revision whose rolloutComplete succeeded.
	RolloutComplete string
}

// ActionsFeedback returns, by SubsetPlacement name, the lifecycle-action
// reports the work agent fed back in w (placements without one are absent).
func ActionsFeedback(w *workv1.ManifestWork) map[string]ActionsReport {
	out := map[string]ActionsReport{}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind != "SubsetPlacement" {
			continue
		}
		var r ActionsReport
		found := false
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.String == nil {
				continue
			}
			switch v.Name {
			case FeedbackActionsLeft:
				r.Left, found = fleetv1.ParseOrdinals(*v.Value.String), true
			case FeedbackActionsLeaveFailed:
				r.LeaveFailed, found = *v.Value.String, true
			case FeedbackActionsRolloutComplete:
				r.RolloutComplete, found = *v.Value.String, true
			}
		}
		if found {
			out[m.ResourceMeta.Name] = r
		}
	}
	return out
}

// withMembers returns a copy of subsets whose Members are the pod names of
// every desired instance of fs in ordinal order (none above
// v1alpha1.MaxFleetViewInstances, as the fleet view) and whose Leader is
// the one leader their members reported ("" with none or several).
func withMembers(fs *fleetv1.FleetSet, subsets []Subset) []Subset {
	instances, _ := Instances(fs, subsets) // an error here is FleetView's, returned before
	members := make([]string, len(instances))
	for i, in := range instances {
		members[i] = in.Name
	}
	var leaders []string
	for _, sp := range subsets {
		leaders = append(leaders, sp.Leaders...)
	}
	leader := ""
	if len(leaders) == 1 {
		leader = leaders[0]
	}
	out := slices.Clone(subsets)
	for i := range out {
		out[i].Members, out[i].Leader = members, leader
	}
	return out
}
