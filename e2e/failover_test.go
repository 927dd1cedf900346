//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// waitRunningIn waits up to timeout (what describes it) until every pod of
// pods (names, as runningOrdinals returns them) runs in cluster: the
// relocated instances, under the same names.
func (f *fleet) waitRunningIn(t *testing.T, timeout time.Duration, what, ns, cluster string, pods map[string]types.UID) {
	t.Helper()
	eventually(t, timeout, what, func(ctx context.Context) (bool, string, error) {
		got, err := f.runningOrdinals(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for pod := range pods {
			if _, ok := got[cluster][pod]; !ok {
				return false, fmt.Sprintf("%s not yet Running in %s", pod, cluster), nil
			}
		}
		return true, "", nil
	})
}

// runningOrdinals lists, per member, the pods of FleetSet ns/name that are
// Running, terminating or not (a pod being deleted may still run), by name,
// with their UIDs.
func (f *fleet) runningOrdinals(ctx context.Context, ns, name string) (map[string]map[string]types.UID, error) {
	out := map[string]map[string]types.UID{}
	for _, m := range f.members {
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: name}); err != nil {
			return nil, fmt.Errorf("%s: listing pods: %w", m.name, err)
		}
		out[m.name] = map[string]types.UID{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				out[m.name][p.Name] = p.UID
			}
		}
	}
	return out, nil
}

// sampler samples the Running pods of one FleetSet in every member once a
// second, and records the two invariants fencing keeps: no pod name Running
// in two clusters at once (dual), and, when asked, no pod of the first
// sample stopped or replaced (deleted).
type sampler struct {
	mu      sync.Mutex
	samples int
	dual    []string
	deleted map[string]string
	first   map[string]types.UID // member/pod → UID at the first sample
	stop    func()
	done    chan struct{}
}

// sample starts a sampler of FleetSet ns/name; it stops with the test.
func (f *fleet) sample(t *testing.T, ns, name string) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{deleted: map[string]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			got, err := f.runningOrdinals(ctx, ns, name)
			if err == nil {
				s.record(got)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(s.finish)
	return s
}

func (s *sampler) record(got map[string]map[string]types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Format(time.TimeOnly)
	s.samples++
	seen := map[string]string{}
	var members []string
	for m := range got {
		members = append(members, m)
	}
	sort.Strings(members)
	for _, m := range members {
		for pod := range got[m] {
			if other, ok := seen[pod]; ok {
				s.dual = append(s.dual, fmt.Sprintf("%s: %s Running in %s and %s", now, pod, other, m))
			}
			seen[pod] = m
		}
	}
	if s.first == nil {
		s.first = map[string]types.UID{}
		for m, pods := range got {
			for pod, uid := range pods {
				s.first[m+"/"+pod] = uid
			}
		}
		return
	}
	for key, uid := range s.first {
		m, pod, _ := strings.Cut(key, "/")
		if got[m][pod] != uid {
			if _, ok := s.deleted[key]; !ok {
				s.deleted[key] = now
			}
		}
	}
}

// finish stops sampling (idempotent).
func (s *sampler) finish() {
	s.stop()
	<-s.done
}

// result stops sampling and returns the samples, the dual-running
// violations and the pods of the first sample no longer Running as they
// were.
func (s *sampler) result() (samples int, dual []string, deleted map[string]string) {
	s.finish()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.dual, s.deleted
}

// fenceCase is one cut-off case: the FleetSet's fenceGraceSeconds and
// tolerationSeconds.
type fenceCase struct{ grace, toleration int32 }

// fenceCases reads FLEETSET_E2E_FENCE_CASES ("grace/toleration,...", default
// "30/20"); `make e2e-fencing` runs 0/0,0/20,30/0,30/20,90/0,90/20.
func fenceCases(t *testing.T) []fenceCase {
	spec := framework.EnvString("FLEETSET_E2E_FENCE_CASES", "30/20")
	var out []fenceCase
	for _, c := range strings.Split(spec, ",") {
		g, tol, ok := strings.Cut(strings.TrimSpace(c), "/")
		gi, err1 := strconv.Atoi(g)
		ti, err2 := strconv.Atoi(tol)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("FLEETSET_E2E_FENCE_CASES: %q is not grace/toleration", c)
		}
		out = append(out, fenceCase{int32(gi), int32(ti)})
	}
	return out
}

