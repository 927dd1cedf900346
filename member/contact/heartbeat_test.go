package contact

import (
	"context"
	"testing"
	"time"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestBeatRetriesAnotherReplicasWrite: two scheduler replicas beat on the
// same Lease; losing a race to the other's write (a conflict on update, an
// AlreadyExists on create) is retried and is not lost contact.
func TestBeatRetriesAnotherReplicasWrite(t *testing.T) {
	for _, verb := range []string{"create", "update"} {
		t.Run(verb, func(t *testing.T) {
			cs := fake.NewClientset()
			clk := clocktesting.NewFakeClock(time.Now())
			mon := NewMonitor(clk, 9*time.Second)
			hb := &Heartbeat{Cluster: "east", Identity: "replica-a", Hub: cs.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second}
			if verb == "update" {
				if err := hb.Beat(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			lost := false
			cs.PrependReactor(verb, "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				if lost {
					return false, nil, nil
				}
				lost = true
				gr := schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
				if verb == "create" {
					return true, nil, apierrors.NewAlreadyExists(gr, "fleetset-member")
				}
				return true, nil, apierrors.NewConflict(gr, "fleetset-member", nil)
			})
			clk.Step(3 * time.Second)
			if err := hb.Beat(context.Background()); err != nil {
				t.Fatalf("Beat after losing a race: %v, want the write retried", err)
			}
			if !lost {
				t.Fatal("the race was never injected")
			}
			if st := mon.Status(); !st.InContact || st.SinceContact != 0 {
				t.Errorf("Monitor after the retried beat: %+v, want in contact since the beat", st)
			}
		})
	}
}

// TestBeatReportsPeers: the heartbeat writes the member's state and peer
// count on the hub Lease and the count on the local record, from which a
// restarted process restores it.
func TestBeatReportsPeers(t *testing.T) {
	hub, local := fake.NewClientset(), fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	mon := NewMonitor(clk, 9*time.Second)
	hb := &Heartbeat{Cluster: "east", Identity: "a", Hub: hub.CoordinationV1(), Local: local.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second,
		Report: func() Report { return Report{State: "InContact", Reason: "fine", Peers: 0, FenceSeconds: 75} }}
	if err := hb.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := hub.CoordinationV1().Leases("east").Get(context.Background(), fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Annotations[fleetv1.AnnotationMemberFenceSeconds]; got != "75" {
		t.Errorf("hub Lease %s = %q, want 75", fleetv1.AnnotationMemberFenceSeconds, got)
	}
	if got := l.Annotations[fleetv1.AnnotationMemberPeers]; got != "0" {
		t.Errorf("hub Lease %s = %q, want 0", fleetv1.AnnotationMemberPeers, got)
	}
	if got := l.Annotations[fleetv1.AnnotationMemberState]; got != "InContact" {
		t.Errorf("hub Lease %s = %q", fleetv1.AnnotationMemberState, got)
	}
	rec, err := local.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(context.Background(), fleetv1.MemberLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Annotations[fleetv1.AnnotationMemberPeers]; got != "0" || rec.Annotations[fleetv1.AnnotationMemberState] != "" {
		t.Errorf("local record annotations %v, want only %s=0", rec.Annotations, fleetv1.AnnotationMemberPeers)
	}
	restarted := NewMonitor(clk, 9*time.Second)
	(&Heartbeat{Local: local.CoordinationV1(), Monitor: restarted, Clock: clk}).restore(context.Background(), klog.Background())
	if s := restarted.Status(); !s.NoPeers || !s.Known {
		t.Errorf("restored monitor %+v, want a known contact with NoPeers", s)
	}
}
