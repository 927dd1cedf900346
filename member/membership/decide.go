package membership

import (
	"strconv"

	v1 "k8s.io/api/core/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Claim is what the join decision reads of one of an instance's claims.
type Claim struct {
	// Name of the PersistentVolumeClaim.
	Name string
	// Annotations of the claim.
	Annotations map[string]string
}

// JoinInput is what Join decides from.
type JoinInput struct {
	// Pod is the instance's pod.
	Pod *v1.Pod
	// Claims are the pod's claims (none: the pod's own annotation counts).
	Claims []Claim
	// Epoch is the placement's spec.actions.epoch; Origin its
	// spec.actions.origin.
	Epoch  int64
	Origin *fleetv1.SubsetOrigin
	// JoinedBefore: the ordinal is in the placement's status.actions.joined.
	JoinedBefore bool
}

// JoinDecision is what Join decided.
type JoinDecision struct {
	// Joined: the instance has joined already; only its condition is set.
	Joined bool
	// Reason is FLEETSET_JOIN_REASON when it has not.
	Reason fleetv1.JoinReason
	// LeaveFirst is the reason memberLeave runs with in the pod before it
	// joins (a relocated or moved instance); "" for none.
	LeaveFirst fleetv1.LeaveReason
}

// Join decides whether in's instance has joined, and if not with which
// reason it joins (see the package documentation). It is pure.
func Join(in JoinInput) JoinDecision {
	epoch := in.Epoch
	if len(in.Claims) == 0 {
		if in.Pod.Annotations[fleetv1.AnnotationMemberJoined] == string(in.Pod.UID) {
			return JoinDecision{Joined: true}
		}
	} else if allJoined(in.Claims, epoch) {
		return JoinDecision{Joined: true}
	}
	for _, c := range in.Claims {
		if c.Annotations[fleetv1.AnnotationMemberLeft] != "" && c.Annotations[fleetv1.AnnotationMemberJoined] == "" {
			return JoinDecision{Reason: fleetv1.JoinRejoin}
		}
	}
	if in.JoinedBefore {
		return JoinDecision{Reason: fleetv1.JoinFreshVolume}
	}
	switch {
	case in.Origin != nil && in.Origin.Reason == fleetv1.LeaveMoved:
		return JoinDecision{Reason: fleetv1.JoinMoved, LeaveFirst: fleetv1.LeaveMoved}
	case in.Origin != nil:
		return JoinDecision{Reason: fleetv1.JoinRelocated, LeaveFirst: fleetv1.LeaveRelocated}
	case in.Epoch > 0:
		// The subset moved here (a spec move or a failback).
		return JoinDecision{Reason: fleetv1.JoinMoved, LeaveFirst: fleetv1.LeaveMoved}
	}
	return JoinDecision{Reason: fleetv1.JoinFirstStart}
}

// allJoined reports whether every claim carries a member-joined mark at
// epoch or later.
func allJoined(claims []Claim, epoch int64) bool {
	for _, c := range claims {
		if c.Annotations[fleetv1.AnnotationMemberJoined] == "" {
			return false
		}
		e, _ := strconv.ParseInt(c.Annotations[fleetv1.AnnotationMemberJoinedEpoch], 10, 64)
		if e < epoch {
			return false
		}
	}
	return true
}

// ConditionTrue reports whether p's condition fleetset.io/member-joined is
// True.
func ConditionTrue(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == fleetv1.ConditionMemberJoined {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// ContainerRunning reports whether p's container name (the first one when
// name is empty) is running.
func ContainerRunning(p *v1.Pod, name string) bool {
	if name == "" && len(p.Spec.Containers) > 0 {
		name = p.Spec.Containers[0].Name
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Running != nil
		}
	}
	return false
}

// Ready reports whether p is Ready.
func Ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// ClaimNames returns the names of the claims p's volumes use, in order.
func ClaimNames(p *v1.Pod) []string {
	var out []string
	for _, vol := range p.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			out = append(out, vol.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// LeftOrdinals returns the ordinals of leave found in done, for
// status.actions.left: those no longer asked for are dropped.
func LeftOrdinals(leave []fleetv1.PlacementLeave, done map[int32]bool) []int32 {
	var out []int32
	for _, l := range leave {
		if done[l.Ordinal] {
			out = append(out, l.Ordinal)
		}
	}
	return out
}
