package controller

import (
	"slices"
	"time"

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

// planRollout is the reconcile's rollout step: it gives each subset its
// revision (its templates and dependencies: rollout.SubsetRevision), the
// fleet its revision, and, under RollingUpdate, each subset its partition
// from the rollout planner (package rollout) fed with the feedback observed
// (observeWorks). Under Manual the partitions stay manualUpdate's; the
// decision still counts updated instances. It returns an error naming the
// field when a revision or maxUnavailable cannot be computed.
func planRollout(st *state) error {
	fs := st.fs
	st.rollout = rolloutPlan{ru: rollingUpdate(fs)}
	rev, err := subsetRevisions(st)
	if err != nil {
		return err
	}
	st.rollout.fleetRevision = rev
	ru := st.rollout.ru
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
		subsets[k] = rolloutSubset(&st.subsets[i])
	}
	d := rollout.Plan(spec, subsets)
	st.rollout.decision = &d
	if ru != nil {
		for i := range st.subsets {
			sp := &st.subsets[i]
			sp.rollout.partition, sp.rollout.partitioned = d.Partitions[sp.planned.Name], true
		}
	}
	if spec.LeaderLast {
		planLeaderUpdates(st, &d)
	}
	return nil
}

// subsetRevisions stamps each subset's revision and returns the fleet's
// (the template's when there are no subsets).
func subsetRevisions(st *state) (string, error) {
	fs := st.fs
	revisions := make([]string, len(st.subsets))
	for i := range st.subsets {
		sp := &st.subsets[i]
		tmpl, claims := &fs.Spec.Template, fs.Spec.VolumeClaimTemplates
		if sp.rendered.template != nil {
			tmpl, claims = sp.rendered.template, sp.rendered.claims
		}
		rev, err := rollout.SubsetRevision(*tmpl, claims, sp.rendered.dependenciesHash)
		if err != nil {
			return "", err
		}
		sp.rollout.revision = rev
		revisions[i] = sp.planned.Name + "=" + rev
	}
	if rev := rollout.FleetRevision(revisions); rev != "" {
		return rev, nil
	}
	return rollout.Revision(fs.Spec.Template, fs.Spec.VolumeClaimTemplates)
}

// rolloutSubset is what the rollout planner knows of sp: its plan, its
// cluster's availability and the feedback observed.
func rolloutSubset(sp *subsetPlan) rollout.Subset {
	s := rollout.Subset{Name: sp.planned.Name, Cluster: sp.planned.Cluster, Replicas: sp.planned.Replicas, ClusterAvailable: sp.clusterAvailable,
		Target: sp.rollout.revision}
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
	return s
}

// planLeaderUpdates gives every subset of a role-ordered rollout its
// member's instruction (SubsetPlacement spec.update): the unavailability
// the rollout allows it, and what to do with its leader — Hold, except on
// the leader's turn (every other instance updated): Switchover (ask the
// leader to hand its role over, status.switchover recording when) until
// spec.switchover.deadlineSeconds, then Update under policy BestEffort
// (Skipped) or Switchover still under Required (Held: the rollout waits).
// A leader that handed its role over is an outdated follower like any
// other: the next reconcile updates it in its subset's turn. While a
// switchover an operator asked for runs (status.requestedSwitchover), the
// leader is held.
func planLeaderUpdates(st *state, d *rollout.Decision) {
	fs := st.fs
	for i := range st.subsets {
		sp := &st.subsets[i]
		u := &fleetv1.PlacementUpdate{MaxUnavailable: d.Allowed[sp.planned.Name], Leader: fleetv1.LeaderHold}
		sp.rollout.update = u
		if d.LeaderTurn != sp.planned.Name || sp.roles == nil || len(sp.roles.Leaders) == 0 {
			continue
		}
		if fs.Status.RequestedSwitchover != nil {
			// An operator's switchover runs (switchover.go): the leader
			// is held until it ends (its deadline bounds the wait), so
			// that one switchover runs at a time.
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
			st.rollout.requeue = minPositive(st.rollout.requeue, deadline.Sub(st.now.Time)+time.Second)
		case fs.Spec.Switchover.PolicyOrDefault() == fleetv1.SwitchoverBestEffort:
			u.Leader, cur.Skipped = fleetv1.LeaderUpdateNow, true
		default:
			u.Leader, cur.Held = fleetv1.LeaderSwitchover, true
		}
		st.rollout.switchover = cur
	}
}
