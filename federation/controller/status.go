package controller

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// Status folding: pure functions from what a reconcile learned (the plan,
// the feedback attached to it, the problems) to FleetSet.status and its
// conditions.

// foldSubsets writes status.subsets from the subsets' plans and the work
// and feedback attached to them, and the totals; a subset whose work
// reports Applied=False becomes an ApplyFailed problem.
func foldSubsets(st *state, status *fleetv1.FleetSetStatus) {
	status.Subsets = nil
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	for _, sp := range st.subsets {
		p := sp.planned
		ss := fleetv1.SubsetStatus{Name: p.Name, Cluster: p.Cluster, OrdinalStart: p.OrdinalStart, Replicas: p.Replicas, Partition: sp.partition(),
			Epoch: sp.epoch, Failover: sp.failoverPhase, Revision: sp.rollout.revision, Claims: sp.claimsLeft.DeepCopy()}
		for _, d := range p.Domains {
			ss.Domains = append(ss.Domains, fleetv1.DomainStatus{Name: d.Name, Replicas: d.Replicas})
		}
		if sp.work != nil {
			if c := manifestwork.NotApplied(sp.work); c != nil {
				msg := fmt.Sprintf("work agent reports ManifestWork not applied: %s: %s", c.Reason, c.Message)
				if f := manifestwork.ApplyFailures(sp.work); len(f) > 0 {
					// The member apiserver's own answer, per object.
					msg = fmt.Sprintf("member cluster %s refused %s", p.Cluster, strings.Join(f, "; "))
				}
				st.report(subsetProblem(fleetv1.ReasonApplyFailed, p.Name, p.Cluster, msg))
			}
		}
		if fp, ok := st.feedbackProblems[p.Name]; ok {
			st.report(fp)
		}
		if f := sp.feedback; f != nil {
			ss.ObservedReplicas, ss.ReadyReplicas = f.Replicas, f.ReadyReplicas
			ss.AvailableReplicas, ss.UpdatedReplicas = f.AvailableReplicas, f.UpdatedReplicas
			ss.CurrentRevision, ss.UpdateRevision = f.CurrentRevision, f.UpdateRevision
			ss.FleetRevision = f.FleetRevision
		}
		if st.rollout.decision != nil && st.rollout.ru != nil {
			ss.Rollout = fleetv1.SubsetRolloutPhase(st.rollout.decision.Phases[p.Name])
		}
		status.Replicas = addSaturating(status.Replicas, ss.ObservedReplicas)
		status.ReadyReplicas = addSaturating(status.ReadyReplicas, ss.ReadyReplicas)
		status.AvailableReplicas = addSaturating(status.AvailableReplicas, ss.AvailableReplicas)
		status.Subsets = append(status.Subsets, ss)
	}
	reportFleetDNSWorks(st)
}

// foldRoles writes status.leader from the subsets' role summaries
// (spec.roles): the one instance holding the leader role. More than one —
// a split brain, across clusters or not — is a MultipleLeaders problem
// naming every holder and its cluster; none, once every delivered subset
// has reported its roles, a NoLeader problem. Without a leader role, or
// before every subset has reported, status.leader is left unset and
// nothing is said.
func foldRoles(st *state, status *fleetv1.FleetSetStatus) {
	status.Leader = nil
	leaders, hasLeaderRole, reported := leadersOf(st)
	if !hasLeaderRole {
		return
	}
	switch {
	case len(leaders) == 1:
		status.Leader = &leaders[0]
	case len(leaders) > 1:
		names := make([]string, len(leaders))
		for i, l := range leaders {
			names[i] = fmt.Sprintf("%s in cluster %s", l.Name, l.Cluster)
		}
		st.report(fleetProblem(fleetv1.ReasonMultipleLeaders,
			fmt.Sprintf("%d instances hold the leader role: %s", len(leaders), strings.Join(names, ", "))))
	case reported && len(st.subsets) > 0:
		st.report(fleetProblem(fleetv1.ReasonNoLeader, "no instance holds the leader role (every subset reported its roles)"))
	}
}

