//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// stormWorks returns how many ManifestWorks of FleetSets of namespace ns
// cluster holds, and how many of them hold StatefulSet <owner>-east.
func stormWorks(t testing.TB, cluster, ns string) (all, east int) {
	t.Helper()
	var l workv1.ManifestWorkList
	if err := k8sClient.List(context.Background(), &l, client.InNamespace(cluster), client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		w := &l.Items[i]
		if manifestwork.HoldsStatefulSet(w, manifestwork.StatefulSetName(w.Labels[fleetv1.LabelOwnerName], "east")) {
			east++
		}
	}
	return len(l.Items), east
}

// stormWorkCount returns how many ManifestWorks of FleetSets of namespace
// ns cluster holds, from a metadata-only list: the benchmark polls it every
// 200 ms, and a list of whole works (stormWorks) made the apiserver encode
// every work five times a second, the largest cost of the run.
func stormWorkCount(t testing.TB, cluster, ns string) int {
	t.Helper()
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWorkList"))
	if err := k8sClient.List(context.Background(), l, client.InNamespace(cluster), client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// stormRequests returns the apiserver's requests since before, all and
// heartbeat Lease GETs, and its 429 answers (apiserverRequests).
func stormRequests(before map[string]float64) (all, leaseGets, throttled float64) {
	after := apiserverRequests(env.Config)
	for k, v := range after {
		d := v - before[k]
		switch k {
		case "HTTP_429":
			throttled += d
		case "GET leases":
			leaseGets += d
			all += d
		default:
			if !strings.HasPrefix(k, "TERMINATED_WATCH ") {
				all += d
			}
		}
	}
	return all, leaseGets, throttled
}

// TestRelocationStorm is the relocation storm benchmark (make bench-storm;
// runs only with BENCH_STORM=1): BENCH_STORM_FLEETSETS FleetSets (default
// 200) of two subsets, east on cluster storm-a and west on storm-b (a third
// member, storm-c, keeps the loss under half of the members), failover
// Relocate with toleration 0, fenceGraceSeconds BENCH_STORM_FENCE_SECONDS
// (default 15) and termination grace 1 s, members beating with a
// BENCH_STORM_BEAT_SECONDS timeout (default 3; a beat every sixth of it).
// storm-a is lost at once: its heartbeat stops and its
// ManagedCluster turns unavailable. It prints the time until every subset
// was relocated (storm-b holds every east StatefulSet and storm-a none),
// against the fence deadline, and the apiserver's requests per second
// (all, heartbeat Lease GETs) and 429 answers while the relocations were
// held and while they ran; it fails if one came before the deadline.
// BENCH_HUB_PROFILE=<file> writes a CPU profile of the test process (the
// hub, the members' heartbeats and the observer) from the loss until every
// subset was relocated (<file>.0).
func TestRelocationStorm(t *testing.T) {
	if os.Getenv("BENCH_STORM") == "" {
		t.Skip("benchmark: set BENCH_STORM=1 (make bench-storm)")
	}
	n := envInt(t, "BENCH_STORM_FLEETSETS", 200)
	fence := envInt(t, "BENCH_STORM_FENCE_SECONDS", 15)
	timeout := time.Duration(envInt(t, "BENCH_STORM_BEAT_SECONDS", 3)) * time.Second
	const ns, margin = "storm", time.Second
	fmt.Printf("BENCH reproduce: BENCH_STORM_FLEETSETS=%d BENCH_STORM_FENCE_SECONDS=%d BENCH_STORM_BEAT_SECONDS=%.0f make bench-storm\n", n, fence, timeout.Seconds())
	for _, c := range []string{"storm-a", "storm-b", "storm-c"} {
		createCluster(t, c, true)
	}
	createNamespace(t, ns)
	stopA := memberBeatTimeout(t, "storm-a", -1, timeout)
	memberBeatTimeout(t, "storm-b", -1, timeout)
	memberBeatTimeout(t, "storm-c", -1, timeout)
	h := startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: margin})
	setupStorm(t, ns, n, fence)

	reqBefore, writesBefore, waitBefore := apiserverRequests(env.Config), h.writes.snapshot(), h.limiter.seconds()
	stopProfile := startHubProfile(t, 0)
	defer stopProfile()
	lastBeat := stopA()
	setAvailable(t, "storm-a", false)
	lost := time.Now()
	deadline := lastBeat.Add(timeout + timeout/3 + time.Duration(fence)*time.Second + time.Second + margin)
	var heldAll, heldLease, held429 float64
	heldSnap := false
	var first time.Time
	for {
		a := stormWorkCount(t, "storm-a", ns)
		if !heldSnap && time.Now().After(deadline) {
			heldAll, heldLease, held429 = stormRequests(reqBefore)
			heldSnap = true
		}
		if a < n && first.IsZero() {
			first = time.Now()
		}
		if a == 0 {
			break
		}
		if time.Since(lost) > 5*time.Minute {
			t.Fatalf("after 5 min, %d of %d FleetSets still on storm-a; st-0000: %s", a, n, condition(getFleetSet(t, ns, "st-0000"), fleetv1.ConditionDegraded).Message)
		}
		time.Sleep(200 * time.Millisecond)
	}
	done := time.Now()
	stopProfile()
	all, lease, n429 := stormRequests(reqBefore)
	_, east := stormWorks(t, "storm-b", ns)
	w := h.writes.snapshot()
	heldSecs, runSecs := deadline.Sub(lost).Seconds(), done.Sub(deadline).Seconds()
	fmt.Printf("BENCH storm reconciles=%d fleetsets=%d relocated=%d lost_to_deadline=%.1fs first_after_deadline=%.2fs all_after_deadline=%.2fs all_after_lost=%.2fs %s\n",
		h.reconciles, n, east, heldSecs, first.Sub(deadline).Seconds(), runSecs, done.Sub(lost).Seconds(), loadAvg())
	fmt.Printf("BENCH storm held requests_per_s=%.0f lease_gets_per_s=%.1f lease_gets_per_fleetset_per_s=%.3f http_429=%.0f\n",
		heldAll/heldSecs, heldLease/heldSecs, heldLease/heldSecs/float64(n), held429)
	fmt.Printf("BENCH storm relocating requests_per_s=%.0f lease_gets_per_s=%.1f http_429=%.0f hub_throttled=%d hub_rate_limiter_wait=%.1fs work_writes=%d fleetset_writes=%d events=%d\n",
		(all-heldAll)/runSecs, (lease-heldLease)/runSecs, n429-held429, w["throttled"]-writesBefore["throttled"], h.limiter.seconds()-waitBefore,
		w["work"]-writesBefore["work"], w["fleetset"]-writesBefore["fleetset"], w["event"]-writesBefore["event"])
	if !first.IsZero() && first.Before(deadline) {
		t.Errorf("first relocation at %s, before the fence deadline %s", first.Format(time.StampMilli), deadline.Format(time.StampMilli))
	}
	if east != n {
		t.Errorf("storm-b holds %d east StatefulSets, want %d", east, n)
	}
}

