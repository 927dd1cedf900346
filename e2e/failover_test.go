//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// runningOrdinals lists, per member, the ordinals of FleetSet ns/name whose
// pods are Running, terminating or not: a pod being deleted may still run.
func (f *fleet) runningOrdinals(ctx context.Context, ns, name string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	for _, m := range f.members {
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: name}); err != nil {
			return nil, fmt.Errorf("%s: listing pods: %w", m.name, err)
		}
		out[m.name] = map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				out[m.name][p.Name] = true
			}
		}
	}
	return out, nil
}

// TestFencedFailover cuts a member off from the hub as a network partition
// would (its OCM registration and work agents stop; its apiserver,
// fleetset-scheduler and pods keep running) and checks fenced relocation:
// the member fences its pods once its resync lease expires, the other member
// then runs the lost subset's instances under the same names, and — sampling
// both members every second — no instance is Running in two clusters in any
// sample. PVCs of fenced pods stay. When the member returns, its copies are
// removed before its lease is renewed, and with failback Automatic the
// subset returns home under the same invariant.
func TestFencedFailover(t *testing.T) {
	f := theFleet
	if _, err := runHookCheck("FLEETSET_E2E_STOP_AGENT"); err != nil {
		t.Skip(err)
	}
	ns := f.newNamespace(t, "e2e-failover")
	fs := f.newFleetSet(ns, "db", 5)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](20), Failback: fleetv1.FailbackAutomatic}
	victim, other := f.members[0], f.members[1]
	subset := fs.Spec.Topology.Subsets[0].Name // the victim's subset
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 5)
	eventually(t, waitTimeout, victim.name+": resync lease fresh", func(ctx context.Context) (bool, string, error) {
		expired, why, err := leaseExpired(ctx, victim)
		return err == nil && !expired, why, err
	})
	before, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	// A PVC of one of the victim's instances, as a volume claim template
	// would make; it must survive fencing and relocation.
	pvc := &corev1.PersistentVolumeClaim{}
	pvc.Namespace, pvc.Name = ns, "data-db-"+subset+"-0"
	pvc.Labels = map[string]string{fleetv1.LabelSet: "db"}
	pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if err := victim.c.Create(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}

	// Sample both members every second until the test ends.
	var mu sync.Mutex
	var violations []string
	samples := 0
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			got, err := f.runningOrdinals(ctx, ns, "db")
			if err == nil {
				mu.Lock()
				samples++
				for pod := range got[victim.name] {
					if got[other.name][pod] {
						violations = append(violations, fmt.Sprintf("%s: %s Running in %s and %s", time.Now().Format(time.TimeOnly), pod, victim.name, other.name))
					}
				}
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	})
	defer func() {
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d samples, %d instances Running in two clusters", samples, len(violations))
		for _, v := range violations {
			t.Error(v)
		}
	}()

	start := time.Now()
	t.Logf("cutting %s off: stopping its OCM registration and work agents", victim.name)
	runHook(t, "FLEETSET_E2E_STOP_AGENT", victim.name)
	runHook(t, "FLEETSET_E2E_STOP_AGENT", victim.name, "work-agent")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			runHook(t, "FLEETSET_E2E_START_AGENT", victim.name)
			runHook(t, "FLEETSET_E2E_START_AGENT", victim.name, "work-agent")
		}
	})

	eventually(t, 3*time.Minute, victim.name+" fenced its pods", func(ctx context.Context) (bool, string, error) {
		got, err := f.runningOrdinals(ctx, ns, "db")
		return err == nil && len(got[victim.name]) == 0, fmt.Sprintf("running there: %v", got[victim.name]), err
	})
	t.Logf("%s fenced after %v", victim.name, time.Since(start).Round(time.Second))
	eventually(t, 3*time.Minute, other.name+" runs "+victim.name+"'s instances under the same names", func(ctx context.Context) (bool, string, error) {
		got, err := f.runningOrdinals(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for pod := range before[victim.name] {
			if !got[other.name][pod] {
				return false, fmt.Sprintf("%s not yet Running in %s", pod, other.name), nil
			}
		}
		return true, "", nil
	})
	t.Logf("relocated and Running after %v", time.Since(start).Round(time.Second))
	// The hub writes status after the works that moved the pods: wait for it.
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

	// The victim returns: its StatefulSet is removed before its lease is
	// renewed; then the subset fails back home (Automatic). Both are watched
	// from before the agents start: the hooks return once the agents are
	// Ready, and by then (on kind) the copy may be gone and the subset home.
	back := time.Now()
	ev := watchReturn(t, victim, ns, "db-"+subset)
	runHook(t, "FLEETSET_E2E_START_AGENT", victim.name)
	runHook(t, "FLEETSET_E2E_START_AGENT", victim.name, "work-agent")
	restarted = true
	var removedAt, renewedAt time.Time
	eventually(t, 3*time.Minute, victim.name+": copy removed, then lease renewed", func(ctx context.Context) (bool, string, error) {
		removedAt, renewedAt = ev.times()
		return !removedAt.IsZero() && !renewedAt.IsZero(), fmt.Sprintf("removed at %v, renewed at %v", removedAt, renewedAt), nil
	})
	if renewedAt.Before(removedAt) {
		t.Errorf("%s's lease renewed at %s, before its copy of the moved subset was removed (%s)", victim.name, renewedAt, removedAt)
	}
	t.Logf("%s back: copy removed after %v, lease renewed after %v", victim.name, removedAt.Sub(back).Round(time.Second), renewedAt.Sub(back).Round(time.Second))
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
			if !run[victim.name][pod] {
				return false, fmt.Sprintf("%s not Running in %s; subset at %s epoch %d %q", pod, victim.name, ss.Cluster, ss.Epoch, ss.Failover), nil
			}
		}
		return ss.Cluster == victim.name && ss.Epoch == 2 && ss.Failover == "", fmt.Sprintf("subset at %s epoch %d %q", ss.Cluster, ss.Epoch, ss.Failover), nil
	})
	t.Logf("home again after %v", time.Since(back).Round(time.Second))
}

