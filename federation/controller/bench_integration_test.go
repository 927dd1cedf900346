//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// TestHubThroughput is the hub benchmark (make bench-hub; runs only with
// BENCH_HUB=1): BENCH_FLEETSETS FleetSets (default 200), each with one subset
// in each of BENCH_CLUSTERS ManagedClusters (default 10, at most 32), on a
// real apiserver. It prints, on lines starting with "BENCH ", the time until
// every ManifestWork is written and every status is observed, the hub's API
// writes per FleetSet (non-GET requests, counted by a RoundTripper on the
// manager's rest.Config), and the writes during BENCH_STEADY_SECONDS (default
// 60) of steady state, where the target is 0 besides lease renewals.
func TestHubThroughput(t *testing.T) {
	if os.Getenv("BENCH_HUB") == "" {
		t.Skip("benchmark: set BENCH_HUB=1 (make bench-hub)")
	}
	ctx := context.Background()
	nFS := envInt(t, "BENCH_FLEETSETS", 200)
	nC := envInt(t, "BENCH_CLUSTERS", 10)
	steady := time.Duration(envInt(t, "BENCH_STEADY_SECONDS", 60)) * time.Second
	leaseDuration := time.Duration(envInt(t, "BENCH_LEASE_SECONDS", fleetv1.DefaultResyncLeaseDurationSeconds)) * time.Second
	if nC < 1 || nC > 32 {
		t.Fatalf("BENCH_CLUSTERS=%d: want 1..32 (spec.topology.subsets holds at most 32)", nC)
	}
	ns := "bench"
	createNamespace(t, ns)
	clusters := make([]string, nC)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("bench-c%02d", i)
		createCluster(t, clusters[i], true)
	}
	fleetSets := make([]*fleetv1.FleetSet, nFS)
	for i := range fleetSets {
		fs := sampleFleetSet(ns, fmt.Sprintf("fs-%04d", i))
		fs.Spec.Replicas = int32(3 * nC)
		fs.Spec.UpdateStrategy.ManualUpdate = nil
		fs.Spec.Topology.Subsets = nil
		for j, c := range clusters {
			fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{
				Name: fmt.Sprintf("s%02d", j), Cluster: c,
				Domains: []fleetv1.SubsetDomain{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c", Replicas: ptr.To(intstr.FromString("20%"))}},
			})
		}
		fleetSets[i] = fs
	}

	h := startHub(t, leaseDuration)
	start := time.Now()
	for _, fs := range fleetSets {
		if err := k8sClient.Create(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Since(start)
	wantWorks := nFS * nC
	countWorks := func() int {
		var list workv1.ManifestWorkList
		if err := k8sClient.List(ctx, &list, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	eventually(t, 30*time.Minute, "every ManifestWork", func() (bool, error) { return countWorks() == wantWorks, nil })
	allWorks := time.Since(start)
	eventually(t, 30*time.Minute, "every status", func() (bool, error) {
		var list fleetv1.FleetSetList
		if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, fs := range list.Items {
			if fs.Status.ObservedGeneration != fs.Generation || len(fs.Status.Subsets) != nC {
				return false, nil
			}
		}
		return true, nil
	})
	allStatus := time.Since(start)
	// Quiescent: no write other than lease renewals for 3 s.
	quiet := func() map[string]int {
		last := h.writes.snapshot()
		for {
			time.Sleep(3 * time.Second)
			cur := h.writes.snapshot()
			if cur["other"] == last["other"] && cur["event"] == last["event"] {
				return cur
			}
			last = cur
		}
	}
	converged := quiet()

	fmt.Printf("BENCH hub client_qps=%d fleetsets=%d clusters=%d manifestworks=%d create_fleetsets=%.2fs all_manifestworks=%.2fs all_status=%.2fs manifestworks_per_s=%.0f\n",
		envInt(t, "BENCH_QPS", 50), nFS, nC, wantWorks, created.Seconds(), allWorks.Seconds(), allStatus.Seconds(), float64(wantWorks)/allWorks.Seconds())
	fmt.Printf("BENCH hub writes_per_fleetset=%.2f (ManifestWorks %d + finalizer 1 + status 1 = %d expected) events_per_fleetset=%.2f lease_writes=%d leader_writes=%d\n",
		float64(converged["other"])/float64(nFS), nC, nC+2, float64(converged["event"])/float64(nFS), converged["lease"], converged["leader"])

	time.Sleep(steady)
	after := h.writes.snapshot()
	fmt.Printf("BENCH hub steady_seconds=%.0f writes_besides_leases=%d events=%d lease_renewals=%d (lease %.0fs: %d clusters × %.1f renewals expected)\n",
		steady.Seconds(), after["other"]-converged["other"], after["event"]-converged["event"], after["lease"]-converged["lease"],
		leaseDuration.Seconds(), nC, steady.Seconds()/(leaseDuration.Seconds()/3))
	if n := after["other"] - converged["other"]; n != 0 {
		t.Errorf("%d writes besides lease renewals in steady state, want 0", n)
	}

	// Clean up, so later tests in the package see an idle apiserver.
	h.stop()
	for _, fs := range fleetSets {
		_ = k8sClient.Delete(ctx, &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fs.Name}})
	}
}
