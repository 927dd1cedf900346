package controller

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// The reconcile step of lifecycle actions (api/v1alpha1/lifecycle.go): it
// holds a subset's scale-down until its member reports the leaving
// instances' memberLeave done, tells a relocated subset where it came from,
// and tells one subset to run rolloutComplete once the fleet runs one
// revision.

// subsetLifecycle is the lifecycle-action step's output for one subset.
type subsetLifecycle struct {
	// on: the FleetSet has lifecycle actions (the rest is rendered).
	on bool
	// hold, when > 0, is the replicas the subset's StatefulSet keeps while
	// leave runs.
	hold  int32
	leave []fleetv1.PlacementLeave
	// origin is where a relocated subset came from.
	origin *fleetv1.SubsetOrigin
	// rolloutComplete is the revision this subset's member runs
	// rolloutComplete for ("" none).
	rolloutComplete string
	// candidates are the switchover candidates of other subsets.
	candidates []string
	// switchover is a switchover an operator asked for, for this subset's
	// member to run in its leader.
	switchover *fleetv1.PlacementSwitchover
}

// apply writes the step's output into the subset to deliver.
func (l subsetLifecycle) apply(p *manifestwork.Subset) {
	if !l.on {
		return
	}
	if l.hold > p.Replicas {
		p.Replicas = l.hold
	}
	p.Leave, p.Origin, p.RolloutComplete, p.Candidates, p.Switchover = l.leave, l.origin, l.rolloutComplete, l.candidates, l.switchover
}

// LeaveHold decides a subset's StatefulSet replicas when the FleetSet has
// a memberLeave action: held is the replicas its member holds now (as the
// delivered ManifestWork says), planned the division's, start its first
// ordinal, left the ordinals whose leave the member reported done. Going
// down from held to planned, the ordinals [start+planned, start+held) leave
// with reason; replicas stay held until every one of them left. It returns
// the replicas to deliver and the leave list (nil when not going down). It
// is pure.
func LeaveHold(held, planned, start int32, left []int32, reason fleetv1.LeaveReason) (int32, []fleetv1.PlacementLeave) {
	if held <= planned {
		return planned, nil
	}
	var leave []fleetv1.PlacementLeave
	done := true
	for o := start + planned; o < start+held; o++ {
		leave = append(leave, fleetv1.PlacementLeave{Ordinal: o, Reason: reason})
		if !slices.Contains(left, o) {
			done = false
		}
	}
	if done {
		return planned, leave
	}
	return held, leave
}

// leaveReason is the reason a scaled-down instance leaves with: Purged
// when the StatefulSet deletes its claims on scale-down, else ScaledDown.
func leaveReason(fs *fleetv1.FleetSet) fleetv1.LeaveReason {
	if p := fs.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		return fleetv1.LeavePurged
	}
	return fleetv1.LeaveScaledDown
}

// planLifecycle fills each subset's lifecycle output (see LeaveHold) and
// reports a held scale-down whose leave fails.
func planLifecycle(st *state) {
	la := st.fs.Spec.LifecycleActions
	if la == nil {
		return
	}
	reason := leaveReason(st.fs)
	for i := range st.subsets {
		sp := &st.subsets[i]
		sp.lifecycle = subsetLifecycle{on: true}
		if sp.failoverPhase == fleetv1.SubsetFailedOver {
			for _, s := range st.fs.Spec.Topology.Subsets {
				if s.Name == sp.planned.Name && s.Cluster != sp.planned.Cluster {
					sp.lifecycle.origin = &fleetv1.SubsetOrigin{Cluster: s.Cluster, Epoch: sp.epoch, Reason: fleetv1.LeaveRelocated}
					if c := sp.claimsLeft; c != nil && c.LeftIn == s.Cluster {
						sp.lifecycle.origin.Replicas = c.Replicas
					}
				}
			}
		}
		if la.MemberLeave == nil || sp.draining || sp.work == nil {
			continue
		}
		name := manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name)
		held, ok := manifestwork.HeldReplicas(sp.work, name)
		if !ok {
			continue
		}
		var left []int32
		if sp.actions != nil {
			left = sp.actions.Left
		}
		replicas, leave := LeaveHold(held, sp.planned.Replicas, sp.planned.OrdinalStart, left, reason)
		sp.lifecycle.leave = leave
		if replicas > sp.planned.Replicas {
			sp.lifecycle.hold = replicas
			if sp.actions != nil && sp.actions.LeaveFailed != "" {
				st.report(subsetProblem(fleetv1.ReasonMemberLeaveFailed, sp.planned.Name, sp.planned.Cluster, fmt.Sprintf(
					"scale-down from %d to %d held: memberLeave fails (%s); the StatefulSet keeps %d replicas until it succeeds",
					held, sp.planned.Replicas, sp.actions.LeaveFailed, held)))
			}
		}
	}
	planRolloutComplete(st)
	if la.Switchover != nil {
		planCandidates(st)
	}
}