// returnEvents records, from watches on a returning member, when its
// StatefulSet was first removed (deleted, or marked for deletion) and when
// its resync Lease was first renewed (fresh: unexpired when seen).
type returnEvents struct {
	mu                   sync.Mutex
	removedAt, renewedAt time.Time
}

func (e *returnEvents) times() (removed, renewed time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.removedAt, e.renewedAt
}

// watchReturn starts, on member m, a watch of StatefulSet ns/name and one of
// the resync Lease, both from now, recording into the returned events the
// first removal of the StatefulSet and the first renewal of the Lease: a
// renewTime past the one it has now, unexpired when seen. The watches end
// with the test.
func watchReturn(t *testing.T, m member, ns, name string) *returnEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	t.Cleanup(cancel)
	l, err := m.resyncLease(ctx)
	if err != nil {
		t.Fatalf("%s: reading the resync lease: %v", m.name, err)
	}
	var last time.Time
	if l.Spec.RenewTime != nil {
		last = l.Spec.RenewTime.Time
	}
	stsW, err := m.c.Watch(ctx, &appsv1.StatefulSetList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatalf("%s: watching StatefulSet %s/%s: %v", m.name, ns, name, err)
	}
	leaseW, err := m.c.Watch(ctx, &coordinationv1.LeaseList{}, client.InNamespace(fleetv1.ResyncLeaseNamespace),
		client.MatchingFields{"metadata.name": fleetv1.ResyncLeaseName})
	if err != nil {
		t.Fatalf("%s: watching the resync lease: %v", m.name, err)
	}
	e := &returnEvents{}
	record := func(at *time.Time) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if at.IsZero() {
			*at = time.Now()
		}
	}
	go func() {
		defer stsW.Stop()
		for w := range stsW.ResultChan() {
			s, ok := w.Object.(*appsv1.StatefulSet)
			if w.Type == watch.Deleted || (ok && w.Type == watch.Modified && s.DeletionTimestamp != nil) {
				record(&e.removedAt)
			}
		}
	}()
	go func() {
		defer leaseW.Stop()
		for w := range leaseW.ResultChan() {
			// A renewal is a renewTime past the one read above that is
			// fresh: the work agent, when it returns, first applies the
			// last lease the hub wrote before the member was cut off,
			// newer but already expired (still fencing).
			if l, ok := w.Object.(*coordinationv1.Lease); ok {
				if end, ok := leaseEnd(l); ok && l.Spec.RenewTime.After(last) && time.Now().Before(end) {
					record(&e.renewedAt)
				}
			}
		}
	}()
	return e
}