// leadersOf returns the instances holding a leader role as the subsets
// delivered with replicas reported them this reconcile, whether st.fs has
// a leader role at all (spec.roles[].isLeader; without one, nothing else
// is computed), and whether every such subset has reported its roles.
func leadersOf(st *state) (leaders []fleetv1.LeaderStatus, hasLeaderRole, reported bool) {
	for _, r := range st.fs.Spec.Roles {
		hasLeaderRole = hasLeaderRole || r.IsLeader
	}
	if !hasLeaderRole {
		return nil, false, false
	}
	reported = true
	for _, sp := range st.subsets {
		if sp.draining || sp.planned.Replicas == 0 {
			continue
		}
		if sp.roles == nil {
			reported = false
			continue
		}
		for _, l := range sp.roles.Leaders {
			leaders = append(leaders, fleetv1.LeaderStatus{Name: l, Subset: sp.planned.Name, Cluster: sp.planned.Cluster})
		}
	}
	return leaders, true, reported
}

// foldSpec writes what status says of the spec itself: the subset count,
// the observed generation and the scale subresource's selector (a missing
// or invalid spec.selector is an InvalidSpec problem).
func foldSpec(st *state, status *fleetv1.FleetSetStatus) {
	status.SubsetCount = int32(len(st.fs.Spec.Topology.Subsets))
	status.ObservedGeneration = st.fs.Generation
	if err := setSelector(st.fs, status); err != nil {
		st.invalidSpec(err)
	}
}

// setSelector sets status.selector, the scale subresource's selector, from
// spec.selector; it returns an error naming spec.selector if that is missing
// or invalid.
func setSelector(fs *fleetv1.FleetSet, status *fleetv1.FleetSetStatus) error {
	if fs.Spec.Selector == nil {
		return fmt.Errorf("spec.selector: required")
	}
	sel, err := metav1.LabelSelectorAsSelector(fs.Spec.Selector)
	if err != nil {
		return fmt.Errorf("spec.selector: %w", err)
	}
	status.Selector = sel.String()
	return nil
}

// reasonRank orders the Degraded reasons, most severe first.
var reasonRank = map[string]int{
	fleetv1.ReasonInvalidSpec:        0,
	fleetv1.ReasonClusterNotFound:    1,
	fleetv1.ReasonApplyFailed:        2,
	fleetv1.ReasonRelocationHeld:     3,
	fleetv1.ReasonClusterUnavailable: 4,
	fleetv1.ReasonFailingOver:        5,
	fleetv1.ReasonFailingBack:        6,
	fleetv1.ReasonMoving:             6,
	fleetv1.ReasonFailedOver:         7,
	fleetv1.ReasonOrdinalBlockFull:   8,
	fleetv1.ReasonDivisionInfeasible: 9,
	fleetv1.ReasonMultipleLeaders:    1,
	fleetv1.ReasonNoLeader:           10,
	fleetv1.ReasonMemberLeaveFailed:  10,
}

// setConditions sets Degraded, Progressing and Ready.
func setConditions(st *state, status *fleetv1.FleetSetStatus) {
	gen := st.fs.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		if len(msg) > maxConditionMessage {
			msg = msg[:maxConditionMessage-3] + "..."
		}
		apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	problems := append([]problem(nil), st.problems...)
	sort.SliceStable(problems, func(i, j int) bool { return reasonRank[problems[i].Reason] < reasonRank[problems[j].Reason] })
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		set(fleetv1.ConditionDegraded, metav1.ConditionTrue, problems[0].Reason, strings.Join(msgs, "; "))
	} else {
		set(fleetv1.ConditionDegraded, metav1.ConditionFalse, fleetv1.ReasonAsExpected, "")
	}

	var waiting, rolling, notReady []string
	for _, ss := range status.Subsets {
		reported := st.feedbackReported(ss)
		wantUpdated := ss.Replicas - min(ss.Partition, ss.Replicas)
		switch {
		case !reported:
			waiting = append(waiting, fmt.Sprintf("subset %s on cluster %s", ss.Name, ss.Cluster))
		case ss.ObservedReplicas != ss.Replicas || ss.UpdatedReplicas < wantUpdated:
			rolling = append(rolling, fmt.Sprintf("subset %s on cluster %s: %d/%d replicas, %d/%d updated", ss.Name, ss.Cluster, ss.ObservedReplicas, ss.Replicas, ss.UpdatedReplicas, wantUpdated))
		}
		if ss.ReadyReplicas < ss.Replicas {
			notReady = append(notReady, fmt.Sprintf("subset %s on cluster %s: %d/%d ready", ss.Name, ss.Cluster, ss.ReadyReplicas, ss.Replicas))
		}
	}
	switch reason, msg, rollingOut := rolloutProgress(st, status); {
	case rollingOut:
		set(fleetv1.ConditionProgressing, metav1.ConditionTrue, reason, msg)
	case len(rolling) > 0:
		set(fleetv1.ConditionProgressing, metav1.ConditionTrue, fleetv1.ReasonRollingOut, strings.Join(append(rolling, waiting...), "; "))
	case len(waiting) > 0:
		set(fleetv1.ConditionProgressing, metav1.ConditionTrue, fleetv1.ReasonWaitingForFeedback, "no status from "+strings.Join(waiting, ", "))
	case reason != "":
		set(fleetv1.ConditionProgressing, metav1.ConditionFalse, reason, msg)
	default:
		set(fleetv1.ConditionProgressing, metav1.ConditionFalse, fleetv1.ReasonComplete, "")
	}
	switch {
	case len(problems) > 0:
		set(fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonDegraded, "see condition Degraded")
	case len(notReady) > 0:
		set(fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonReplicasNotReady, strings.Join(notReady, "; "))
	default:
		set(fleetv1.ConditionReady, metav1.ConditionTrue, fleetv1.ReasonAllReplicasReady, "")
	}
}