// TestFencedFailover cuts a member off from the hub by a real network cut
// (the provider's Cut: its OCM agents and its fleetset member component lose
// the hub; its apiserver, scheduler and pods keep running) and checks fenced
// relocation, for each fenceGraceSeconds/tolerationSeconds case with a
// terminationGracePeriodSeconds of 20: the member fences itself (its peer
// still reaches the hub), the other member then runs the lost subset's
// instances under the same names, and — sampling both members every second —
// no pod name is Running in two clusters in any sample. A PVC stays. Healed,
// the member's copy is removed and the subset fails back (Automatic) under
// the same invariant.
func TestFencedFailover(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpCut, f.members[0].name, "")
	for _, c := range fenceCases(t) {
		t.Run(fmt.Sprintf("fenceGrace=%d,toleration=%d", c.grace, c.toleration), func(t *testing.T) {
			fencedFailover(t, f, c)
		})
	}
}

func fencedFailover(t *testing.T, f *fleet, c fenceCase) {
	ns := f.newNamespace(t, "e2e-failover")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To(c.toleration),
		FenceGraceSeconds: c.grace, Failback: fleetv1.FailbackAutomatic}
	fs.Spec.VolumeClaimTemplates = dataClaim("1Gi")
	victim, other := f.members[0], f.members[1]
	subset := fs.Spec.Topology.Subsets[0].Name // the victim's subset
	f.createFleetSet(t, fs)
	zoneBefore := map[string]string{} // pod → zone, the victim's subset
	for _, in := range f.waitReady(t, ns, "db", 4) {
		if in.subset == subset {
			zoneBefore[in.pod] = in.zone
		}
	}
	before, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	// The claim of one of the victim's instances (made from the volume
	// claim template): it must survive fencing and relocation, and be the
	// instance's again after the failback.
	pvc := &corev1.PersistentVolumeClaim{}
	if err := victim.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-db-" + subset + "-0"}, pvc); err != nil {
		t.Fatal(err)
	}

	var copyOf fleetv1.SubsetPlacement
	if err := victim.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db-" + subset}, &copyOf); err != nil {
		t.Fatal(err)
	}
	s := f.sample(t, ns, "db")
	defer func() {
		samples, dual, _ := s.result()
		t.Logf("%d samples, %d with a pod name Running in two clusters", samples, len(dual))
		for _, v := range dual {
			t.Error(v)
		}
	}()

	cut := time.Now()
	f.do(t, framework.OpCut, victim.name, "")
	healed := false
	t.Cleanup(func() {
		if !healed {
			f.do(t, framework.OpHeal, victim.name, "")
		}
	})

	eventually(t, 5*time.Minute, victim.name+" fenced its pods", func(ctx context.Context) (bool, string, error) {
		got, err := f.runningOrdinals(ctx, ns, "db")
		return err == nil && len(got[victim.name]) == 0, fmt.Sprintf("running there: %v", got[victim.name]), err
	})
	fenced := time.Since(cut)
	f.waitRunningIn(t, 5*time.Minute, other.name+" runs "+victim.name+"'s instances under the same names", ns, other.name, before[victim.name])
	relocated := time.Since(cut)
	// Every member names the same zones, so the relocated subset keeps its
	// domains: each instance runs in the zone it ran in at home.
	ins, err := f.instances(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if z, ok := zoneBefore[in.pod]; ok && in.cluster == other.name && in.zone != z {
			t.Errorf("relocated %s runs in %s zone %s, ran in zone %s at home: an ordinal must keep its zone", in.pod, other.name, in.zone, z)
		}
	}
	var ss fleetv1.SubsetStatus
	eventually(t, 30*time.Second, "status.subsets["+subset+"] FailedOver", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		ss = got.Status.Subsets[0]
		return ss.Failover == fleetv1.SubsetFailedOver, fmt.Sprintf("cluster %s epoch %d %q", ss.Cluster, ss.Epoch, ss.Failover), nil
	})
	if ss.Cluster != other.name || ss.Epoch != 1 {
		t.Errorf("status.subsets[%s] = cluster %s epoch %d %q, want %s, 1, FailedOver", subset, ss.Cluster, ss.Epoch, ss.Failover, other.name)
	}
	if err := victim.c.Get(t.Context(), client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("PVC %s of a fenced instance: %v, want kept", pvc.Name, err)
	}

	// Healed: the victim's copy is removed, then the subset fails back
	// (Automatic) with epoch 2.
	back := time.Now()
	f.do(t, framework.OpHeal, victim.name, "")
	healed = true
	eventually(t, 3*time.Minute, victim.name+": its copy of the moved subset removed", func(ctx context.Context) (bool, string, error) {
		// Gone, being deleted, or replaced by the failback's new one.
		var sp fleetv1.SubsetPlacement
		err := victim.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + subset}, &sp)
		return client.IgnoreNotFound(err) == nil && (err != nil || !sp.DeletionTimestamp.IsZero() || sp.UID != copyOf.UID),
			"the fenced SubsetPlacement still there", client.IgnoreNotFound(err)
	})
	removed := time.Since(back)
	eventually(t, 5*time.Minute, "subset "+subset+" home again with epoch 2, instances Running there", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		ss := got.Status.Subsets[0]
		run, err := f.runningOrdinals(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for pod := range before[victim.name] {
			if _, ok := run[victim.name][pod]; !ok {
				return false, fmt.Sprintf("%s not Running in %s; subset at %s epoch %d %q", pod, victim.name, ss.Cluster, ss.Epoch, ss.Failover), nil
			}
		}
		return ss.Cluster == victim.name && ss.Epoch == 2 && ss.Failover == "", fmt.Sprintf("subset at %s epoch %d %q", ss.Cluster, ss.Epoch, ss.Failover), nil
	})
	back2 := &corev1.PersistentVolumeClaim{}
	if err := victim.c.Get(t.Context(), client.ObjectKeyFromObject(pvc), back2); err != nil || back2.UID != pvc.UID || back2.Status.Phase != corev1.ClaimBound {
		t.Errorf("after the failback, claim %s: UID %s %s (%v), want its own %s, Bound", pvc.Name, back2.UID, back2.Status.Phase, err, pvc.UID)
	}
	t.Logf("RESULT fenceGrace=%ds toleration=%ds terminationGrace=20s: fenced %v after the cut, relocated and Running %v after the cut; healed: copy removed after %v, home again after %v",
		c.grace, c.toleration, fenced.Round(time.Second), relocated.Round(time.Second), removed.Round(time.Second), time.Since(back).Round(time.Second))
}

