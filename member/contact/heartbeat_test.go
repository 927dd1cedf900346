package contact

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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
