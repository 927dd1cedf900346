//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// TestFenceGraceLoweredDuringCut cuts a member off whose FleetSet has
// fenceGraceSeconds 60, then lowers it to 0 on the hub: the member enforces
// the 60 s it had (it cannot see the change), so the hub must wait for the
// fence the member reported in its last heartbeat, not today's spec.
// Sampling both members every second, no pod name is Running in two
// clusters; the relocation comes no sooner than 60 s after the cut.
func TestFenceGraceLoweredDuringCut(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpCut, f.members[0].name, "")
	ns := f.newNamespace(t, "e2e-lowered")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0),
		FenceGraceSeconds: 60, Failback: fleetv1.FailbackManual}
	victim, other := f.members[0], f.members[1]
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	// The hub knows only what the member reported: wait for a heartbeat
	// that carries the placement's fence (one period at most).
	eventually(t, time.Minute, victim.name+"'s heartbeat reports its 60 s fence", func(ctx context.Context) (bool, string, error) {
		l := &coordinationv1.Lease{}
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: victim.name, Name: fleetv1.HeartbeatLeaseName}, l); err != nil {
			return false, "", err
		}
		got := l.Annotations[fleetv1.AnnotationMemberFenceSeconds]
		n, err := strconv.Atoi(got)
		return err == nil && n >= 60, fmt.Sprintf("%s=%q", fleetv1.AnnotationMemberFenceSeconds, got), nil
	})
	before, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	s := f.sample(t, ns, "db")
	cut := time.Now()
	f.do(t, framework.OpCut, victim.name, "")
	t.Cleanup(func() { f.do(t, framework.OpHeal, victim.name, "") })
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.Failover.FenceGraceSeconds = 0 })
	// The lowered grace reaches the member still in contact: its work
	// applies (a fencing rendered as {} once did not, and the member kept
	// the old grace).
	eventually(t, 2*time.Minute, other.name+"'s placement fences with grace 0", func(ctx context.Context) (bool, string, error) {
		sp := &fleetv1.SubsetPlacement{}
		if err := other.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + other.name}, sp); err != nil {
			return false, "", err
		}
		if sp.Spec.Fencing == nil {
			return false, "no spec.fencing", nil
		}
		return sp.Spec.Fencing.GraceSeconds == 0, fmt.Sprintf("spec.fencing.graceSeconds=%d", sp.Spec.Fencing.GraceSeconds), nil
	})

	f.waitRunningIn(t, 5*time.Minute, other.name+" runs "+victim.name+"'s instances", ns, other.name, before[victim.name])
	relocated := time.Since(cut)
	time.Sleep(2 * time.Second) // a sample or two of the relocated state
	samples, dual, _ := s.result()
	t.Logf("fence grace lowered from 60 s to 0 during the cut: relocated %s after the cut; %d samples, %d with a pod name Running in two clusters",
		relocated.Round(time.Second), samples, len(dual))
	for _, v := range dual {
		t.Error(v)
	}
	if relocated < 60*time.Second {
		t.Errorf("relocated %s after the cut: sooner than the 60 s fence grace the member enforces", relocated.Round(time.Second))
	}
}