// silenceFor reads a duration from env (default def), for the outages.
func silenceFor(env string, def time.Duration) time.Duration {
	return framework.EnvDuration(env, def)
}

// waitHome waits until the clusters are Available again and no subset of
// FleetSet ns/name is in failover. OCM's own view recovers on its schedule
// (after a hub apiserver restart its registration controller may take a
// minute or two to trust the agents' leases again); a FailingOver phase
// lasts until then.
func (f *fleet) waitHome(t *testing.T, ns, name string, clusters []member) {
	t.Helper()
	for _, m := range clusters {
		eventually(t, 5*time.Minute, "ManagedCluster "+m.name+" Available again", func(ctx context.Context) (bool, string, error) {
			st, err := f.managedClusterAvailable(ctx, m.name)
			return st == "True", "Available=" + st, err
		})
	}
	eventually(t, time.Minute, "no subset in failover", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		for _, ss := range got.Status.Subsets {
			if ss.Failover != "" {
				return false, fmt.Sprintf("subset %s %q", ss.Name, ss.Failover), nil
			}
		}
		return true, "", nil
	})
}

// checkNothingMoved fails the test when a subset of FleetSet ns/name moved
// or left epoch 0.
func (f *fleet) checkNothingMoved(t *testing.T, ns, name string) {
	t.Helper()
	got, err := f.getFleetSet(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for i, ss := range got.Status.Subsets {
		spec := got.Spec.Topology.Subsets[i]
		if ss.Cluster != spec.Cluster || ss.Epoch != 0 || ss.Failover != "" {
			t.Errorf("subset %s: at %s epoch %d %q, want at home %s, epoch 0", ss.Name, ss.Cluster, ss.Epoch, ss.Failover, spec.Cluster)
		}
	}
}

// hubSilence runs stop for d while sampling a Relocate FleetSet (toleration
// 0, fenceGrace 0, terminationGrace 20), then start, then watches for a full
// fence deadline more: no pod deleted on any member, nothing relocated.
func hubSilence(t *testing.T, what string, d time.Duration, stop, start func()) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-silence")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)}
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	s := f.sample(t, ns, "db")
	started := time.Now()
	stop()
	t.Logf("%s for %v", what, d)
	time.Sleep(d)
	start()
	// The longest a relocation could wait after the hub is back: its first
	// observation + heartbeat timeout + confirmation + fence grace +
	// termination grace + margin.
	hb := framework.EnvDuration("FLEETSET_E2E_HEARTBEAT_TIMEOUT", 15*time.Second)
	deadline := hb + fleetv1.FenceConfirmation(hb) + 20*time.Second + fleetv1.RelocationMarginSeconds*time.Second
	time.Sleep(deadline + 10*time.Second)
	f.waitHome(t, ns, "db", f.members)
	samples, dual, deleted := s.result()
	t.Logf("%d samples over %v: %d pods stopped or replaced, %d with a pod Running in two clusters", samples, time.Since(started).Round(time.Second), len(deleted), len(dual))
	for pod, at := range deleted {
		t.Errorf("%s: pod %s no longer Running as before", at, pod)
	}
	for _, v := range dual {
		t.Error(v)
	}
	f.checkNothingMoved(t, ns, "db")
}

