//go:build integration

package plugins_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// heapInUse returns the test process's live heap after a full collection,
// in bytes: fleetset-scheduler runs in this process.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestOrdinalsOutsideTheBlockLeaveMemoryFlat creates 20 placements (ordinal
// blocks of 1000) and 1000 pods that claim ordinals far past their block but
// below the seat limit (1<<20), the most a label could once make the
// scheduler's ordinal map of a placement grow (4 MiB each, 80 MiB here). Each
// pod stays Pending with a FailedScheduling reason naming the block, and the
// scheduler's heap grows by what 1000 pods cost in its caches, not by the
// ordinals they claim.
func TestOrdinalsOutsideTheBlockLeaveMemoryFlat(t *testing.T) {
	ctx := context.Background()
	nodeZones(t) // the nodes, so that the pods reach the plugins
	ns := newNamespace(t, "bounds")
	const placements, podsPer = 20, 50
	for p := range placements {
		if err := cl.Create(ctx, makePlacement(ns, fmt.Sprintf("p%d", p), 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-b", "zone-c")...)); err != nil {
			t.Fatal(err)
		}
	}
	before := heapInUse()
	var wg sync.WaitGroup
	errs := make(chan error, placements)
	for p := range placements {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range podsPer {
				ordinal := 1<<20 - 1 - (p*podsPer + i)
				pod := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("huge-%d-%d", p, i), Labels: map[string]string{
						"app": "huge", fleetv1.LabelPlacement: fmt.Sprintf("p%d", p), fleetv1.LabelPodIndex: strconv.Itoa(ordinal)}},
					Spec: v1.PodSpec{SchedulerName: fleetv1.SchedulerName, TerminationGracePeriodSeconds: ptr.To[int64](0),
						Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
				}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every pod tried and refused: PodScheduled False, naming the block.
	var pending int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=huge"})
		if err != nil {
			return false, nil
		}
		pending = 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				return false, fmt.Errorf("pod %s (ordinal %s) bound to %s", p.Name, p.Labels[fleetv1.LabelPodIndex], p.Spec.NodeName)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && strings.Contains(c.Message, "ordinal block [0, 1000)") {
					pending++
				}
			}
		}
		return pending == placements*podsPer, nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods Pending with the ordinal block named: %v", pending, placements*podsPer, err)
	}
	after := heapInUse()
	grew := int64(after) - int64(before)
	t.Logf("scheduler process heap: %.1f MiB before, %.1f MiB after %d pods with ordinals past their block (%+.1f MiB)",
		float64(before)/(1<<20), float64(after)/(1<<20), placements*podsPer, float64(grew)/(1<<20))
	// 1000 pods in the scheduler's and the test's caches cost a few MiB; one
	// ordinal map grown to the claimed ordinals would cost 4 MiB, all 20 of
	// them 80 MiB.
	if grew > 24<<20 {
		t.Errorf("heap grew by %.1f MiB, want under 24 MiB", float64(grew)/(1<<20))
	}
}
