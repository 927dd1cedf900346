//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/member/fence"
)

// Adversarial tests of fencing (issue 48): each tries an attack on the
// single copy of an identity as the least-privileged actor who could, on
// the local fleet, and asserts it is refused or harmless.

// setFenceGrace sets FleetSet ns/db's fenceGraceSeconds through c.
func setFenceGrace(t *testing.T, c client.Client, ns string, grace int32) {
	t.Helper()
	for {
		fs := &fleetv1.FleetSet{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db"}, fs); err != nil {
			t.Fatal(err)
		}
		fs.Spec.Failover.FenceGraceSeconds = grace
		err := c.Update(t.Context(), fs)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "the object has been modified") {
			t.Fatalf("tenant setting fenceGraceSeconds %d: %v", grace, err)
		}
	}
}

// TestAdversaryFenceGraceLoweredInWindow: a tenant with rights on the hub
// only raises fenceGraceSeconds (0 → 25 s) and, once the member's work agent
// applied it but before a heartbeat reported it (the member component is
// paused for those seconds, its heartbeat silent), the member is cut off and
// the tenant lowers the grace to 0. The member enforces the 25 s it
// applied; the hub must wait for the grace it delivered (work annotation
// fleetset.io/delivered-fence-seconds), not the spec or the member's last
// report. Sampling both members every second, no pod name is Running in two
// clusters; before the fix the hub relocated about 15 s before the member's
// pods stopped.
func TestAdversaryFenceGraceLoweredInWindow(t *testing.T) {
	f := theFleet
	victim, other := f.members[0], f.members[1]
	f.skipUnless(t, framework.OpCut, victim.name, "")
	f.skipUnless(t, framework.OpPause, victim.name, "fleetset-scheduler")
	ns := f.newNamespace(t, "e2e-adv-window")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0), Failback: fleetv1.FailbackManual}
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	tenant, _ := f.hubTenant(t, ns)
	before, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}

	// The window: the member applies the raised grace; no heartbeat
	// reports it before the cut.
	f.do(t, framework.OpPause, victim.name, "fleetset-scheduler")
	paused := true
	resume := func() {
		if paused {
			paused = false
			f.do(t, framework.OpResume, victim.name, "fleetset-scheduler")
		}
	}
	t.Cleanup(resume)
	setFenceGrace(t, tenant, ns, 25)
	eventually(t, 10*time.Second, victim.name+"'s placement applied with fence grace 25 while its heartbeat is silent", func(ctx context.Context) (bool, string, error) {
		sp := &fleetv1.SubsetPlacement{}
		if err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + victim.name}, sp); err != nil {
			return false, "", err
		}
		return sp.Spec.Fencing != nil && sp.Spec.Fencing.GraceSeconds == 25, fmt.Sprintf("spec.fencing %+v", sp.Spec.Fencing), nil
	})
	s := f.sample(t, ns, "db")
	cut := time.Now()
	f.do(t, framework.OpCut, victim.name, "")
	t.Cleanup(func() { f.do(t, framework.OpHeal, victim.name, "") })
	resume()
	setFenceGrace(t, tenant, ns, 0)

	f.waitRunningIn(t, 4*time.Minute, other.name+" runs "+victim.name+"'s instances", ns, other.name, before[victim.name])
	relocated := time.Since(cut)
	time.Sleep(2 * time.Second)
	samples, dual, _ := s.result()
	t.Logf("grace raised to 25 s inside the heartbeat window, lowered to 0 during the cut: relocated %s after the cut; %d samples, %d with a pod name Running in two clusters",
		relocated.Round(time.Second), samples, len(dual))
	for _, v := range dual {
		t.Error(v)
	}
}

// workEpoch rewrites, in ManifestWork w, the fencing epoch of
// SubsetPlacement name to epoch.
func workEpoch(t *testing.T, w *workv1.ManifestWork, name string, epoch int64) {
	t.Helper()
	for i, m := range w.Spec.Workload.Manifests {
		var obj map[string]any
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] != "SubsetPlacement" || md["name"] != name {
			continue
		}
		spec, _ := obj["spec"].(map[string]any)
		fencing, _ := spec["fencing"].(map[string]any)
		if fencing == nil {
			t.Fatalf("SubsetPlacement %s in work %s/%s has no spec.fencing", name, w.Namespace, w.Name)
		}
		fencing["epoch"] = epoch
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests[i].Raw, w.Spec.Workload.Manifests[i].Object = raw, nil
		return
	}
	t.Fatalf("no SubsetPlacement %s in work %s/%s", name, w.Namespace, w.Name)
}

