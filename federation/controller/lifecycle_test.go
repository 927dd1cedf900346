package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
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