// reportFleetDNSWorks makes each fleet DNS work (manifestwork.IsFleetDNSWork)
// whose agent reports it not applied an ApplyFailed problem of its cluster,
// naming the work and the member's answer: its records are missing or stale
// there.
func reportFleetDNSWorks(st *state) {
	keys := make([]types.NamespacedName, 0, len(st.existingWorks))
	for k, w := range st.existingWorks {
		if manifestwork.IsFleetDNSWork(w) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		w := st.existingWorks[k]
		c := manifestwork.NotApplied(w)
		if c == nil {
			continue
		}
		msg := fmt.Sprintf("work agent reports fleet DNS ManifestWork %s not applied: %s: %s", w.Name, c.Reason, c.Message)
		if f := manifestwork.ApplyFailures(w); len(f) > 0 {
			msg = fmt.Sprintf("member cluster %s refused fleet DNS ManifestWork %s: %s", k.Namespace, w.Name, strings.Join(f, "; "))
		}
		st.report(clusterProblem(fleetv1.ReasonApplyFailed, k.Namespace, msg))
	}
}

// feedbackReported reports whether the work agent has fed back the status
// of status subset ss's StatefulSet: as attached to the subset's plan, or,
// when the spec could not be planned (status.subsets are then the last
// reconcile's), from the FleetSet's ManifestWork in ss's cluster.
func (st *state) feedbackReported(ss fleetv1.SubsetStatus) bool {
	for _, sp := range st.subsets {
		if sp.planned.Name == ss.Name {
			return sp.feedback != nil
		}
	}
	w := st.existingWorks[st.workKey(ss.Cluster)]
	if w == nil {
		return false
	}
	_, ok := manifestwork.Feedback(w)[manifestwork.StatefulSetName(st.fs.Name, ss.Name)]
	return ok
}

// rollingOut reports whether a rollout of a changed template is in progress:
// the spec's revision differs from the one every instance ran when the last
// rollout (or the creation) completed.
func rollingOut(st *state, status *fleetv1.FleetSetStatus) bool {
	return st.rollout.decision != nil && !st.rollout.decision.Complete && status.CurrentRevision != "" && status.CurrentRevision != st.rollout.fleetRevision
}

// foldRollout writes the fleet's revisions, updated counts and the rollout's
// progress time into status, and when its progress deadline passes into
// st.rollout.requeue.
func foldRollout(st *state, status *fleetv1.FleetSetStatus) {
	if st.rollout.decision == nil {
		return
	}
	d := st.rollout.decision
	progressed := status.UpdateRevision != st.rollout.fleetRevision || d.Updated > status.UpdatedReplicas || d.UpdatedReady > status.UpdatedReadyReplicas
	status.Switchover = st.rollout.switchover
	status.UpdateRevision = st.rollout.fleetRevision
	status.UpdatedReplicas, status.UpdatedReadyReplicas = d.Updated, d.UpdatedReady
	partition := int32(0)
	if ru := st.rollout.ru; ru != nil {
		partition = ru.Partition
	}
	switch {
	case d.Complete && partition == 0:
		status.CurrentRevision = st.rollout.fleetRevision
		status.RolloutProgressTime = nil
	case !rollingOut(st, status):
		status.RolloutProgressTime = nil
	case progressed || status.RolloutProgressTime == nil:
		status.RolloutProgressTime = st.now.DeepCopy()
	}
	st.rollout.requeue = minPositive(st.rollout.requeue, rolloutRequeue(st, status))
}