// TestAdversaryLowerEpochHeld: a second hub (or one restored from a backup
// older than what ran) delivers a placement at a lower fencing epoch than
// the member ran it at. With fleetset-hub stopped, the hub admin's client
// writes the victim's ManifestWork: the placement at epoch 3 (a newer
// hub's grant), then at epoch 1. The member records 3 (ConfigMap
// fleetset-system/fleetset-epochs) and holds the placement at 1: a pod
// deleted then is never scheduled (its PodScheduled condition names the
// recorded epoch) and the member records a Warning EpochBelowRecord event.
// fleetset-hub started again learns epoch 3 from the member's heartbeat and
// delivers the placement at 3: the instance runs again, never below.
func TestAdversaryLowerEpochHeld(t *testing.T) {
	f := theFleet
	victim := f.members[0]
	f.skipUnless(t, framework.OpStop, "hub", "fleetset-hub")
	ns := f.newNamespace(t, "e2e-adv-epoch")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, Failback: fleetv1.FailbackManual}
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	placement := "db-" + victim.name

	f.do(t, framework.OpStop, "hub", "fleetset-hub")
	started := false
	t.Cleanup(func() {
		if !started {
			f.do(t, framework.OpStart, "hub", "fleetset-hub")
		}
	})
	key := client.ObjectKey{Namespace: victim.name, Name: manifestwork.WorkName(ns, "db")}
	deliver := func(epoch int64) {
		t.Helper()
		w := &workv1.ManifestWork{}
		if err := f.hub.Get(t.Context(), key, w); err != nil {
			t.Fatal(err)
		}
		workEpoch(t, w, placement, epoch)
		if err := f.hub.Update(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, fmt.Sprintf("%s delivered at epoch %d", placement, epoch), func(ctx context.Context) (bool, string, error) {
			sp := &fleetv1.SubsetPlacement{}
			if err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: placement}, sp); err != nil {
				return false, "", err
			}
			return sp.Spec.Fencing != nil && sp.Spec.Fencing.Epoch == epoch, fmt.Sprintf("spec.fencing %+v", sp.Spec.Fencing), nil
		})
	}
	deliver(3)
	eventually(t, 30*time.Second, victim.name+" records epoch 3", func(ctx context.Context) (bool, string, error) {
		cm := &corev1.ConfigMap{}
		if err := victim.c.Get(ctx, client.ObjectKey{Namespace: fleetv1.ResyncLeaseNamespace, Name: fence.EpochsConfigMapName}, cm); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		for k, v := range cm.Data {
			if strings.HasPrefix(k, ns+"."+placement+".") {
				return v == "3", k + "=" + v, nil
			}
		}
		return false, fmt.Sprintf("%v", cm.Data), nil
	})
	deliver(1)

	// An instance of the held placement is deleted: its replacement is
	// never scheduled at the lower epoch.
	var pods corev1.PodList
	if err := victim.c.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "db"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of db in %s: %d, %v", victim.name, len(pods.Items), err)
	}
	victimPod := pods.Items[0].Name
	if err := victim.c.Delete(t.Context(), &pods.Items[0], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, victimPod+" held unscheduled, naming the recorded epoch", func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victimPod}, p); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		if p.Spec.NodeName != "" {
			return false, "", fmt.Errorf("%s scheduled to %s at epoch 1, below the recorded 3", victimPod, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "below epoch 3") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("conditions %+v", p.Status.Conditions), nil
	})
	time.Sleep(5 * time.Second)
	p := &corev1.Pod{}
	if err := victim.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: victimPod}, p); err == nil && p.Spec.NodeName != "" {
		t.Fatalf("%s scheduled at epoch 1, below the recorded 3", victimPod)
	}
	var events corev1.EventList
	if err := victim.c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	warned := false
	for _, e := range events.Items {
		warned = warned || (e.Reason == fence.ReasonEpochBelowRecord && e.InvolvedObject.Name == placement)
	}
	if !warned {
		t.Errorf("no %s event on %s/%s", fence.ReasonEpochBelowRecord, ns, placement)
	}

	// The hub, started again, learns epoch 3 from the member.
	started = true
	f.do(t, framework.OpStart, "hub", "fleetset-hub")
	eventually(t, 2*time.Minute, victimPod+" Running again at epoch 3", func(ctx context.Context) (bool, string, error) {
		sp := &fleetv1.SubsetPlacement{}
		if err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: placement}, sp); err != nil {
			return false, "", err
		}
		if sp.Spec.Fencing == nil || sp.Spec.Fencing.Epoch < 3 {
			return false, "epoch " + strconv.FormatInt(ptr.Deref(sp.Spec.Fencing, fleetv1.PlacementFencing{}).Epoch, 10), nil
		}
		p := &corev1.Pod{}
		if err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victimPod}, p); err != nil {
			return false, "", client.IgnoreNotFound(err)
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
	})
	if !f.hubEvent(t, ns, "db", "EpochLearned", "epoch 3") {
		t.Errorf("no EpochLearned event on the FleetSet")
	}
}
