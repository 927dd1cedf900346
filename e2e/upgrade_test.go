//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
	"github.com/fleetset/fleetset/federation/controller"
)

// TestRestartsTouchNoWorkloadPod is the upgrade guarantee: restarting the
// control plane — fleetset-hub as a newer build with changed flags
// (--lease-duration, --max-concurrent-reconciles), and fleetset-scheduler in
// one member — restarts no workload pod. Two FleetSets run over both
// members (a plain one of 6 and one of 4 with failover Relocate, whose
// placements are fenced on the resync lease the changed --lease-duration
// re-acquires). Once they are Ready and settled it records every pod's UID,
// controller-revision-hash and readiness, every member StatefulSet's
// generation and current/update revisions, every SubsetPlacement's
// generation and every ManifestWork's generation and spec hash. After the
// restarts it waits until the new hub has taken over (the members' resync
// Leases carry the new duration, the FleetSets are Ready at their
// generation, their ManifestWorks have settled) and a further 15 s, sampling
// the members every second throughout, and then requires all of it
// unchanged, no sample with a pod missing, replaced or not Ready, and no
// ManifestWork written by the hub after its restart.
func TestRestartsTouchNoWorkloadPod(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpRestart, "hub", "fleetset-hub")
	f.skipUnless(t, framework.OpRestart, f.members[0].name, "fleetset-scheduler")
	start, last := time.Now(), time.Now()
	lap := func(what string) {
		t.Helper()
		t.Logf("%-70s +%-5v (at %v)", what, time.Since(last).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
		last = time.Now()
	}

	ns := f.newNamespace(t, "e2e-upgrade")
	sets := map[string]int{"db": 6, "fenced": 4}
	plain := f.newFleetSet(ns, "db", int32(sets["db"]))
	fenced := f.newFleetSet(ns, "fenced", int32(sets["fenced"]))
	fenced.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate}
	f.createFleetSet(t, plain)
	f.createFleetSet(t, fenced)
	for name, n := range sets {
		f.waitReady(t, ns, name, n)
	}
	lap("FleetSets db (6) and fenced (4) Ready")
	for name := range sets {
		f.waitFleetSetSettled(t, ns, name, sets[name])
	}
	lap("StatefulSets at their generation, currentRevision == updateRevision")

	// The baseline: the fleet unchanged for 10 s.
	before := f.settledSnapshot(t, ns, sets, 10*time.Second, "the FleetSets' pods, StatefulSets and ManifestWorks")
	lap(fmt.Sprintf("baseline: %d pods, %d StatefulSets, %d SubsetPlacements, %d ManifestWorks unchanged for 10s",
		len(before.pods), len(before.sts), len(before.placements), len(before.works)))
	t.Logf("baseline:\n%s", before)
	oldLease := f.leaseDurations(t)
	lap(fmt.Sprintf("resync lease durations before: %v", oldLease))

	// Sample the members every second from now until the final check.
	var mu sync.Mutex
	var samples int
	violations := map[string]time.Time{} // first seen
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			snap, err := f.snapshot(ctx, ns, sets)
			if err == nil {
				mu.Lock()
				samples++
				for _, d := range before.diff(snap, false) {
					if _, ok := violations[d]; !ok {
						violations[d] = time.Now()
					}
				}
				for k, p := range snap.pods {
					if !p.ready {
						d := k + " not Ready"
						if _, ok := violations[d]; !ok {
							violations[d] = time.Now()
						}
					}
				}
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	})
	stopSampling := func() {
		stop()
		wg.Wait()
	}
	defer stopSampling()

	// The cleanups restore the fleet's own command lines (without
	// rebuilding), the hub's before the namespace cleanup needs it.
	victim := f.members[0]
	t.Cleanup(func() { f.do(t, framework.OpRestart, "hub", "fleetset-hub") })
	t.Cleanup(func() { f.do(t, framework.OpRestart, victim.name, "fleetset-scheduler") })
	version := "e2e-upgrade-" + randSuffix()

	// (1) fleetset-hub: a newer build with changed flags.
	var newLease time.Duration
	for _, d := range oldLease {
		newLease = max(newLease, d)
	}
	newLease += 5 * time.Second
	hubRestart := time.Now()
	f.doRebuilt(t, framework.OpRestart, "hub", "fleetset-hub", version, "--lease-duration="+newLease.String(), "--max-concurrent-reconciles=2")
	lap(fmt.Sprintf("fleetset-hub rebuilt (version %s) and restarted with --lease-duration=%v --max-concurrent-reconciles=2, ready", version, newLease))

	// (2) fleetset-scheduler in one member, also rebuilt, with -v 2.
	f.doRebuilt(t, framework.OpRestart, victim.name, "fleetset-scheduler", version, "--v=2")
	lap(fmt.Sprintf("fleetset-scheduler in %s rebuilt and restarted with --v=2, ready", victim.name))

	// The new hub has taken over: its lease duration reached every member.
	eventually(t, waitTimeout, fmt.Sprintf("every member's resync Lease at the new duration %v", newLease), func(ctx context.Context) (bool, string, error) {
		var wrong []string
		for _, m := range f.members {
			l, err := m.resyncLease(ctx)
			if err != nil {
				return false, "", err
			}
			if d := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second; d != newLease {
				wrong = append(wrong, fmt.Sprintf("%s: %v", m.name, d))
			}
		}
		return len(wrong) == 0, strings.Join(wrong, ", "), nil
	})
	lap("the members' resync Leases carry the new hub's --lease-duration")
	for name, n := range sets {
		eventually(t, waitTimeout, "FleetSet "+name+" Ready at its generation", func(ctx context.Context) (bool, string, error) {
			fs, err := f.getFleetSet(ctx, ns, name)
			if err != nil {
				return false, "", err
			}
			ready := apimeta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1.ConditionReady)
			return ready && fs.Status.ObservedGeneration == fs.Generation && fs.Status.ReadyReplicas == int32(n),
				fmt.Sprintf("Ready %v observedGeneration %d/%d readyReplicas %d", ready, fs.Status.ObservedGeneration, fs.Generation, fs.Status.ReadyReplicas), nil
		})
	}
	lap("FleetSets Ready at their generation")
	f.settledSnapshot(t, ns, sets, 10*time.Second, "the ManifestWorks' resourceVersions after the restarts")
	lap("ManifestWorks settled (no resourceVersion change for 10s)")
	time.Sleep(15 * time.Second)
	lap("waited a further 15s")

	after, err := f.snapshot(t.Context(), ns, sets)
	if err != nil {
		t.Fatal(err)
	}
	stopSampling()
	t.Logf("after:\n%s", after)
	for _, d := range before.diff(after, false) {
		t.Errorf("changed by the restarts: %s", d)
	}
	for k, p := range after.pods {
		if !p.ready {
			t.Errorf("%s is not Ready after the restarts", k)
		}
	}
	mu.Lock()
	t.Logf("%d samples of the members since the hub restart, %d distinct violations", samples, len(violations))
	for _, d := range slices.Sorted(maps.Keys(violations)) {
		t.Errorf("sampled at %s: %s", violations[d].Format("15:04:05"), d)
	}
	mu.Unlock()
	for _, e := range f.workWriteEvents(t, ns, hubRestart) {
		t.Errorf("the restarted hub wrote a ManifestWork: %s", e)
	}
	if t.Failed() {
		lap("checked: the restarts changed the fleet (errors above)")
	} else {
		lap("checked: no pod, StatefulSet, SubsetPlacement or ManifestWork changed")
	}
}

