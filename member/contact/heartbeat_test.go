package contact

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
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
	"k8s.io/component-base/metrics/testutil"
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

// timedOut is what client-go returns for a request that hung until its
// deadline (a silent partition: packets dropped, the connection open).
func timedOut(verb string) error {
	return &url.Error{Op: verb, URL: "https://hub.example:6443/apis/coordination.k8s.io/v1/namespaces/east/leases/fleetset-member",
		Err: fmt.Errorf("%w (Client.Timeout exceeded while awaiting headers)", context.DeadlineExceeded)}
}

// TestBeatCountsNoTimedOutRequest: a hub read or write that hangs until its
// deadline (errors.Is context.DeadlineExceeded, as client-go returns it) or
// is canceled is a failed beat: the Monitor loses the hub after the timeout
// and the failure is counted. client-go's retry.OnError turned such errors
// into nil, and a member cut off by iptables DROP stayed InContact.
func TestBeatCountsNoTimedOutRequest(t *testing.T) {
	for _, tc := range []struct {
		name, verb string
		err        error
	}{
		{"get timed out", "get", timedOut("Get")},
		{"update timed out", "update", timedOut("Put")},
		{"create timed out", "create", timedOut("Post")},
		{"get canceled", "get", context.Canceled},
		{"get deadline", "get", context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub, local := fake.NewClientset(), fake.NewClientset()
			clk := clocktesting.NewFakeClock(time.Now())
			mon := NewMonitor(clk, 9*time.Second)
			hb := &Heartbeat{Cluster: "east", Identity: "a", Hub: hub.CoordinationV1(), Local: local.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second}
			if tc.verb != "create" {
				if err := hb.Beat(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			hub.PrependReactor(tc.verb, "leases", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			before := failures(t)
			for range 4 {
				clk.Step(3 * time.Second)
				if err := hb.Beat(context.Background()); err == nil {
					t.Fatal("Beat through a timed-out hub request: nil error, want the request's")
				}
			}
			if st := mon.Status(); st.InContact || (tc.verb != "create" && !st.Lost) {
				t.Errorf("Monitor after 12s of timed-out beats (timeout 9s): %+v, want lost", st)
			}
			if got := failures(t) - before; got != 4 {
				t.Errorf("heartbeat failures counted: %v, want 4", got)
			}
			if _, err := local.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(context.Background(), fleetv1.MemberLeaseName, metav1.GetOptions{}); tc.verb == "create" && err == nil {
				t.Error("local record written after a failed hub beat")
			}
		})
	}
}

// TestBeatCountsOnlyAcknowledgedWrite: a write the hub answered without the
// Lease as written (no object, an empty one, another renewTime, the version
// read before) is not contact.
func TestBeatCountsOnlyAcknowledgedWrite(t *testing.T) {
	for name, answer := range map[string]func(a k8stesting.Action) runtime.Object{
		"no object":    func(k8stesting.Action) runtime.Object { return nil },
		"empty object": func(k8stesting.Action) runtime.Object { return &coordinationv1.Lease{} },
		"stale renewTime": func(a k8stesting.Action) runtime.Object {
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
			l.Spec.RenewTime = &metav1.MicroTime{Time: l.Spec.RenewTime.Add(-time.Minute)}
			return l
		},
		"version read before": func(a k8stesting.Action) runtime.Object {
			return a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy() // resourceVersion unchanged
		},
	} {
		t.Run(name, func(t *testing.T) {
			hub := fake.NewClientset()
			clk := clocktesting.NewFakeClock(time.Now())
			mon := NewMonitor(clk, 9*time.Second)
			hb := &Heartbeat{Cluster: "east", Identity: "a", Hub: hub.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second}
			if err := hb.Beat(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The fake tracker keeps no resourceVersion: give the stored Lease one.
			l, err := hub.CoordinationV1().Leases("east").Get(context.Background(), fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.ResourceVersion = "7"
			if err := hub.Tracker().Update(schema.GroupVersionResource{Group: coordinationv1.GroupName, Version: "v1", Resource: "leases"}, l, "east"); err != nil {
				t.Fatal(err)
			}
			hub.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) { return true, answer(a), nil })
			for range 4 {
				clk.Step(3 * time.Second)
				if err := hb.Beat(context.Background()); err == nil {
					t.Fatal("Beat answered without the written Lease: nil error")
				}
			}
			if st := mon.Status(); st.InContact || !st.Lost {
				t.Errorf("Monitor after 12s of unacknowledged beats (timeout 9s): %+v, want lost", st)
			}
		})
	}
}

// failures reads fleetset_member_heartbeat_failures_total.
func failures(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(heartbeatFailures)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBeatKeepsEveryReplicasPeerURL: two replicas beating on the one hub
// Lease each keep their own entry in fleetset.io/peer-urls, whichever wrote
// last; an entry not rewritten for two timeouts (a replica gone) is
// dropped by the next beat of another.
func TestBeatKeepsEveryReplicasPeerURL(t *testing.T) {
	hub := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	mon := NewMonitor(clk, 9*time.Second)
	beat := func(id string) {
		t.Helper()
		hb := &Heartbeat{Cluster: "east", Identity: id, PeerURL: "https://" + id + ":9443", Hub: hub.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second}
		if err := hb.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() map[string]peerEntry {
		t.Helper()
		l, err := hub.CoordinationV1().Leases("east").Get(context.Background(), fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]peerEntry{}
		if err := json.Unmarshal([]byte(l.Annotations[fleetv1.AnnotationPeerURLs]), &out); err != nil {
			t.Fatalf("%s: %v", fleetv1.AnnotationPeerURLs, err)
		}
		return out
	}
	beat("r1")
	clk.Step(time.Second)
	beat("r2")
	clk.Step(time.Second)
	beat("r1")
	if e := entries(); len(e) != 2 || e["r1"].URL != "https://r1:9443" || e["r2"].URL != "https://r2:9443" {
		t.Fatalf("entries after both replicas beat: %v, want r1's and r2's", e)
	}
	// r2 is gone: r1 beats on alone for two timeouts and more.
	for range 8 {
		clk.Step(3 * time.Second)
		beat("r1")
	}
	if e := entries(); len(e) != 1 || e["r1"].URL == "" {
		t.Errorf("entries 24 s after r2's last beat: %v, want r1's alone", e)
	}
}

// TestBeatCountsContactFromSendTime: a successful beat counts as contact
// from the instant it was sent, not from when the hub's answer came: the
// hub may have seen the write as early as the send, so the member's
// timeout must never end later than the hub's. A write that took 8 s
// (timeout 9 s) leaves the member in contact for 1 s more, not 9 s.
func TestBeatCountsContactFromSendTime(t *testing.T) {
	hub := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	mon := NewMonitor(clk, 9*time.Second)
	hb := &Heartbeat{Cluster: "east", Identity: "a", Hub: hub.CoordinationV1(), Monitor: mon, Clock: clk, Period: 3 * time.Second}
	sent := clk.Now()
	// The hub answers the write 8 s after it was sent (a slow hub).
	hub.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		clk.Step(8 * time.Second)
		return false, nil, nil
	})
	if err := hb.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := hub.CoordinationV1().Leases("east").Get(context.Background(), fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Spec.RenewTime; got == nil || !sameMicro(got.Time, sent) {
		t.Errorf("renewTime %v, want the send time %s", got, sent)
	}
	if st := mon.Status(); st.SinceContact != 8*time.Second || !st.InContact {
		t.Errorf("Monitor when the answer came: %+v, want in contact since the send 8s before", st)
	}
	clk.Step(2 * time.Second)
	if st := mon.Status(); st.InContact || st.SinceContact != 10*time.Second {
		t.Errorf("Monitor 10s after the send (timeout 9s): %+v, want out of contact since the send", st)
	}
}