// TestHubSilenceFencesNothing stops fleetset-hub (FLEETSET_E2E_HUB_SILENCE,
// default 45 s, three heartbeat timeouts; `make e2e-fencing` 10 min): the
// members keep reaching the hub's apiserver, so no pod is deleted, and the
// restarted hub relocates nothing.
func TestHubSilenceFencesNothing(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpStop, "hub", "fleetset-hub")
	f.skipUnless(t, framework.OpRestart, "hub", "fleetset-hub")
	hubSilence(t, "fleetset-hub stopped", silenceFor("FLEETSET_E2E_HUB_SILENCE", 45*time.Second),
		func() { f.do(t, framework.OpStop, "hub", "fleetset-hub") },
		func() { f.do(t, framework.OpRestart, "hub", "fleetset-hub") })
}

// TestMajorityLostRelocatesNothing cuts two of a FleetSet's three clusters
// off the hub at once: the hub relocates nothing, past every fence deadline,
// and says why (Degraded RelocationHeld); healed, the FleetSet is whole
// again at home with epoch 0. Needs a third member
// (FLEETSET_E2E_SPARE_MEMBERS; `make e2e` starts north).
func TestMajorityLostRelocatesNothing(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpCut, f.members[0].name, "")
	if len(f.spare) == 0 {
		t.Skip("FLEETSET_E2E_SPARE_MEMBERS is not set: the majority rule needs a third member")
	}
	third := f.spare[0]
	ns := f.newNamespace(t, "e2e-majority")
	fs := f.newFleetSet(ns, "db", 6)
	third0 := fleetv1.Subset{Name: third.name, Cluster: third.name}
	for _, z := range f.zones {
		third0.Domains = append(third0.Domains, fleetv1.DomainShare{Name: z})
	}
	fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, third0)
	for i := range fs.Spec.Topology.Subsets {
		fs.Spec.Topology.Subsets[i].Replicas = nil // an even split: 2 each
	}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)}
	f.createFleetSet(t, fs)
	ready := func(what string) {
		t.Helper()
		eventually(t, 5*time.Minute, what, func(ctx context.Context) (bool, string, error) {
			got, err := f.getFleetSet(ctx, ns, "db")
			if err != nil {
				return false, "", err
			}
			return got.Status.ReadyReplicas == 6 && got.Status.ObservedGeneration == got.Generation,
				fmt.Sprintf("%d ready", got.Status.ReadyReplicas), nil
		})
	}
	ready("6 instances ready in three clusters")
	lost := []string{f.members[0].name, third.name}
	cut := time.Now()
	for _, c := range lost {
		f.do(t, framework.OpCut, c, "")
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			for _, c := range lost {
				f.do(t, framework.OpHeal, c, "")
			}
		}
	}
	t.Cleanup(heal)
	eventually(t, 3*time.Minute, "Degraded RelocationHeld", func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		return c != nil && c.Reason == fleetv1.ReasonRelocationHeld, why, err
	})
	held := time.Since(cut)
	// Past every fence deadline: timeout 15 s + 5 s + grace 0 + termination 0 + margin 10 s.
	time.Sleep(time.Until(cut.Add(60 * time.Second)))
	got, err := f.getFleetSet(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	c := condition(got, fleetv1.ConditionDegraded)
	t.Logf("held %v after the cut: %s", held.Round(time.Second), c.Message)
	for i, ss := range got.Status.Subsets {
		if home := got.Spec.Topology.Subsets[i].Cluster; ss.Cluster != home || ss.Epoch != 0 {
			t.Errorf("subset %s moved to %s epoch %d while two of three clusters were lost", ss.Name, ss.Cluster, ss.Epoch)
		}
	}
	if c == nil || c.Reason != fleetv1.ReasonRelocationHeld {
		t.Errorf("Degraded = %+v, want RelocationHeld", c)
	}
	heal()
	ready("6 instances ready again")
	f.waitHome(t, ns, "db", append([]member{third}, f.members...))
	f.checkNothingMoved(t, ns, "db")
}