// waitFleetSetSettled waits until the member StatefulSets of FleetSet name
// have observed their generation, hold want ready replicas in all and
// currentRevision == updateRevision.
func (f *fleet) waitFleetSetSettled(t *testing.T, ns, name string, want int) {
	t.Helper()
	eventually(t, waitTimeout, "StatefulSets of "+name+" settled", func(ctx context.Context) (bool, string, error) {
		ready := 0
		for _, m := range f.members {
			var l appsv1.StatefulSetList
			if err := m.c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: name}); err != nil {
				return false, "", err
			}
			for _, s := range l.Items {
				if s.Status.ObservedGeneration != s.Generation || s.Status.CurrentRevision != s.Status.UpdateRevision {
					return false, fmt.Sprintf("%s/%s: observedGeneration %d/%d revisions %s/%s", m.name, s.Name,
						s.Status.ObservedGeneration, s.Generation, s.Status.CurrentRevision, s.Status.UpdateRevision), nil
				}
				ready += int(s.Status.ReadyReplicas)
			}
		}
		return ready == want, fmt.Sprintf("%d ready replicas", ready), nil
	})
}

// ---------------------------------------------------------------- snapshots

type podSnap struct {
	uid, revision, node string
	ready               bool
}

type stsSnap struct {
	generation, observed            int64
	currentRevision, updateRevision string
	replicas                        int32
}

