package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/rollout"
)

// rollingUpdate returns the FleetSet's RollingUpdate parameters, or nil for
// the Manual strategy.
func rollingUpdate(fs *fleetv1.FleetSet) *fleetv1.RollingUpdateFleetSet {
	us := fs.Spec.UpdateStrategy
	if us.Type == fleetv1.ManualUpdateStrategyType {
		return nil
	}
	if us.RollingUpdate == nil {
		return &fleetv1.RollingUpdateFleetSet{}
	}
	return us.RollingUpdate
}

// fleetOrder returns the indices of st.subsets in fleet order: the subsets named
// in subsetOrder first, then the others in spec order.
func fleetOrder(st *state, ru *fleetv1.RollingUpdateFleetSet) []int {
	var order []int
	if ru != nil {
		for _, name := range ru.SubsetOrder {
			for i, sp := range st.subsets {
				if sp.planned.Name == name && !slices.Contains(order, i) {
					order = append(order, i)
				}
			}
		}
	}
	for i := range st.subsets {
		if !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	return order
}

// planRollout stamps each subset's revision on its plan (its template,
// claim templates and dependencies: rollout.SubsetRevision), computes the
// fleet revision from them and, under
// RollingUpdate, sets each subset's partition from the rollout planner (see
// package rollout) fed with the statusFeedback attached to each subset's
// plan (observeWorks). Under Manual the
// partitions stay manualUpdate's; the decision still counts updated
// instances. It returns an error naming the field when the revision or
// maxUnavailable cannot be computed.
func planRollout(st *state) error {
	fs := st.fs
	revisions := make([]string, len(st.subsets))
	for i := range st.subsets {
		sp := &st.subsets[i].planned
		tmpl, claims := &fs.Spec.Template, fs.Spec.VolumeClaimTemplates
		if sp.Template != nil {
			tmpl, claims = sp.Template, sp.Claims
		}
		rev, err := rollout.SubsetRevision(*tmpl, claims, sp.DependenciesHash)
		if err != nil {
			return err
		}
		sp.Revision = rev
		revisions[i] = sp.Name + "=" + rev
	}
	rev := rollout.FleetRevision(revisions)
	if rev == "" { // no subsets: the template's, for status
		var err error
		if rev, err = rollout.Revision(fs.Spec.Template, fs.Spec.VolumeClaimTemplates); err != nil {
			return err
		}
	}
	st.fleetRevision = rev
	ru := rollingUpdate(fs)
	var err error
	spec := rollout.Spec{Revision: rev, MaxUnavailable: fleetv1.DefaultMaxUnavailable, MaxConcurrent: ru.MaxConcurrentSubsetsOrDefault()}
	if ru != nil {
		if spec.MaxUnavailable, err = rollout.ResolveMaxUnavailable(ru.MaxUnavailable, fs.Spec.Replicas); err != nil {
			return err
		}
		spec.Partition, spec.Paused = ru.Partition, ru.Paused
	}
	spec.LeaderLast = manifestwork.RoleOrdered(fs)
	order := fleetOrder(st, ru)
	subsets := make([]rollout.Subset, len(order))
	for k, i := range order {
		sp := &st.subsets[i]
		s := rollout.Subset{Name: sp.planned.Name, Cluster: sp.planned.Cluster, Replicas: sp.planned.Replicas, ClusterAvailable: sp.clusterAvailable,
			Target: sp.planned.Revision}
		if f := sp.feedback; f != nil {
			s.Revision, s.Current = f.FleetRevision, f.Current()
			s.Observed, s.Updated, s.Ready, s.Available = f.Replicas, f.UpdatedReplicas, f.ReadyReplicas, f.AvailableReplicas
		}
		if sp.roles != nil {
			// A leader is deferred while it is outdated: its member does not
			// list it as updated, and the subset is not wholly updated.
			for _, l := range sp.roles.Leaders {
				if !slices.Contains(sp.roles.UpdatedLeaders, l) {
					s.LeaderOutdated = !(s.Revision == s.Target && s.Current && s.Updated >= s.Replicas)
				}
			}
		}
		subsets[k] = s
	}
	d := rollout.Plan(spec, subsets)
	st.rolloutDecision = &d
	if ru != nil {
		for i := range st.subsets {
			st.subsets[i].planned.Partition = d.Partitions[st.subsets[i].planned.Name]
		}
	}
	if spec.LeaderLast {
		planLeaderUpdates(st, &d)
	}
	return nil
}

// planLeaderUpdates gives every subset of a role-ordered rollout its
// member's instruction (SubsetPlacement spec.update): the unavailability
// the rollout allows it, and what to do with its leader — Hold, except on
// the leader's turn (every other instance updated): Switchover (ask the
// leader to hand its role over, status.switchover recording when) until
// spec.switchover.deadlineSeconds, then Update under policy BestEffort
// (Skipped) or Switchover still under Required (Held: the rollout waits).
// A leader that handed its role over is an outdated follower like any
// other: the next reconcile updates it in its subset's turn.
func planLeaderUpdates(st *state, d *rollout.Decision) {
	fs := st.fs
	st.switchover = nil
	for i := range st.subsets {
		sp := &st.subsets[i]
		u := &fleetv1.PlacementUpdate{MaxUnavailable: d.Allowed[sp.planned.Name], Leader: fleetv1.LeaderHold}
		sp.planned.Update = u
		if d.LeaderTurn != sp.planned.Name || sp.roles == nil || len(sp.roles.Leaders) == 0 {
			continue
		}
		pod := sp.roles.Leaders[0]
		cur := fs.Status.Switchover.DeepCopy()
		if cur == nil || cur.Pod != pod {
			cur = &fleetv1.SwitchoverStatus{Pod: pod, Subset: sp.planned.Name, Cluster: sp.planned.Cluster, RequestedAt: st.now}
		}
		deadline := cur.RequestedAt.Add(time.Duration(fs.Spec.Switchover.DeadlineSecondsOrDefault()) * time.Second)
		switch {
		case st.now.Time.Before(deadline):
			u.Leader = fleetv1.LeaderSwitchover
			st.failoverRequeue = minPositive(st.failoverRequeue, deadline.Sub(st.now.Time)+time.Second)
		case fs.Spec.Switchover.PolicyOrDefault() == fleetv1.SwitchoverBestEffort:
			u.Leader, cur.Skipped = fleetv1.LeaderUpdateNow, true
		default:
			u.Leader, cur.Held = fleetv1.LeaderSwitchover, true
		}
		st.switchover = cur
	}
}

// rollingOut reports whether a rollout of a changed template is in progress:
// the spec's revision differs from the one every instance ran when the last
// rollout (or the creation) completed.
func rollingOut(st *state, status *fleetv1.FleetSetStatus) bool {
	return st.rolloutDecision != nil && !st.rolloutDecision.Complete && status.CurrentRevision != "" && status.CurrentRevision != st.fleetRevision
}

// foldRollout writes the fleet's revisions, updated counts and the rollout's
// progress time into status.
func foldRollout(st *state, status *fleetv1.FleetSetStatus) {
	if st.rolloutDecision == nil {
		return
	}
	d := st.rolloutDecision
	progressed := status.UpdateRevision != st.fleetRevision || d.Updated > status.UpdatedReplicas || d.UpdatedReady > status.UpdatedReadyReplicas
	status.Switchover = st.switchover
	status.UpdateRevision = st.fleetRevision
	status.UpdatedReplicas, status.UpdatedReadyReplicas = d.Updated, d.UpdatedReady
	partition := int32(0)
	if ru := rollingUpdate(st.fs); ru != nil {
		partition = ru.Partition
	}
	switch {
	case d.Complete && partition == 0:
		status.CurrentRevision = st.fleetRevision
		status.RolloutProgressTime = nil
	case !rollingOut(st, status):
		status.RolloutProgressTime = nil
	case progressed || status.RolloutProgressTime == nil:
		status.RolloutProgressTime = st.now.DeepCopy()
	}
}

// progressDeadline returns rollingUpdate.progressDeadlineSeconds as a
// duration.
func progressDeadline(fs *fleetv1.FleetSet) time.Duration {
	return time.Duration(rollingUpdate(fs).ProgressDeadlineSecondsOrDefault()) * time.Second
}

// rolloutProgress returns the Progressing reason and message of a rollout:
// ok is true while one is in progress (RolloutBlocked, RolloutPaused or
// RolloutUpdating); when a rollout stopped at its partition it returns
// RolloutPartitioned with ok false; otherwise "", "", false.
func rolloutProgress(st *state, status *fleetv1.FleetSetStatus) (string, string, bool) {
	if st.rolloutDecision == nil {
		return "", "", false
	}
	d := st.rolloutDecision
	fleet := fmt.Sprintf("revision %s: %d/%d instances updated, %d updated and ready", st.fleetRevision, d.Updated, st.fs.Spec.Replicas, d.UpdatedReady)
	if !rollingOut(st, status) {
		if ru := rollingUpdate(st.fs); ru != nil && d.Complete && ru.Partition > 0 && status.CurrentRevision != st.fleetRevision {
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
	ru := rollingUpdate(st.fs)
	switch {
	case len(d.Blocked) > 0:
		return fleetv1.ReasonRolloutBlocked, strings.Join(d.Blocked, "; ") + "; waiting; " + fleet, true
	case ru != nil && status.RolloutProgressTime != nil && !ru.Paused && st.now.Sub(status.RolloutProgressTime.Time) > progressDeadline(st.fs):
		return fleetv1.ReasonRolloutBlocked, fmt.Sprintf("no progress for more than %s: %s; waiting; %s",
			progressDeadline(st.fs), strings.Join(updating, ", "), fleet), true
	case st.switchover != nil && st.switchover.Held:
		return fleetv1.ReasonRolloutBlocked, fmt.Sprintf("%s: leader %s in cluster %s has not handed its role over since %s (switchover policy Required); waiting; %s",
			fleetv1.ReasonSwitchoverHeld, st.switchover.Pod, st.switchover.Cluster, st.switchover.RequestedAt.UTC().Format(time.RFC3339), fleet), true
	case ru != nil && ru.Paused:
		return fleetv1.ReasonRolloutPaused, "rollingUpdate.paused; at " + strings.Join(updating, ", ") + "; " + fleet, true
	}
	return fleetv1.ReasonRolloutUpdating, "updating " + strings.Join(updating, ", ") + "; " + fleet, true
}

// rolloutEvents returns one Normal event per subset step of a rollout: a
// subset that became Updating, or that became Updated while old shows a
// rollout under way (its updateRevision set and not yet current): from
// Updating, and also from any other phase, since a subset whose cluster was
// cut off mid-step may come back already updated without its status ever
// showing the end of Updating.
func rolloutEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	rolling := old.UpdateRevision != "" && old.UpdateRevision != old.CurrentRevision
	was := map[string]fleetv1.SubsetRolloutPhase{}
	for _, ss := range old.Subsets {
		was[ss.Name] = ss.Rollout
	}
	var out []pendingEvent
	for _, ss := range cur.Subsets {
		switch {
		case ss.Rollout == fleetv1.SubsetUpdating && was[ss.Name] != fleetv1.SubsetUpdating:
			out = append(out, pendingEvent{corev1.EventTypeNormal, EventSubsetUpdating,
				fmt.Sprintf("Updating subset %s on cluster %s to revision %s", ss.Name, ss.Cluster, cur.UpdateRevision)})
		case ss.Rollout == fleetv1.SubsetUpdated && was[ss.Name] != fleetv1.SubsetUpdated &&
			(was[ss.Name] == fleetv1.SubsetUpdating || rolling):
			out = append(out, pendingEvent{corev1.EventTypeNormal, EventSubsetUpdated,
				fmt.Sprintf("Subset %s on cluster %s updated to revision %s", ss.Name, ss.Cluster, cur.UpdateRevision)})
		}
	}
	return out
}

// switchoverEvents returns the events of a role-ordered rollout's
// switchover: requested (Normal), skipped after the deadline (Warning,
// BestEffort), held (Warning, Required), each once.
func switchoverEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	s := cur.Switchover
	if s == nil {
		return nil
	}
	var out []pendingEvent
	o := old.Switchover
	if o == nil || o.Pod != s.Pod {
		out = append(out, pendingEvent{corev1.EventTypeNormal, "SwitchoverRequested",
			fmt.Sprintf("Every other instance is updated: asked leader %s in cluster %s to hand its role over before it is updated", s.Pod, s.Cluster)})
		o = &fleetv1.SwitchoverStatus{}
	}
	if s.Skipped && !o.Skipped {
		out = append(out, pendingEvent{corev1.EventTypeWarning, fleetv1.ReasonSwitchoverSkipped,
			fmt.Sprintf("Leader %s in cluster %s did not hand its role over before the deadline: updating it anyway (switchover policy BestEffort)", s.Pod, s.Cluster)})
	}
	if s.Held && !o.Held {
		out = append(out, pendingEvent{corev1.EventTypeWarning, fleetv1.ReasonSwitchoverHeld,
			fmt.Sprintf("Leader %s in cluster %s did not hand its role over before the deadline: the rollout holds (switchover policy Required)", s.Pod, s.Cluster)})
	}
	return out
}

// rolloutRequeue returns when to reconcile again without an event: when an
// unpaused rollout's progress deadline passes, so RolloutBlocked is set on
// time; 0 otherwise.
func rolloutRequeue(st *state, status *fleetv1.FleetSetStatus) time.Duration {
	ru := rollingUpdate(st.fs)
	if ru == nil || ru.Paused || status.RolloutProgressTime == nil || !rollingOut(st, status) {
		return 0
	}
	return max(time.Second, status.RolloutProgressTime.Add(progressDeadline(st.fs)).Sub(st.now.Time)+time.Second)
}