// TestStuckObjectHoldsBackOnlyItsFleetSet deletes a FleetSet whose
// SubsetPlacement in a member carries a finalizer nobody removes, so its
// ManifestWork stays stuck in deletion there: another failover-protected
// FleetSet in the same member keeps every pod, for longer than a whole fence
// deadline, and nothing of it moves.
func TestStuckObjectHoldsBackOnlyItsFleetSet(t *testing.T) {
	f := theFleet
	const finalizer = "e2e.fleetset.io/stuck"
	victim := f.members[0]
	ns := f.newNamespace(t, "e2e-stuck")
	for _, name := range []string{"stuck", "other"} {
		fs := f.newFleetSet(ns, name, 4)
		fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)}
		f.createFleetSet(t, fs)
	}
	f.waitReady(t, ns, "stuck", 4)
	f.waitReady(t, ns, "other", 4)
	sub := f.defaultSubsets()[0].Name
	key := client.ObjectKey{Namespace: ns, Name: "stuck-" + sub}
	// The finalizer is a cluster administrator's (system:masters): the
	// member admission policy refuses any other user's change to a
	// delivered SubsetPlacement, and kubeadm's admin (kind's kubeconfig)
	// is not in system:masters since Kubernetes 1.29.
	admin := f.asMasters(t, victim.name)
	patch := func(fin string) error {
		sp := &fleetv1.SubsetPlacement{}
		sp.Namespace, sp.Name = key.Namespace, key.Name
		return admin.Patch(context.Background(), sp, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":`+fin+`}}`)))
	}
	if err := patch(`["` + finalizer + `"]`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = patch("null") })
	s := f.sample(t, ns, "other")
	fs := &fleetv1.FleetSet{}
	fs.Namespace, fs.Name = ns, "stuck"
	if err := f.hub.Delete(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, victim.name+": stuck's SubsetPlacement being deleted, held by its finalizer", func(ctx context.Context) (bool, string, error) {
		sp := &fleetv1.SubsetPlacement{}
		if err := victim.c.Get(ctx, key, sp); err != nil {
			return false, "", err
		}
		return !sp.DeletionTimestamp.IsZero(), "not being deleted yet", nil
	})
	// Longer than a fence deadline: timeout 15 s + 5 s + 0 + termination 0 + margin 10 s.
	time.Sleep(60 * time.Second)
	samples, dual, deleted := s.result()
	t.Logf("%d samples of other while stuck's object was stuck: %d pods stopped or replaced", samples, len(deleted))
	for pod, at := range deleted {
		t.Errorf("%s: pod %s of the other FleetSet no longer Running as before", at, pod)
	}
	for _, v := range dual {
		t.Error(v)
	}
	f.checkNothingMoved(t, ns, "other")
}