type workSnap struct {
	generation                int64
	specHash, resourceVersion string
}

// fleetSnapshot is what the members and the hub hold of the test's
// FleetSets, keyed by cluster/name (works: namespace/name).
type fleetSnapshot struct {
	pods       map[string]podSnap
	sts        map[string]stsSnap
	placements map[string]int64 // generation
	works      map[string]workSnap
}

func (f *fleet) snapshot(ctx context.Context, ns string, sets map[string]int) (*fleetSnapshot, error) {
	s := &fleetSnapshot{pods: map[string]podSnap{}, sts: map[string]stsSnap{}, placements: map[string]int64{}, works: map[string]workSnap{}}
	for name := range sets {
		ins, err := f.instances(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		for _, in := range ins {
			s.pods[in.cluster+"/"+in.pod] = podSnap{uid: in.uid, revision: in.revision, node: in.node, ready: in.ready}
		}
	}
	for _, m := range f.members {
		var stss appsv1.StatefulSetList
		if err := m.c.List(ctx, &stss, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("%s: listing StatefulSets: %w", m.name, err)
		}
		for _, x := range stss.Items {
			s.sts[m.name+"/"+x.Name] = stsSnap{generation: x.Generation, observed: x.Status.ObservedGeneration,
				currentRevision: x.Status.CurrentRevision, updateRevision: x.Status.UpdateRevision, replicas: ptr.Deref(x.Spec.Replicas, -1)}
		}
		var sps fleetv1.SubsetPlacementList
		if err := m.c.List(ctx, &sps, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("%s: listing SubsetPlacements: %w", m.name, err)
		}
		for _, p := range sps.Items {
			s.placements[m.name+"/"+p.Name] = p.Generation
		}
	}
	works := &unstructured.UnstructuredList{}
	works.SetGroupVersionKind(manifestWorkGVK)
	if err := f.hub.List(ctx, works, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
		return nil, fmt.Errorf("hub: listing ManifestWorks: %w", err)
	}
	for _, w := range works.Items {
		s.works[w.GetNamespace()+"/"+w.GetName()] = workSnap{generation: w.GetGeneration(),
			specHash: w.GetAnnotations()[fleetv1.AnnotationSpecHash], resourceVersion: w.GetResourceVersion()}
	}
	return s, nil
}

// diff lists what differs from s in o; resourceVersions of ManifestWorks
// (their status moves) only with withRV.
func (s *fleetSnapshot) diff(o *fleetSnapshot, withRV bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.pods)) {
		a, b := s.pods[k], o.pods[k]
		switch _, ok := o.pods[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s (uid %s) gone", k, a.uid))
		case a.uid != b.uid:
			out = append(out, fmt.Sprintf("pod %s replaced: uid %s -> %s", k, a.uid, b.uid))
		case a.revision != b.revision:
			out = append(out, fmt.Sprintf("pod %s controller-revision-hash %s -> %s", k, a.revision, b.revision))
		case a.node != b.node:
			out = append(out, fmt.Sprintf("pod %s node %s -> %s", k, a.node, b.node))
		}
	}
	for k, b := range o.pods {
		if _, ok := s.pods[k]; !ok {
			out = append(out, fmt.Sprintf("pod %s (uid %s) new", k, b.uid))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.sts)) {
		a, b := s.sts[k], o.sts[k]
		if _, ok := o.sts[k]; !ok {
			out = append(out, fmt.Sprintf("StatefulSet %s gone", k))
		} else if a != b {
			out = append(out, fmt.Sprintf("StatefulSet %s: %+v -> %+v", k, a, b))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.placements)) {
		if g, ok := o.placements[k]; !ok || g != s.placements[k] {
			out = append(out, fmt.Sprintf("SubsetPlacement %s: generation %d -> %d (present %v)", k, s.placements[k], g, ok))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.works)) {
		a, b := s.works[k], o.works[k]
		_, ok := o.works[k]
		if !withRV {
			a.resourceVersion, b.resourceVersion = "", ""
		}
		if !ok || a != b {
			out = append(out, fmt.Sprintf("ManifestWork %s: %+v -> %+v (present %v)", k, a, b, ok))
		}
	}
	for k := range o.sts {
		if _, ok := s.sts[k]; !ok {
			out = append(out, fmt.Sprintf("StatefulSet %s new", k))
		}
	}
	for k := range o.works {
		if _, ok := s.works[k]; !ok {
			out = append(out, fmt.Sprintf("ManifestWork %s new", k))
		}
	}
	return out
}

