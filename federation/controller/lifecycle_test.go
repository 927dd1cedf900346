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