// updated reports whether every instance of sp runs its revision and is
// Ready, as its member last reported.
func (sp *subsetPlan) updated() bool {
	f := sp.feedback
	return !sp.draining && f != nil && f.Current() && f.FleetRevision == sp.rollout.revision && f.Replicas == sp.planned.Replicas &&
		f.UpdatedReplicas >= sp.planned.Replicas && f.ReadyReplicas >= sp.planned.Replicas
}

// planCandidates gives each subset that is not updated the instances of the
// updated subsets (every instance on its revision and Ready), subset by
// subset in spec order: the switchover candidates its member uses when none of its own
// instances is one (a leader alone in its subset).
func planCandidates(st *state) {
	var names []string
	for i := range st.subsets {
		sp := &st.subsets[i]
		if !sp.updated() {
			continue
		}
		for k := int32(0); k < sp.planned.Replicas && len(names) < fleetv1.MaxFleetViewInstances; k++ {
			names = append(names, fmt.Sprintf("%s-%d", manifestwork.StatefulSetName(st.fs.Name, sp.planned.Name), sp.planned.OrdinalStart+k))
		}
	}
	for i := range st.subsets {
		if sp := &st.subsets[i]; !sp.updated() {
			sp.lifecycle.candidates = names
		}
	}
}

// planRolloutComplete tells one subset to run rolloutComplete for the
// fleet revision once every subset runs it with all its instances updated:
// the subset that reported it done already, else the leader's, else the
// first delivered one.
func planRolloutComplete(st *state) {
	rev := st.rollout.fleetRevision
	if rev == "" || st.fs.Spec.LifecycleActions.RolloutComplete == nil {
		return
	}
	target := -1
	for i := range st.subsets {
		sp := &st.subsets[i]
		if sp.draining {
			continue
		}
		f := sp.feedback
		if f == nil || !f.Current() || f.FleetRevision != sp.rollout.revision || f.UpdatedReplicas < sp.planned.Replicas ||
			f.Replicas != sp.planned.Replicas || sp.lifecycle.hold > 0 {
			return // not complete
		}
		if sp.actions != nil && sp.actions.RolloutComplete == rev {
			target = i
		}
	}
	if target < 0 {
		for i := range st.subsets {
			if sp := &st.subsets[i]; !sp.draining && sp.roles != nil && len(sp.roles.Leaders) > 0 {
				target = i
				break
			}
		}
	}
	if target < 0 {
		for i := range st.subsets {
			if !st.subsets[i].draining && st.subsets[i].planned.Replicas > 0 {
				target = i
				break
			}
		}
	}
	if target >= 0 {
		st.subsets[target].lifecycle.rolloutComplete = rev
	}
}

// ClaimsLeft returns where the claims a subset's instances were created
// with stay while it runs in cluster: prev is its last status.claims, and
// prevCluster and prevReplicas its last status cluster and replicas. A
// subset that leaves the cluster of its claims (a relocation or a move:
// its status cluster changes) records that cluster and how many instances
// had claims there; one that comes back to it runs on them again (nil).
// It is pure.
func ClaimsLeft(prev *fleetv1.SubsetClaims, prevCluster string, prevReplicas int32, cluster string) *fleetv1.SubsetClaims {
	switch {
	case prev != nil && prev.LeftIn == cluster:
		return nil
	case prev != nil:
		return prev.DeepCopy()
	case prevCluster != "" && prevCluster != cluster && prevReplicas > 0:
		return &fleetv1.SubsetClaims{LeftIn: prevCluster, Replicas: prevReplicas}
	}
	return nil
}

// planClaims fills each subset's claims record (ClaimsLeft) from the
// FleetSet's last status; a draining subset keeps its record (it has not
// arrived anywhere yet).
func planClaims(st *state) {
	prev := map[string]fleetv1.SubsetStatus{}
	for _, ss := range st.fs.Status.Subsets {
		prev[ss.Name] = ss
	}
	for i := range st.subsets {
		sp := &st.subsets[i]
		ps, ok := prev[sp.planned.Name]
		if !ok {
			continue
		}
		if sp.draining {
			sp.claimsLeft = ps.Claims.DeepCopy()
			continue
		}
		sp.claimsLeft = ClaimsLeft(ps.Claims, ps.Cluster, ps.Replicas, sp.planned.Cluster)
		if sp.claimsLeft == nil && sp.failoverPhase == fleetv1.SubsetFailedOver {
			// Relocated before the hub recorded claims: its home holds them.
			for _, s := range st.fs.Spec.Topology.Subsets {
				if s.Name == sp.planned.Name && s.Cluster != "" && s.Cluster != sp.planned.Cluster && sp.planned.Replicas > 0 {
					sp.claimsLeft = &fleetv1.SubsetClaims{LeftIn: s.Cluster, Replicas: sp.planned.Replicas}
				}
			}
		}
	}
}
