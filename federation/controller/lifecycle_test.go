package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

func TestLeaveHold(t *testing.T) {
	leaves := func(reason fleetv1.LeaveReason, ordinals ...int32) []fleetv1.PlacementLeave {
		var out []fleetv1.PlacementLeave
		for _, o := range ordinals {
			out = append(out, fleetv1.PlacementLeave{Ordinal: o, Reason: reason})
		}
		return out
	}
	tests := []struct {
		name                 string
		held, planned, start int32
		left                 []int32
		reason               fleetv1.LeaveReason
		wantReplicas         int32
		wantLeave            []fleetv1.PlacementLeave
	}{
		{name: "scale-up: no leave", held: 3, planned: 5, start: 1000, wantReplicas: 5},
		{name: "steady: no leave", held: 3, planned: 3, start: 1000, wantReplicas: 3},
		{name: "5 to 3, nothing left yet: hold 5, ordinals 1003 and 1004 leave", held: 5, planned: 3, start: 1000, reason: fleetv1.LeaveScaledDown,
			wantReplicas: 5, wantLeave: leaves(fleetv1.LeaveScaledDown, 1003, 1004)},
		{name: "5 to 3, one left: still hold", held: 5, planned: 3, start: 1000, left: []int32{1004}, reason: fleetv1.LeaveScaledDown,
			wantReplicas: 5, wantLeave: leaves(fleetv1.LeaveScaledDown, 1003, 1004)},
		{name: "5 to 3, both left: lower to 3", held: 5, planned: 3, start: 1000, left: []int32{1003, 1004}, reason: fleetv1.LeavePurged,
			wantReplicas: 3, wantLeave: leaves(fleetv1.LeavePurged, 1003, 1004)},
		{name: "left ordinals of an earlier scale-down do not count", held: 2, planned: 1, start: 0, left: []int32{4}, reason: fleetv1.LeaveScaledDown,
			wantReplicas: 2, wantLeave: leaves(fleetv1.LeaveScaledDown, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, l := LeaveHold(tc.held, tc.planned, tc.start, tc.left, tc.reason)
			if r != tc.wantReplicas {
				t.Errorf("replicas: want %d, got %d", tc.wantReplicas, r)
			}
			if diff := cmp.Diff(tc.wantLeave, l); diff != "" {
				t.Errorf("leave (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPlanCandidates(t *testing.T) {
	fs := &fleetv1.FleetSet{}
	fs.Name = "db"
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}}}
	sub := func(name string, start, replicas, updated int32) subsetPlan {
		sp := subsetPlan{}
		sp.planned.Name, sp.planned.OrdinalStart, sp.planned.Replicas = name, start, replicas
		sp.rollout.revision = "r2"
		sp.feedback = &manifestwork.StatefulSetFeedback{Replicas: replicas, ReadyReplicas: replicas, UpdatedReplicas: updated, FleetRevision: "r2",
			Generation: 1, ObservedGeneration: 1}
		return sp
	}
	st := &state{fs: fs, subsets: []subsetPlan{sub("east", 0, 2, 2), sub("west", 1000, 2, 1), sub("north", 2000, 1, 0)}}
	planLifecycle(st)
	want := []string{"db-east-0", "db-east-1"}
	if diff := cmp.Diff([]string(nil), st.subsets[0].lifecycle.candidates); diff != "" {
		t.Errorf("updated subset east (-want,+got):\n%s", diff)
	}
	for _, i := range []int{1, 2} {
		if diff := cmp.Diff(want, st.subsets[i].lifecycle.candidates); diff != "" {
			t.Errorf("subset %s: candidates (-want,+got):\n%s", st.subsets[i].planned.Name, diff)
		}
	}
}

func TestClaimsLeft(t *testing.T) {
	left := func(c string, n int32) *fleetv1.SubsetClaims { return &fleetv1.SubsetClaims{LeftIn: c, Replicas: n} }
	tests := []struct {
		name             string
		prev             *fleetv1.SubsetClaims
		prevCluster, now string
		prevReplicas     int32
		want             *fleetv1.SubsetClaims
	}{
		{name: "new subset", now: "east"},
		{name: "at home", prevCluster: "east", prevReplicas: 3, now: "east"},
		{name: "relocated east to west: 3 claims left in east", prevCluster: "east", prevReplicas: 3, now: "west", want: left("east", 3)},
		{name: "relocated again, to north: still east's", prev: left("east", 3), prevCluster: "west", prevReplicas: 3, now: "north", want: left("east", 3)},
		{name: "failed back to east: on its claims again", prev: left("east", 3), prevCluster: "west", prevReplicas: 3, now: "east"},
		{name: "scaled to 0 then moved: nothing left", prevCluster: "east", now: "west"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClaimsLeft(tc.prev, tc.prevCluster, tc.prevReplicas, tc.now)); diff != "" {
				t.Errorf("ClaimsLeft (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPlanLifecycleOrigin(t *testing.T) {
	fs := &fleetv1.FleetSet{}
	fs.Name = "db"
	fs.Spec.Topology.Subsets = []fleetv1.Subset{{Name: "east", Cluster: "east"}, {Name: "west", Cluster: "west"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{MemberJoin: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}}}
	fs.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "east", Replicas: 3}, {Name: "west", Cluster: "west", Replicas: 2}}
	east := subsetPlan{}
	east.planned.Name, east.planned.Cluster, east.planned.Replicas = "east", "west", 4
	east.failoverPhase, east.epoch = fleetv1.SubsetFailedOver, 1
	west := subsetPlan{}
	west.planned.Name, west.planned.Cluster, west.planned.Replicas = "west", "west", 2
	st := &state{fs: fs, subsets: []subsetPlan{east, west}}
	planClaims(st)
	planLifecycle(st)
	want := &fleetv1.SubsetOrigin{Cluster: "east", Epoch: 1, Reason: fleetv1.LeaveRelocated, Replicas: 3}
	if diff := cmp.Diff(want, st.subsets[0].lifecycle.origin); diff != "" {
		t.Errorf("relocated east: origin (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(&fleetv1.SubsetClaims{LeftIn: "east", Replicas: 3}, st.subsets[0].claimsLeft); diff != "" {
		t.Errorf("relocated east: claims left (-want,+got):\n%s", diff)
	}
	if o := st.subsets[1].lifecycle.origin; o != nil || st.subsets[1].claimsLeft != nil {
		t.Errorf("west at home: origin %+v, claims %+v; want none", o, st.subsets[1].claimsLeft)
	}
}
