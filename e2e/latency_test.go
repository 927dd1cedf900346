//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// seen is the first time a watcher saw a cluster's object at a replica count.
type seen struct {
	mu sync.Mutex
	at map[string]time.Time // key: cluster/replicas
}

func (s *seen) mark(cluster string, replicas int64, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := cluster + "/" + strconv.FormatInt(replicas, 10)
	if _, ok := s.at[k]; !ok {
		s.at[k] = t
	}
}

func (s *seen) get(cluster string, replicas int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[cluster+"/"+strconv.FormatInt(replicas, 10)]
	return t, ok
}

func (s *seen) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = map[string]time.Time{}
}

// watchClient returns a client of its own (its own connections and rate
// limit) for a kubeconfig of the fleet's configuration.
func watchClient(t *testing.T, path string) client.WithWatch {
	t.Helper()
	c, err := framework.NewClient(path, framework.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestScaleLatency measures, over FLEETSET_E2E_LATENCY_SCALES scales (unset:
// skipped; `make bench-latency` sets 100), the time from a merge patch of
// the FleetSet's scale subresource (what `kubectl scale fleetset` sends:
// no resourceVersion, so no conflict with the hub's status writes) to the last member
// StatefulSet carrying the new replicas, split into fleetset's share (update
// → every ManifestWork on the hub carries the new replicas: the hub's watch,
// reconcile and write) and OCM's share (→ every member StatefulSet updated:
// the work agents' watch and apply). Times are when this test's watches
// deliver the events, on the same clock. Prints BENCH lines with p50, p90,
// p99 and max in milliseconds.
func TestScaleLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FLEETSET_E2E_LATENCY_SCALES"))
	if n <= 0 {
		t.Skip("FLEETSET_E2E_LATENCY_SCALES is not set (make bench-latency sets it)")
	}
	f := theFleet
	ctx := t.Context()
	ns := f.newNamespace(t, "latency")
	const name = "lat"
	const low, high = 9, 12
	fs := f.newFleetSet(ns, name, low)
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, name, low)

	workKey := manifestwork.WorkName(ns, name)
	stsNames := map[string]string{}
	for _, s := range fs.Spec.Topology.Subsets {
		stsNames[s.Cluster] = manifestwork.StatefulSetName(name, s.Name)
	}
	works, members := &seen{at: map[string]time.Time{}}, &seen{at: map[string]time.Time{}}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Hub: the FleetSet's ManifestWork in every member's namespace.
	hubW := watchClient(t, f.cfg.HubKubeconfig)
	for _, m := range f.members {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(manifestWorkGVK)
		w, err := hubW.Watch(wctx, l, client.InNamespace(m.name))
		if err != nil {
			t.Fatal(err)
		}
		go func(cluster string) {
			defer w.Stop()
			for ev := range w.ResultChan() {
				now := time.Now()
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted || u.GetName() != workKey {
					continue
				}
				if r, ok := statefulSetReplicasIn(u, stsNames[cluster]); ok {
					works.mark(cluster, r, now)
				}
			}
		}(m.name)
	}
	// Members: the subset's StatefulSet.
	for _, m := range f.cfg.Members {
		mw := watchClient(t, m.Path)
		w, err := mw.Watch(wctx, &appsv1.StatefulSetList{}, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		go func(cluster string) {
			defer w.Stop()
			for ev := range w.ResultChan() {
				now := time.Now()
				s, ok := ev.Object.(*appsv1.StatefulSet)
				if !ok || ev.Type == watch.Deleted || s.Name != stsNames[cluster] || s.Spec.Replicas == nil {
					continue
				}
				members.mark(cluster, int64(*s.Spec.Replicas), now)
			}
		}(m.Name)
	}

	// The division at both sizes, per cluster, as the hub computes it; every
	// cluster's count differs between them, so every scale reaches all.
	division := map[int32]map[string]int64{}
	for _, r := range []int32{low, high} {
		fs.Spec.Replicas = r
		subsets, _, err := plan.For(fs, nil)
		if err != nil {
			t.Fatal(err)
		}
		division[r] = map[string]int64{}
		for _, s := range subsets {
			division[r][s.Cluster] = int64(s.Replicas)
		}
	}
	for c := range division[low] {
		if division[low][c] == division[high][c] {
			t.Fatalf("cluster %s has %d replicas at both %d and %d: pick other sizes", c, division[low][c], low, high)
		}
	}

	var hub, ocm, total []time.Duration
	replicas := int32(low)
	for i := 0; i < n; i++ {
		replicas = low + high - replicas
		works.reset()
		members.reset()
		t0 := time.Now()
		f.scaleFleetSet(t, ns, name, replicas)
		var lastWork, lastMember time.Time
		eventually(t, time.Minute, fmt.Sprintf("scale %d to %d reaching every member", i, replicas), func(ctx context.Context) (bool, string, error) {
			lastWork, lastMember = time.Time{}, time.Time{}
			for c, r := range division[replicas] {
				tw, ok := works.get(c, r)
				if !ok {
					return false, fmt.Sprintf("ManifestWork for %s not at %d replicas", c, r), nil
				}
				tm, ok := members.get(c, r)
				if !ok {
					return false, fmt.Sprintf("StatefulSet in %s not at %d replicas", c, r), nil
				}
				if tw.After(lastWork) {
					lastWork = tw
				}
				if tm.After(lastMember) {
					lastMember = tm
				}
			}
			return true, "", nil
		})
		hub = append(hub, lastWork.Sub(t0))
		ocm = append(ocm, lastMember.Sub(lastWork))
		total = append(total, lastMember.Sub(t0))
	}
	// The three slowest scales by total, with their parts: whether the
	// tail is the first scales (warm-up) or spread, and whose it is.
	order := make([]int, len(total))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(total[b], total[a]) })
	for _, i := range order[:min(3, len(order))] {
		fmt.Printf("BENCH scale-latency slowest: scale %d total=%.1fms fleetset=%.1fms OCM=%.1fms\n", i,
			float64(total[i].Microseconds())/1000, float64(hub[i].Microseconds())/1000, float64(ocm[i].Microseconds())/1000)
	}
	report := func(what string, ds []time.Duration) {
		slices.Sort(ds)
		q := func(p float64) float64 {
			i := int(p*float64(len(ds))+0.5) - 1
			i = max(0, min(i, len(ds)-1))
			return float64(ds[i].Microseconds()) / 1000
		}
		fmt.Printf("BENCH scale-latency %-36s n=%d p50=%.1fms p90=%.1fms p99=%.1fms max=%.1fms\n", what, len(ds), q(0.50), q(0.90), q(0.99), q(1))
	}
	report("total (update → last StatefulSet)", total)
	report("fleetset (update → last ManifestWork)", hub)
	report("OCM (last work → last StatefulSet)", ocm)
}

// scaleFleetSet sets FleetSet ns/name to replicas as `kubectl scale` does:
// a merge patch of its scale subresource, without a resourceVersion.
func (f *fleet) scaleFleetSet(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	fs := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	if err := f.hub.SubResource("scale").Patch(t.Context(), fs, patch, client.WithSubResourceBody(&autoscalingv1.Scale{})); err != nil {
		t.Fatalf("scaling FleetSet %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// statefulSetReplicasIn returns spec.replicas of the StatefulSet named sts
// in the ManifestWork u's manifests.
func statefulSetReplicasIn(u *unstructured.Unstructured, sts string) (int64, bool) {
	ms, _, _ := unstructured.NestedSlice(u.Object, "spec", "workload", "manifests")
	for _, m := range ms {
		obj, ok := m.(map[string]any)
		if !ok {
			continue
		}
		mu := &unstructured.Unstructured{Object: obj}
		if mu.GroupVersionKind() != (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}) || mu.GetName() != sts {
			continue
		}
		r, found, err := unstructured.NestedInt64(obj, "spec", "replicas")
		return r, found && err == nil
	}
	return 0, false
}
