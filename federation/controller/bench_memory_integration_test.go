//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// heapInUse returns the process's heap in use after two garbage
// collections, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHubMemory is the hub memory benchmark (make bench-hub-memory; runs
// only with BENCH_MEMORY=1): for each size F×C×S of BENCH_MEMORY_SIZES
// (FleetSets × ManagedClusters × subsets per FleetSet), on a fresh
// apiserver holding the FleetSets, it starts the hub, waits until every
// ManifestWork and status is written and 5 s more, and prints the heap in
// use of the test process (after GC) less what it held before the hub
// started: the hub's caches and state, per FleetSet and per work.
func TestHubMemory(t *testing.T) {
	if os.Getenv("BENCH_MEMORY") == "" {
		t.Skip("benchmark: set BENCH_MEMORY=1 (make bench-hub-memory)")
	}
	sizes := os.Getenv("BENCH_MEMORY_SIZES")
	if sizes == "" {
		sizes = "100x20x2,200x20x2,100x20x10,100x20x20,100x100x20"
	}
	fmt.Printf("BENCH reproduce: BENCH_MEMORY_SIZES=%s make bench-hub-memory\n", sizes)
	for _, size := range strings.Split(sizes, ",") {
		var nums []int
		for _, f := range strings.Split(size, "x") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				t.Fatalf("BENCH_MEMORY_SIZES: %q is not FleetSets x clusters x subsets", size)
			}
			nums = append(nums, n)
		}
		if len(nums) != 3 || nums[2] > min(nums[1], 32) {
			t.Fatalf("BENCH_MEMORY_SIZES: %q: want F x C x S with S ≤ min(C, 32)", size)
		}
		memoryAt(t, nums[0], nums[1], nums[2])
	}
}

// memoryAt measures the hub's heap at nFS FleetSets of subsets subsets over
// nC clusters (TestHubMemory).
func memoryAt(t *testing.T, nFS, nC, subsets int) {
	ctx := context.Background()
	const ns = "bench"
	clusters := benchClusters(nC)
	fleetSets := benchFleetSets(ns, nFS, subsets, clusters)
	cp, setup, stop := benchControlPlane(t, "hub", ns, clusters)
	defer stop()
	obs := observe(t, cp.Config, ns, subsets)
	defer obs.cancel()
	if err := createAll(ctx, setup, fleetSets, 16); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	start := time.Now()
	h := startHubOn(t, cp.Config, Options{HubIdentity: "test-hub", LeaseDuration: 60 * time.Second,
		MaxParallelWrites: DefaultMaxParallelWrites, MaxUnobservedWrites: DefaultMaxUnobservedWrites})
	obs.waitFor(t, 30*time.Minute, "every ManifestWork and status", func(w, d int) bool { return w == nFS*subsets && d == nFS })
	settled := time.Since(start)
	time.Sleep(5 * time.Second)
	after := heapInUse()
	h.stop()
	works := nFS * subsets
	delta := float64(after) - float64(before)
	fmt.Printf("BENCH memory fleetsets=%d clusters=%d subsets=%d works=%d heap_inuse_mib=%.1f (before hub %.1f) per_fleetset_kib=%.1f per_work_kib=%.2f settled_s=%.1f %s\n",
		nFS, nC, subsets, works, delta/(1<<20), float64(before)/(1<<20), delta/1024/float64(nFS), delta/1024/float64(works), settled.Seconds(), loadAvg())
}