// progressDeadline returns ru.progressDeadlineSeconds as a duration.
func progressDeadline(ru *fleetv1.RollingUpdateFleetSet) time.Duration {
	return time.Duration(ru.ProgressDeadlineSecondsOrDefault()) * time.Second
}

// rolloutProgress returns the Progressing reason and message of a rollout:
// ok is true while one is in progress (RolloutBlocked, RolloutPaused or
// RolloutUpdating); when a rollout stopped at its partition it returns
// RolloutPartitioned with ok false; otherwise "", "", false.
func rolloutProgress(st *state, status *fleetv1.FleetSetStatus) (string, string, bool) {
	if st.rollout.decision == nil {
		return "", "", false
	}
	d := st.rollout.decision
	fleet := fmt.Sprintf("revision %s: %d/%d instances updated, %d updated and ready", st.rollout.fleetRevision, d.Updated, st.fs.Spec.Replicas, d.UpdatedReady)
	if !rollingOut(st, status) {
		if ru := st.rollout.ru; ru != nil && d.Complete && ru.Partition > 0 && status.CurrentRevision != st.rollout.fleetRevision {
			return fleetv1.ReasonRolloutPartitioned, fmt.Sprintf("stopped at rollingUpdate.partition %d; %s", ru.Partition, fleet), false
		}
		return "", "", false
	}
	var updating []string
	for _, name := range d.Updating {
		for _, ss := range status.Subsets {
			if ss.Name == name {
				updating = append(updating, fmt.Sprintf("subset %s on cluster %s (%d/%d updated, %d/%d available)",
					ss.Name, ss.Cluster, ss.UpdatedReplicas, ss.Replicas, ss.AvailableReplicas, ss.Replicas))
			}
		}
	}
	ru := st.rollout.ru
	switch {
	case len(d.Blocked) > 0:
		return fleetv1.ReasonRolloutBlocked, strings.Join(d.Blocked, "; ") + "; waiting; " + fleet, true
	case ru != nil && status.RolloutProgressTime != nil && !ru.Paused && st.now.Sub(status.RolloutProgressTime.Time) > progressDeadline(st.rollout.ru):
		return fleetv1.ReasonRolloutBlocked, fmt.Sprintf("no progress for more than %s: %s; waiting; %s",
			progressDeadline(st.rollout.ru), strings.Join(updating, ", "), fleet), true
	case st.rollout.switchover != nil && st.rollout.switchover.Held:
		return fleetv1.ReasonRolloutBlocked, fmt.Sprintf("%s: leader %s in cluster %s has not handed its role over since %s (switchover policy Required); waiting; %s",
			fleetv1.ReasonSwitchoverHeld, st.rollout.switchover.Pod, st.rollout.switchover.Cluster, st.rollout.switchover.RequestedAt.UTC().Format(time.RFC3339), fleet), true
	case ru != nil && ru.Paused:
		return fleetv1.ReasonRolloutPaused, "rollingUpdate.paused; at " + strings.Join(updating, ", ") + "; " + fleet, true
	}
	return fleetv1.ReasonRolloutUpdating, "updating " + strings.Join(updating, ", ") + "; " + fleet, true
}

// rolloutRequeue returns when to reconcile again without an event: when an
// unpaused rollout's progress deadline passes, so RolloutBlocked is set on
// time; 0 otherwise.
func rolloutRequeue(st *state, status *fleetv1.FleetSetStatus) time.Duration {
	ru := st.rollout.ru
	if ru == nil || ru.Paused || status.RolloutProgressTime == nil || !rollingOut(st, status) {
		return 0
	}
	return max(time.Second, status.RolloutProgressTime.Add(progressDeadline(st.rollout.ru)).Sub(st.now.Time)+time.Second)
}

// addSaturating returns a + b for counts ≥ 0, at most math.MaxInt32: a
// status sum never wraps around, whatever the subsets report.
func addSaturating(a, b int32) int32 {
	if s := int64(a) + int64(b); s <= math.MaxInt32 {
		return int32(s)
	}
	return math.MaxInt32
}