// setupStorm creates n FleetSets st-NNNN in namespace ns over storm-a (east)
// and storm-b (west), Relocate with toleration 0 and fence grace fence
// seconds, waits until each cluster holds their works and the resync works,
// and marks every work applied, as the work agent would.
func setupStorm(t *testing.T, ns string, n, fence int) {
	t.Helper()
	ctx := context.Background()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		fs := pairFleetSet(ns, "storm", 1, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0), FenceGraceSeconds: int32(fence)})
		fs.Name = fmt.Sprintf("st-%04d", i)
		fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "storm-a", "storm-b"
		g.Go(func() error { return k8sClient.Create(gctx, fs) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Minute, "every work delivered", func() (bool, error) {
		a, _ := stormWorks(t, "storm-a", ns)
		b, _ := stormWorks(t, "storm-b", ns)
		return a == n && b == n, nil
	})
	g, _ = errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		for _, c := range []string{"storm-a", "storm-b"} {
			g.Go(func() error { markApplied(t, c, ns, fmt.Sprintf("st-%04d", i)); return nil })
		}
	}
	_ = g.Wait()
	eventually(t, time.Minute, "resync leases delivered", func() (bool, error) {
		w := &workv1.ManifestWork{}
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: "storm-a", Name: fleetv1.ResyncWorkName}, w) == nil, nil
	})
	// The status updates above settle: FleetSets fold the applied works.
	time.Sleep(5 * time.Second)
}