func (s *fleetSnapshot) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.pods)) {
		p := s.pods[k]
		fmt.Fprintf(&b, "  pod %-28s uid %s rev %s node %s ready %v\n", k, p.uid, p.revision, p.node, p.ready)
	}
	for _, k := range slices.Sorted(maps.Keys(s.sts)) {
		x := s.sts[k]
		fmt.Fprintf(&b, "  sts %-28s gen %d/%d replicas %d current %s update %s\n", k, x.observed, x.generation, x.replicas, x.currentRevision, x.updateRevision)
	}
	for _, k := range slices.Sorted(maps.Keys(s.placements)) {
		fmt.Fprintf(&b, "  placement %-22s gen %d\n", k, s.placements[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.works)) {
		w := s.works[k]
		fmt.Fprintf(&b, "  work %-27s gen %d spec-hash %s rv %s\n", k, w.generation, w.specHash, w.resourceVersion)
	}
	return b.String()
}

// settledSnapshot waits until the snapshot, ManifestWork resourceVersions
// included, has not changed for quiet, and returns it.
func (f *fleet) settledSnapshot(t *testing.T, ns string, sets map[string]int, quiet time.Duration, what string) *fleetSnapshot {
	t.Helper()
	var cur *fleetSnapshot
	var since time.Time
	eventually(t, waitTimeout, what+" unchanged for "+quiet.String(), func(ctx context.Context) (bool, string, error) {
		s, err := f.snapshot(ctx, ns, sets)
		if err != nil {
			return false, "", err
		}
		if d := cur.diffOrNil(s); cur == nil || len(d) > 0 {
			cur, since = s, time.Now()
			return false, strings.Join(d, "; "), nil
		}
		return time.Since(since) >= quiet, fmt.Sprintf("unchanged for %v", time.Since(since).Round(time.Second)), nil
	})
	return cur
}

func (s *fleetSnapshot) diffOrNil(o *fleetSnapshot) []string {
	if s == nil {
		return nil
	}
	d := s.diff(o, true)
	for k, p := range o.pods {
		if q := s.pods[k]; q.ready != p.ready {
			d = append(d, fmt.Sprintf("pod %s ready %v -> %v", k, q.ready, p.ready))
		}
	}
	return d
}

// leaseDurations returns every member's resync Lease duration.
func (f *fleet) leaseDurations(t *testing.T) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	eventually(t, waitTimeout, "every member's resync Lease", func(ctx context.Context) (bool, string, error) {
		for _, m := range f.members {
			l, err := m.resyncLease(ctx)
			if err != nil {
				return false, "", fmt.Errorf("%s: %w", m.name, err)
			}
			out[m.name] = time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
		}
		return true, "", nil
	})
	return out
}

// workWriteEvents returns the hub's ManifestWork write events about the
// FleetSets of ns since since.
func (f *fleet) workWriteEvents(t *testing.T, ns string, since time.Time) []string {
	t.Helper()
	var events corev1.EventList
	if err := f.hub.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing the hub's events in %s: %v", ns, err)
	}
	var out []string
	cut := metav1.NewTime(since.Truncate(time.Second))
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "FleetSet" || (e.Reason != controller.EventWorksApplied && e.Reason != controller.EventWorksDeleted) {
			continue
		}
		at := e.LastTimestamp
		if at.IsZero() {
			at = metav1.NewTime(e.EventTime.Time)
		}
		if !at.Before(&cut) {
			out = append(out, fmt.Sprintf("%s %s/%s %s: %s (x%d)", at.Format("15:04:05"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count))
		}
	}
	return out
}
