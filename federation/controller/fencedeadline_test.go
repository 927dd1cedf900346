package controller

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/failover"
	"github.com/fleetset/fleetset/federation/heartbeat"
)

// TestFenceDeadlineUsesTheMembersFence: the hub waits for the longer of the
// fence the spec says today and the one the member reported enforcing at
// its last heartbeat (fence grace lowered during a cut, pods with a longer
// termination grace), and never for less than the spec's.
func TestFenceDeadlineUsesTheMembersFence(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	fs := &fleetv1.FleetSet{Spec: fleetv1.FleetSetSpec{Failover: &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, FenceGraceSeconds: 10}}}
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reported string
		want     time.Duration // fence part of the deadline
	}{
		{"", 30 * time.Second},        // an older member: the spec
		{"120", 120 * time.Second},    // the member enforces longer
		{"5", 30 * time.Second},       // shorter: the spec still counts
		{"junk", 30 * time.Second},    // unreadable: the spec
		{"9999999", 30 * time.Second}, // past the bound: not believed
	} {
		t.Run(tc.reported, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(now)
			l := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: fleetv1.HeartbeatLeaseName, Annotations: map[string]string{}},
				Spec:       coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(now))},
			}
			if tc.reported != "" {
				l.Annotations[fleetv1.AnnotationMemberFenceSeconds] = tc.reported
			}
			r := &FleetSetReconciler{Heartbeats: heartbeat.NewObserver(clk), APIReader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(l).Build()}
			var out failover.Cluster
			if err := r.fenceDeadline(t.Context(), fs, nil, "east", true, &out); err != nil {
				t.Fatal(err)
			}
			timeout := 15 * time.Second
			want := now.Add(timeout + fleetv1.FenceConfirmation(timeout) + tc.want)
			if !out.Fenced.Equal(want) {
				t.Errorf("fence deadline %s, want %s (%s)", out.Fenced, want, out.Deadline)
			}
			if tc.reported == "120" && !strings.Contains(out.Deadline, "the member enforces") {
				t.Errorf("deadline %q does not say the member's fence counts", out.Deadline)
			}
		})
	}
}
