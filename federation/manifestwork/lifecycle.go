package manifestwork

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
	// FeedbackActionsSwitchover and FeedbackActionsSwitchoverFailed
	// report a requested switchover (PlacementSwitchover).
	FeedbackActionsSwitchover       = "actionsSwitchover"
	FeedbackActionsSwitchoverFailed = "actionsSwitchoverFailed"
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
		Switchover:      sp.Switchover.DeepCopy(),
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
		{Name: FeedbackActionsSwitchover, Path: ".status.actions.switchover"},
		{Name: FeedbackActionsSwitchoverFailed, Path: ".status.actions.switchoverFailed"},
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
	// Switchover is the ID of the requested switchover whose action
	// succeeded; SwitchoverFailed says why it fails, if it does.
	Switchover, SwitchoverFailed string
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
			case FeedbackActionsSwitchover:
				r.Switchover, found = *v.Value.String, true
			case FeedbackActionsSwitchoverFailed:
				r.SwitchoverFailed, found = *v.Value.String, true
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
// v1alpha1.MaxFleetViewInstances, as the fleet view), without those a
// held scale-down removes (any subset's Leave), and whose Leader is
// the one leader their members reported ("" with none or several).
func withMembers(fs *fleetv1.FleetSet, subsets []Subset) []Subset {
	instances, _ := Instances(fs, subsets) // an error here is FleetView's, returned before
	leaving := map[int32]bool{}
	for _, sp := range subsets {
		for _, l := range sp.Leave {
			leaving[l.Ordinal] = true
		}
	}
	members := make([]string, 0, len(instances))
	for _, in := range instances {
		if !leaving[in.Ordinal] {
			members = append(members, in.Name)
		}
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

// SwitchoverTarget checks a requested switchover of fs's leader to to
// (AnnotationSwitchoverTo's value; "" or v1alpha1.SwitchoverToAny: the
// workload chooses) and returns the annotation value. It returns an error,
// saying what to change, when fs has no leader role (spec.roles[].isLeader)
// or no switchover lifecycle action, or when to is neither "*" nor a
// desired instance (<fleetset>-<subset>-<ordinal> within a subset's
// ordinals as status.subsets reports them), or is the leader already
// (status.leader).
func SwitchoverTarget(fs *fleetv1.FleetSet, to string) (string, error) {
	leaderRole := false
	for _, r := range fs.Spec.Roles {
		leaderRole = leaderRole || r.IsLeader
	}
	if !leaderRole {
		return "", fmt.Errorf("fleetset %q has no leader role (spec.roles[].isLeader): nothing to switch over", fs.Name)
	}
	if la := fs.Spec.LifecycleActions; la == nil || la.Switchover == nil {
		return "", fmt.Errorf("fleetset %q has no switchover lifecycle action (spec.lifecycleActions.switchover): nothing would ask the leader to hand its role over", fs.Name)
	}
	if to == "" || to == fleetv1.SwitchoverToAny {
		return fleetv1.SwitchoverToAny, nil
	}
	if l := fs.Status.Leader; l != nil && l.Name == to {
		return "", fmt.Errorf("%s is the leader already", to)
	}
	var known []string
	for _, ss := range fs.Status.Subsets {
		prefix := StatefulSetName(fs.Name, ss.Name) + "-"
		known = append(known, fmt.Sprintf("%s[%d..%d]", prefix, ss.OrdinalStart, ss.OrdinalStart+ss.Replicas-1))
		rest, ok := strings.CutPrefix(to, prefix)
		if !ok {
			continue
		}
		if n, err := ParseOrdinal(rest); err == nil && InBlock(n, ss.OrdinalStart, ss.Replicas) {
			return to, nil
		}
	}
	return "", fmt.Errorf("%q is not an instance of fleetset %q (its instances: %s)", to, fs.Name, strings.Join(known, ", "))
}

// ParseOrdinal parses s, the ordinal of a pod name (<statefulset>-<ordinal>),
// as the StatefulSet controller writes it: a decimal in [0, 2^31-1], with no
// sign and no leading zero. It returns an error for anything else: an
// ordinal beyond int32 never wraps to name another instance.
func ParseOrdinal(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not an ordinal (a decimal from 0 to %d)", s, math.MaxInt32)
	}
	return int32(n), nil
}

// InBlock reports whether ordinal n is in the block [start, start+replicas),
// computed without int32 overflow.
func InBlock(n, start, replicas int32) bool {
	return int64(n) >= int64(start) && int64(n) < int64(start)+int64(replicas)
}
