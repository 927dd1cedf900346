package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/rollout"
)

// TestRolloutProgress checks the Progressing reason of a rollout in
// progress: updating, paused, blocked by an unavailable cluster, blocked by
// the progress deadline; and the requeue that sets the deadline on time.
func TestRolloutProgress(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC))
	fs := func(paused bool) *fleetv1.FleetSet {
		return &fleetv1.FleetSet{Spec: fleetv1.FleetSetSpec{Replicas: 9, UpdateStrategy: fleetv1.FleetSetUpdateStrategy{
			Type: fleetv1.RollingUpdateStrategyType, RollingUpdate: &fleetv1.RollingUpdateFleetSet{Paused: paused, ProgressDeadlineSeconds: ptr.To[int32](60)}}}}
	}
	status := func(progress time.Duration) *fleetv1.FleetSetStatus {
		return &fleetv1.FleetSetStatus{CurrentRevision: "old", RolloutProgressTime: ptr.To(metav1.NewTime(now.Add(-progress))),
			Subsets: []fleetv1.SubsetStatus{{Name: "west", Cluster: "west", Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 4}}}
	}
	updating := &rollout.Decision{Updating: []string{"west"}}
	tests := []struct {
		name    string
		fs      *fleetv1.FleetSet
		d       *rollout.Decision
		status  *fleetv1.FleetSetStatus
		want    string
		requeue time.Duration
	}{
		{"updating within the deadline", fs(false), updating, status(10 * time.Second), fleetv1.ReasonRolloutUpdating, 51 * time.Second},
		{"no progress past the deadline", fs(false), updating, status(2 * time.Minute), fleetv1.ReasonRolloutBlocked, time.Second},
		{"paused: no deadline", fs(true), updating, status(2 * time.Minute), fleetv1.ReasonRolloutPaused, 0},
		{"cluster unavailable", fs(false), &rollout.Decision{Updating: []string{"west"}, Blocked: []string{"subset west: cluster west is unavailable"}}, status(0), fleetv1.ReasonRolloutBlocked, 61 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &state{fs: tt.fs, rollout: rolloutPlan{ru: rollingUpdate(tt.fs), decision: tt.d, fleetRevision: "new"}, now: now}
			reason, msg, ok := rolloutProgress(st, tt.status)
			if !ok || reason != tt.want {
				t.Errorf("rolloutProgress = %s %q %v, want %s", reason, msg, ok, tt.want)
			}
			if got := rolloutRequeue(st, tt.status); got != tt.requeue {
				t.Errorf("requeue after %v, want %v", got, tt.requeue)
			}
		})
	}
}

// TestRolloutEvents checks one event per subset step, including a subset
// that reaches Updated from a phase other than Updating while a rollout is
// under way (its cluster came back already updated), and none outside a
// rollout.
func TestRolloutEvents(t *testing.T) {
	status := func(update, current string, phases ...fleetv1.SubsetRolloutPhase) *fleetv1.FleetSetStatus {
		s := &fleetv1.FleetSetStatus{UpdateRevision: update, CurrentRevision: current}
		for i, p := range phases {
			name := []string{"east", "west"}[i]
			s.Subsets = append(s.Subsets, fleetv1.SubsetStatus{Name: name, Cluster: name, Rollout: p})
		}
		return s
	}
	reasons := func(es []pendingEvent) []string {
		var out []string
		for _, e := range es {
			name := "west"
			if strings.Contains(strings.ToLower(e.message), "subset east ") {
				name = "east"
			}
			out = append(out, e.reason+" "+name)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		old, cur *fleetv1.FleetSetStatus
		want     []string
	}{
		{"step starts", status("r2", "r1", fleetv1.SubsetWaiting, fleetv1.SubsetWaiting), status("r2", "r1", fleetv1.SubsetUpdating, fleetv1.SubsetWaiting), []string{"SubsetUpdating east"}},
		{"step ends", status("r2", "r1", fleetv1.SubsetUpdating, fleetv1.SubsetWaiting), status("r2", "r1", fleetv1.SubsetUpdated, fleetv1.SubsetUpdating), []string{"SubsetUpdated east", "SubsetUpdating west"}},
		{"last step ends, rollout complete", status("r2", "r1", fleetv1.SubsetUpdated, fleetv1.SubsetUpdating), status("r2", "r2", fleetv1.SubsetUpdated, fleetv1.SubsetUpdated), []string{"SubsetUpdated west"}},
		{"updated without a recorded Updating, mid-rollout", status("r2", "r1", fleetv1.SubsetUpdated, ""), status("r2", "r2", fleetv1.SubsetUpdated, fleetv1.SubsetUpdated), []string{"SubsetUpdated west"}},
		{"new FleetSet: no rollout", status("", "", "", ""), status("r1", "r1", fleetv1.SubsetUpdated, fleetv1.SubsetUpdated), nil},
		{"at rest", status("r1", "r1", fleetv1.SubsetUpdated, fleetv1.SubsetUpdated), status("r1", "r1", fleetv1.SubsetUpdated, fleetv1.SubsetUpdated), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reasons(rolloutEvents(tc.old, tc.cur)); !slices.Equal(got, tc.want) {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}
