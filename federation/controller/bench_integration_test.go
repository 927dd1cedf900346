//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// envInt returns the non-negative integer in environment variable name, or
// def when it is unset; it fails the test on anything else.
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

// envInts returns the comma-separated positive integers in environment
// variable name, def when it is unset, none when it is "0"; it fails the
// test on anything else.
func envInts(t testing.TB, name, def string) []int {
	v, ok := os.LookupEnv(name)
	if !ok {
		v = def
	}
	if v == "0" || v == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want comma-separated positive integers", name, v)
		}
		out = append(out, n)
	}
	return out
}

// loadAvg returns the 1- and 5-minute load averages of the machine, as
// "load1=x load5=y" (or "" where /proc/loadavg cannot be read): the figures
// are only comparable at similar load.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 2 {
		return ""
	}
	return "load1=" + f[0] + " load5=" + f[1]
}

// benchQPS returns the client QPS and burst of the hub and of the plain
// client: the hub's defaults (cmd/hub --kube-api-qps, --kube-api-burst),
// unless BENCH_QPS sets the QPS (burst twice that).
func benchQPS(t testing.TB) (float32, int) {
	if q := envInt(t, "BENCH_QPS", 0); q > 0 {
		return float32(q), 2 * q
	}
	return DefaultKubeAPIQPS, DefaultKubeAPIBurst
}

// benchFleetSets returns nFS FleetSets in namespace ns, each with subsets
// subsets (three domains each, one of them 20%) of 3 replicas: FleetSet i's
// subset j is in cluster (i+j) mod len(clusters), so that every cluster
// holds about as many as the others.
func benchFleetSets(ns string, nFS, subsets int, clusters []string) []*fleetv1.FleetSet {
	out := make([]*fleetv1.FleetSet, nFS)
	for i := range out {
		fs := sampleFleetSet(ns, fmt.Sprintf("fs-%04d", i))
		fs.Spec.Replicas = int32(3 * subsets)
		fs.Spec.UpdateStrategy.ManualUpdate = nil
		fs.Spec.Topology.Subsets = nil
		for j := range subsets {
			fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{
				Name: fmt.Sprintf("s%02d", j), Cluster: clusters[(i+j)%len(clusters)],
				Domains: []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c", Replicas: ptr.To(intstr.FromString("20%"))}},
			})
		}
		out[i] = fs
	}
	return out
}

// benchClusters returns the names of n ManagedClusters.
func benchClusters(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("bench-c%03d", i)
	}
	return out
}

// setupBench creates, through c, namespace ns and every cluster (its
// namespace and an Available ManagedCluster).
func setupBench(t testing.TB, c client.Client, ns string, clusters []string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range append([]string{ns}, clusters...) {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := controlplane.BindClusterSet(ctx, c, ns, controlplane.GlobalClusterSet); err != nil {
		t.Fatal(err)
	}
	for _, name := range clusters {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		apimeta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "set by test"})
		if err := c.Status().Update(ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
}

// createAll creates objs through c, parallel at a time.
func createAll[T client.Object](ctx context.Context, c client.Client, objs []T, parallel int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, o := range objs {
		g.Go(func() error { return c.Create(ctx, o.DeepCopyObject().(client.Object)) })
	}
	return g.Wait()
}

// renderAsHub returns the ManifestWorks the hub renders for fs (as the
// apiserver returned it, defaults applied) when every cluster exists and is
// Available and nothing was delivered yet: the reconcile's plan, rollout and
// write-choosing steps (policy None: no failover step), without its reads.
// The benchmark checks the result against what the hub writes.
func renderAsHub(fs *fleetv1.FleetSet) ([]*workv1.ManifestWork, error) {
	st := &state{fs: fs, workName: manifestwork.WorkName(fs.Namespace, fs.Name), existingWorks: map[types.NamespacedName]*workv1.ManifestWork{}}
	planned, _, err := plan.For(fs, previousStarts(fs, st.existingWorks))
	if err != nil {
		return nil, err
	}
	for _, p := range planned {
		st.subsets = append(st.subsets, subsetPlan{planned: p, clusterExists: true, clusterAvailable: true})
	}
	if err := planRollout(st); err != nil {
		return nil, err
	}
	changes, err := chooseWrites(fs, st.subsets, st.existingWorks, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	works := make([]*workv1.ManifestWork, 0, len(changes.apply))
	for _, ww := range changes.apply {
		works = append(works, ww.desired)
	}
	return works, nil
}

// benchObserver watches, from its own cache, the ManifestWorks (metadata
// only) and FleetSets of one namespace on one apiserver: what the benchmark
// waits for, without listing 20,000 works on every poll.
type benchObserver struct {
	ns      string
	subsets int
	cancel  context.CancelFunc

	mu sync.Mutex
	// hashes is the spec hash annotation of every work, by key.
	hashes map[types.NamespacedName]string
	// done holds the FleetSets whose status reports their generation and
	// every subset.
	done map[types.NamespacedName]bool
}

// observe starts a benchObserver on cfg for the FleetSets of namespace ns
// with subsets subsets each, and their works; it stops with the test.
func observe(t testing.TB, cfg *rest.Config, ns string, subsets int) *benchObserver {
	t.Helper()
	o := &benchObserver{ns: ns, subsets: subsets, hashes: map[types.NamespacedName]string{}, done: map[types.NamespacedName]bool{}}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	t.Cleanup(cancel)
	works := &metav1.PartialObjectMetadata{}
	works.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWork"))
	wi, err := c.GetInformer(ctx, works)
	if err != nil {
		t.Fatal(err)
	}
	key := func(obj any) (metav1.Object, types.NamespacedName, bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, types.NamespacedName{}, false
		}
		return m, types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}, true
	}
	setWork := func(obj any) {
		if m, k, ok := key(obj); ok && m.GetLabels()[fleetv1.LabelOwnerNamespace] == ns {
			o.mu.Lock()
			o.hashes[k] = m.GetAnnotations()[fleetv1.AnnotationSpecHash]
			o.mu.Unlock()
		}
	}
	if _, err := wi.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    setWork,
		UpdateFunc: func(_, obj any) { setWork(obj) },
		DeleteFunc: func(obj any) {
			if _, k, ok := key(obj); ok {
				o.mu.Lock()
				delete(o.hashes, k)
				o.mu.Unlock()
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	fi, err := c.GetInformer(ctx, &fleetv1.FleetSet{})
	if err != nil {
		t.Fatal(err)
	}
	setFleetSet := func(obj any) {
		fs, ok := obj.(*fleetv1.FleetSet)
		if !ok || fs.Namespace != ns {
			return
		}
		o.mu.Lock()
		o.done[client.ObjectKeyFromObject(fs)] = fs.Status.ObservedGeneration == fs.Generation && len(fs.Status.Subsets) == subsets
		o.mu.Unlock()
	}
	if _, err := fi.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    setFleetSet,
		UpdateFunc: func(_, obj any) { setFleetSet(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("benchmark observer: cache not synced")
	}
	return o
}

// counts returns how many works and finished FleetSets o has seen.
func (o *benchObserver) counts() (works, done int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.done {
		if d {
			done++
		}
	}
	return len(o.hashes), done
}

// waitFor polls o every 20 ms until cond holds or timeout passes.
func (o *benchObserver) waitFor(t testing.TB, timeout time.Duration, what string, cond func(works, done int) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w, d := o.counts()
		if cond(w, d) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (works %d, FleetSets done %d)", timeout, what, w, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// benchControlPlane starts a fresh control plane with the fleetset and OCM
// CRDs for the benchmark's run what ("limit", "hub"), creates namespace ns
// and the clusters there (setupBench), and returns it, a client of it and
// the function that stops it (once; the test's cleanup calls it too).
func benchControlPlane(t *testing.T, what, ns string, clusters []string) (*controlplane.Env, client.Client, func()) {
	t.Helper()
	crds, err := controlplane.OCMCRDs()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(append([]string{"manifests/crds"}, crds...)...)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := cp.Stop(); err != nil {
				t.Errorf("stopping the %s's control plane: %v", what, err)
			}
		})
	}
	// Also when setupBench or the run fails.
	t.Cleanup(stop)
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	setupBench(t, c, ns, clusters)
	return cp, c, stop
}

// limitResult is one run of the plain client.
type limitResult struct {
	parallel  int
	seconds   float64 // until the observer saw every work
	writes    int     // non-GET requests
	throttled int     // 429 answers
	// limiterWait is the time requests waited in the client's rate limiter.
	limiterWait float64
	load        string
	// bytes is the JSON size of the works written, all together.
	bytes int
	// works is what the limit wrote, read back from its apiserver.
	works *workSet
}

// renderStored reads back, through c, the FleetSets of namespace ns (as
// the apiserver stored them: defaults applied, UIDs set) and renders every
// ManifestWork of theirs as the hub does (renderAsHub). It returns the
// works and their JSON size, all together.
func renderStored(t testing.TB, c client.Client, ns string) ([]*workv1.ManifestWork, int) {
	t.Helper()
	var l fleetv1.FleetSetList
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var works []*workv1.ManifestWork
	size := 0
	for i := range l.Items {
		fs := &l.Items[i]
		ws, err := renderAsHub(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			size += len(b)
		}
		works = append(works, ws...)
	}
	return works, size
}

// measureLimit creates the benchmark's namespaces, ManagedClusters and
// FleetSets on a fresh control plane, renders their works as the hub would
// there (renderStored), writes them from parallel goroutines through one
// controller-runtime client with the hub's rest.Config settings (QPS,
// burst), and returns the time until an observer saw every work, with what
// the hub's works are compared with. subsets is the subsets per FleetSet.
func measureLimit(t *testing.T, pair, parallel, subsets int, ns string, clusters []string, fleetSets []*fleetv1.FleetSet) limitResult {
	t.Helper()
	cp, setup, stop := benchControlPlane(t, "limit", ns, clusters)
	defer stop()
	ctx := context.Background()
	if err := createAll(ctx, setup, fleetSets, 16); err != nil {
		t.Fatal(err)
	}
	works, size := renderStored(t, setup, ns)
	if len(works) != len(fleetSets)*subsets {
		t.Fatalf("rendered %d ManifestWorks, want %d", len(works), len(fleetSets)*subsets)
	}
	obs := observe(t, cp.Config, ns, subsets)
	defer obs.cancel()

	wc := &writeCounter{}
	cfg := rest.CopyConfig(cp.Config)
	limiter := newWaitingLimiter(benchQPS(t))
	cfg.RateLimiter = limiter
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: wc} })
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	reqBefore, cpuBefore := apiserverRequests(cp.Config), processCPU()
	start := time.Now()
	if f := os.Getenv("BENCH_APISERVER_PROFILE"); f != "" {
		go func() {
			time.Sleep(10 * time.Second)
			profileAPIServer(cp.Config, fmt.Sprintf("%s.limit%d.%d", f, parallel, pair))
		}()
	}
	if err := createAll(ctx, c, works, parallel); err != nil {
		t.Fatal(err)
	}
	obs.waitFor(t, 30*time.Minute, "every ManifestWork", func(w, _ int) bool { return w == len(works) })
	secs := time.Since(start).Seconds()
	printCPU(fmt.Sprintf("limit pair=%d parallel=%d", pair, parallel), cpuBefore, processCPU())
	printRequests(fmt.Sprintf("limit pair=%d parallel=%d", pair, parallel), reqBefore, apiserverRequests(cp.Config))
	n := wc.snapshot()
	written, err := storedWorks(ctx, setup, ns)
	if err != nil {
		t.Fatal(err)
	}
	return limitResult{parallel: parallel, seconds: secs, writes: n["work"] + n["other"], throttled: n["throttled"], limiterWait: limiter.seconds(), load: loadAvg(),
		bytes: size, works: written}
}

// TestHubThroughput is the hub benchmark (make bench-hub; runs only with
// BENCH_HUB=1) over BENCH_FLEETSETS FleetSets (default 1000), each with
// BENCH_SUBSETS subsets (default min(BENCH_CLUSTERS, 20), at most 32) over
// BENCH_CLUSTERS ManagedClusters (default 20; FleetSet i's subset j in
// cluster (i+j) mod BENCH_CLUSTERS), on a real apiserver. It prints lines
// starting with "BENCH ", the first the command that reproduces the run.
//
// It runs BENCH_PAIRS (default 1) pairs of runs, each on fresh control
// planes, and prints each pair's ratio, their median and their maximum: the
// limit and the hub run one after the other on the same machine, so a pair
// shares the machine's state, and the pairs show how much it varies.
//
// First the limit: on a fresh control plane holding the same namespaces,
// ManagedClusters and FleetSets, the very ManifestWorks the hub would
// render there (its own plan, rollout and rendering code, from the
// FleetSets as that apiserver stored them), created by a plain client from
// N goroutines for each N in BENCH_LIMIT_PARALLELISM (default 8,32,128; 0
// skips), with the hub's client QPS and burst: the best N is the machine's
// limit.
//
// Then the hub (measureHub): the FleetSets are created first
// (create_fleetsets, not counted), then the hub is started and timed
// until every ManifestWork is written and every status is observed (an
// observer's watch, not polling lists), its API writes (non-GET requests,
// counted by a RoundTripper on the manager's rest.Config): exactly one per
// (FleetSet, subset) and one per FleetSet (status), events per FleetSet,
// and whether the hub's works, as its apiserver stored them, are the ones
// the limit's apiserver stored, field by field but for the owner's UID and
// the spec hash over it (compareWithLimit: it fails the test on any other
// difference, and prints what differs); after the last pair, writes during
// BENCH_STEADY_SECONDS (default 60) of steady state, where the target is 0
// besides lease renewals.
//
// The hub runs with cmd/hub's defaults; BENCH_QPS (burst twice that),
// BENCH_RECONCILES, BENCH_PARALLEL_WRITES and BENCH_UNOBSERVED_WRITES
// override them. Diagnostics:
// BENCH_PROGRESS=1 prints every 10 s the works seen, the works in the hub's
// cache (how far its watch lags) and the writes so far;
// BENCH_APISERVER_PROFILE=<file> writes CPU profiles of the apiserver, 10 s
// after the start, of BENCH_APISERVER_PROFILE_SECONDS (default 60)
// (<file>.limit<N>.<pair>, <file>.hub<pair>; with BENCH_PROGRESS);
// BENCH_HUB_PROFILE=<file> writes a CPU profile of the test process (the
// hub and the observer) from the hub's start until every work is seen
// (<file>.<pair>).
func TestHubThroughput(t *testing.T) {
	if os.Getenv("BENCH_HUB") == "" {
		t.Skip("benchmark: set BENCH_HUB=1 (make bench-hub)")
	}
	nFS := envInt(t, "BENCH_FLEETSETS", 1000)
	nC := envInt(t, "BENCH_CLUSTERS", 20)
	subsets := envInt(t, "BENCH_SUBSETS", min(nC, 20))
	if nC < 1 || subsets < 1 || subsets > min(nC, 32) {
		t.Fatalf("BENCH_CLUSTERS=%d BENCH_SUBSETS=%d: want 1 ≤ subsets ≤ min(clusters, 32) (spec.topology.subsets holds at most 32)", nC, subsets)
	}
	ns := "bench"
	clusters := benchClusters(nC)
	fleetSets := benchFleetSets(ns, nFS, subsets, clusters)
	wantWorks := nFS * subsets
	qps, burst := benchQPS(t)
	fmt.Printf("BENCH reproduce: BENCH_FLEETSETS=%d BENCH_CLUSTERS=%d BENCH_SUBSETS=%d BENCH_PAIRS=%d BENCH_LIMIT_PARALLELISM=%s BENCH_STEADY_SECONDS=%d make bench-hub\n",
		nFS, nC, subsets, envInt(t, "BENCH_PAIRS", 1), os.Getenv("BENCH_LIMIT_PARALLELISM"), envInt(t, "BENCH_STEADY_SECONDS", 60))

	pairs := envInt(t, "BENCH_PAIRS", 1)
	if pairs < 1 {
		t.Fatalf("BENCH_PAIRS=%d: want at least 1", pairs)
	}
	var ratios []float64
	for pair := 1; pair <= pairs; pair++ {
		var best *limitResult
		for _, p := range envInts(t, "BENCH_LIMIT_PARALLELISM", "8,32,128") {
			r := measureLimit(t, pair, p, subsets, ns, clusters, fleetSets)
			fmt.Printf("BENCH limit pair=%d client_qps=%.0f burst=%d parallel=%d clusters=%d manifestworks=%d bytes_per_manifestwork=%d seconds=%.2f manifestworks_per_s=%.0f writes=%d throttled=%d rate_limiter_wait=%.1fs %s\n",
				pair, qps, burst, r.parallel, nC, wantWorks, r.bytes/wantWorks, r.seconds, float64(wantWorks)/r.seconds, r.writes, r.throttled, r.limiterWait, r.load)
			if r.writes != wantWorks {
				t.Errorf("limit, parallel %d: %d writes, want %d", p, r.writes, wantWorks)
			}
			if best == nil || r.seconds < best.seconds {
				best = &r
			}
		}
		if best != nil {
			fmt.Printf("BENCH limit pair=%d best parallel=%d seconds=%.2f manifestworks_per_s=%.0f %s\n", pair, best.parallel, best.seconds, float64(wantWorks)/best.seconds, best.load)
		}
		// The rendered works (some 340 MB) are not the hub's to carry: they
		// are dead here (only the limit used them), so a collection now
		// frees them before the hub runs in this process.
		runtime.GC()
		hubSecs := measureHub(t, pair, subsets, ns, clusters, fleetSets, best, pair == pairs)
		if best != nil {
			ratios = append(ratios, hubSecs/best.seconds)
		}
	}
	printRatios(ratios)
}

// printRatios prints the hub ÷ limit ratio of every pair, their median and
// their maximum, as one BENCH line (none without ratios).
func printRatios(ratios []float64) {
	if len(ratios) == 0 {
		return
	}
	sorted := slices.Clone(ratios)
	slices.Sort(sorted)
	each := make([]string, len(ratios))
	for i, r := range ratios {
		each[i] = fmt.Sprintf("%.2f", r)
	}
	n := len(sorted)
	fmt.Printf("BENCH hub_vs_limit pairs=%d ratios=%s median=%.2fx max=%.2fx\n", n, strings.Join(each, ","), (sorted[(n-1)/2]+sorted[n/2])/2, sorted[n-1])
}

// hubRun is one timed run of the hub (runHub): what its report needs.
type hubRun struct {
	pair, nFS, nC, subsets, wantWorks int
	h                                 *hub
	cp                                *controlplane.Env
	obs                               *benchObserver
	// created is how long creating the FleetSets took (not counted);
	// allWorks and allStatus the times from the hub's start until every
	// work, every status was seen.
	created, allWorks, allStatus time.Duration
	worksLoad                    string
	// converged is the hub's writes once quiescent.
	converged map[string]int
	// before holds the controller's counters before the run.
	before                           map[string]float64
	reqBefore, cpuBefore, cpuAtWorks map[string]float64
	leaseDuration                    time.Duration
	// usedClusters is how many clusters host a subset: those hold a
	// resync lease.
	usedClusters int
}

// measureHub runs the hub on a fresh control plane holding the benchmark's
// namespaces and ManagedClusters: the FleetSets are created first
// (create_fleetsets, not counted), then the hub is started and timed until
// an observer saw every ManifestWork (the returned seconds) and every
// status. It checks the writes (one per (FleetSet, subset), one per
// FleetSet) and that every work, normalised, is the one the limit wrote
// (compareWithLimit); with last, it also watches BENCH_STEADY_SECONDS of
// steady state. best is the limit of the same pair (nil: none measured).
func measureHub(t *testing.T, pair, subsets int, ns string, clusters []string, fleetSets []*fleetv1.FleetSet, best *limitResult, last bool) float64 {
	t.Helper()
	ctx := context.Background()
	cp, setup, stop := benchControlPlane(t, "hub", ns, clusters)
	defer stop()
	used := map[string]bool{}
	for _, fs := range fleetSets {
		for _, sp := range fs.Spec.Topology.Subsets {
			used[sp.Cluster] = true
		}
	}
	r := &hubRun{pair: pair, nFS: len(fleetSets), nC: len(clusters), usedClusters: len(used), subsets: subsets, wantWorks: len(fleetSets) * subsets, cp: cp,
		leaseDuration: time.Duration(envInt(t, "BENCH_LEASE_SECONDS", fleetv1.DefaultResyncLeaseDurationSeconds)) * time.Second}
	r.obs = observe(t, cp.Config, ns, subsets)
	defer r.obs.cancel()
	start := time.Now()
	if err := createAll(ctx, setup, fleetSets, 16); err != nil {
		t.Fatal(err)
	}
	r.created = time.Since(start)
	runHub(t, r)
	defer r.h.stop()
	reportHub(t, r, best)
	if best != nil {
		same := compareWithLimit(t, ctx, setup, ns, best.works)
		fmt.Printf("BENCH hub pair=%d manifestworks_identical_to_limit=%d/%d (normalised: owner UID, spec hash)\n", pair, same, r.wantWorks)
	}
	if last {
		steadyState(t, r)
	}
	return r.allWorks.Seconds()
}

// runHub starts the hub on r.cp, with the FleetSets stored (the clock
// starts with the hub, as the limit's did with its writes: both find the
// FleetSets stored), and waits until r.obs saw every work and every status
// and the hub stopped writing; it fills in r. The caller stops r.h.
func runHub(t *testing.T, r *hubRun) {
	t.Helper()
	r.before = map[string]float64{
		"errors":     metricSum(t, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "fleetset"}),
		"retries":    metricSum(t, "workqueue_retries_total", map[string]string{"name": "fleetset"}),
		"reconciles": metricSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "fleetset"}),
	}
	r.reqBefore, r.cpuBefore = apiserverRequests(r.cp.Config), processCPU()
	stopProfile := startHubProfile(t, r.pair)
	defer stopProfile()
	start := time.Now()
	r.h = startHubOn(t, r.cp.Config, Options{HubIdentity: "test-hub", LeaseDuration: r.leaseDuration, MaxParallelWrites: envInt(t, "BENCH_PARALLEL_WRITES", DefaultMaxParallelWrites),
		MaxUnobservedWrites: envInt(t, "BENCH_UNOBSERVED_WRITES", DefaultMaxUnobservedWrites)})
	if os.Getenv("BENCH_PROGRESS") != "" {
		defer printProgress(r, start)()
	}
	r.obs.waitFor(t, 30*time.Minute, "every ManifestWork", func(w, _ int) bool { return w == r.wantWorks })
	r.allWorks = time.Since(start)
	r.cpuAtWorks = processCPU()
	stopProfile()
	r.worksLoad = loadAvg()
	r.obs.waitFor(t, 30*time.Minute, "every status", func(_, d int) bool { return d == r.nFS })
	r.allStatus = time.Since(start)
	// Quiescent: no write other than lease renewals for 3 s.
	last := r.h.writes.snapshot()
	for {
		time.Sleep(3 * time.Second)
		cur := r.h.writes.snapshot()
		if cur["work"] == last["work"] && cur["fleetset"] == last["fleetset"] && cur["other"] == last["other"] && cur["event"] == last["event"] {
			r.converged = cur
			return
		}
		last = cur
	}
}

// startHubProfile starts, with BENCH_HUB_PROFILE=<file>, a CPU profile of
// this process into <file>.<pair>, and returns what stops it (idempotent;
// nothing to stop without it).
func startHubProfile(t *testing.T, pair int) func() {
	t.Helper()
	f := os.Getenv("BENCH_HUB_PROFILE")
	if f == "" {
		return func() {}
	}
	out, err := os.Create(fmt.Sprintf("%s.%d", f, pair))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = out.Close()
		})
	}
}

// printProgress prints, every 10 s until the returned function is called,
// the works r.obs saw, the works in the hub's cache and its writes so far
// (BENCH_PROGRESS); with BENCH_APISERVER_PROFILE, it starts the
// apiserver's profile 10 s after start.
func printProgress(r *hubRun, start time.Time) func() {
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Second):
			}
			if f := os.Getenv("BENCH_APISERVER_PROFILE"); f != "" && time.Since(start) < 15*time.Second {
				go profileAPIServer(r.cp.Config, fmt.Sprintf("%s.hub%d", f, r.pair))
			}
			w, d := r.obs.counts()
			var cached workv1.ManifestWorkList
			_ = r.h.cache.List(context.Background(), &cached, client.UnsafeDisableDeepCopy)
			fmt.Printf("BENCH progress t=%.0fs works=%d hub_cached_works=%d statuses=%d writes=%v %s\n", time.Since(start).Seconds(), w, len(cached.Items), d, r.h.writes.snapshot(), loadAvg())
		}
	}()
	return func() { close(stop) }
}

// reportHub prints r's BENCH lines (times, ratio to best, writes, rate
// limiting, reconciles) and fails the test unless the hub wrote each work
// once and each FleetSet's status once.
func reportHub(t *testing.T, r *hubRun, best *limitResult) {
	t.Helper()
	qps, burst := benchQPS(t)
	printCPU(fmt.Sprintf("hub pair=%d", r.pair), r.cpuBefore, r.cpuAtWorks)
	printRequests(fmt.Sprintf("hub pair=%d", r.pair), r.reqBefore, apiserverRequests(r.cp.Config))
	ratio := ""
	if best != nil {
		ratio = fmt.Sprintf(" vs_limit=%.2fx", r.allWorks.Seconds()/best.seconds)
	}
	fmt.Printf("BENCH hub pair=%d client_qps=%.0f burst=%d reconciles=%d parallel_writes=%d unobserved_writes=%d fleetsets=%d clusters=%d subsets=%d manifestworks=%d create_fleetsets=%.2fs all_manifestworks=%.2fs all_status=%.2fs manifestworks_per_s=%.0f%s %s\n",
		r.pair, qps, burst, r.h.reconciles, envInt(t, "BENCH_PARALLEL_WRITES", DefaultMaxParallelWrites), envInt(t, "BENCH_UNOBSERVED_WRITES", DefaultMaxUnobservedWrites), r.nFS, r.nC, r.subsets, r.wantWorks,
		r.created.Seconds(), r.allWorks.Seconds(), r.allStatus.Seconds(), float64(r.wantWorks)/r.allWorks.Seconds(), ratio, r.worksLoad)
	c := r.converged
	hubWrites := c["work"] + c["fleetset"] + c["other"]
	fmt.Printf("BENCH hub pair=%d writes_per_fleetset=%.2f (ManifestWorks %d + identity 1 + status 1 = %d expected) writes_per_fleetset_subset=%.2f (1 expected) fleetset_writes_per_fleetset=%.2f (2 expected: identity, status) events_per_fleetset=%.2f conflicts=%d throttled=%d lease_writes=%d leader_writes=%d\n",
		r.pair, float64(hubWrites)/float64(r.nFS), r.subsets, r.subsets+2, float64(c["work"])/float64(r.wantWorks), float64(c["fleetset"])/float64(r.nFS),
		float64(c["event"])/float64(r.nFS), c["conflict"], c["throttled"], c["lease"], c["leader"])
	// What could hold the hub back besides the apiserver: its client-side
	// rate limiter, and the workqueue's rate limiter (it delays only
	// retries: errors and conflicts).
	fmt.Printf("BENCH hub pair=%d rate_limiter_wait=%.1fs manifestwork_watches=%d reconciles=%.0f reconcile_errors=%.0f workqueue_retries=%.0f\n", r.pair, r.h.limiter.seconds(), c["watch_manifestworks"],
		metricSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "fleetset"})-r.before["reconciles"],
		metricSum(t, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "fleetset"})-r.before["errors"],
		metricSum(t, "workqueue_retries_total", map[string]string{"name": "fleetset"})-r.before["retries"])
	if c["work"] != r.wantWorks {
		t.Errorf("%d ManifestWork writes, want exactly one per (FleetSet, subset): %d", c["work"], r.wantWorks)
	}
	// Two writes per new FleetSet: the owner identity (annotation
	// fleetset.io/identity, recordIdentity) and the status.
	if c["fleetset"] != 2*r.nFS {
		t.Errorf("%d FleetSet writes, want 2 per FleetSet (identity, status): %d", c["fleetset"], 2*r.nFS)
	}
}

// steadyState watches the hub of r for BENCH_STEADY_SECONDS (default 60)
// at rest, prints its writes, and fails the test on any besides lease
// renewals since it converged (the comparison with the limit included);
// the renewals it prints are those of the steady seconds.
func steadyState(t *testing.T, r *hubRun) {
	t.Helper()
	steady := time.Duration(envInt(t, "BENCH_STEADY_SECONDS", 60)) * time.Second
	c := r.converged
	hubWrites := c["work"] + c["fleetset"] + c["other"]
	c = maps.Clone(c)
	snap := r.h.writes.snapshot()
	c["lease"], c["lease_failed"] = snap["lease"], snap["lease_failed"]
	renewedBefore := metricSum(t, "fleetset_hub_resync_lease_renewals_total", nil)
	time.Sleep(steady)
	after := r.h.writes.snapshot()
	renewed := metricSum(t, "fleetset_hub_resync_lease_renewals_total", nil) - renewedBefore
	atRest := after["work"] + after["fleetset"] + after["other"] - hubWrites
	// Expected: one renewal per cluster that hosts a subset (only those
	// hold a lease) per third of the lease; a window cuts at most one
	// more per cluster.
	fmt.Printf("BENCH hub steady_seconds=%.0f writes_besides_leases=%d events=%d lease_requests=%d lease_requests_failed=%d lease_renewals=%.0f (lease %.0fs: %d clusters with a subset × %.1f renewals expected, of %d clusters) %s\n",
		steady.Seconds(), atRest, after["event"]-c["event"], after["lease"]-c["lease"], after["lease_failed"]-c["lease_failed"], renewed,
		r.leaseDuration.Seconds(), r.usedClusters, steady.Seconds()/(r.leaseDuration.Seconds()/3), r.nC, loadAvg())
	if atRest != 0 {
		t.Errorf("%d writes besides lease renewals in steady state, want 0", atRest)
	}
}

// restConfigFor returns cfg set up for a plain REST client.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	c.Timeout = 2 * time.Minute
	return c
}

// profileAPIServer writes a 60 s CPU profile of the apiserver of cfg to file
// (diagnostics: BENCH_APISERVER_PROFILE).
func profileAPIServer(cfg *rest.Config, file string) {
	rc, err := rest.RESTClientFor(restConfigFor(cfg))
	if err == nil {
		var b []byte
		secs := os.Getenv("BENCH_APISERVER_PROFILE_SECONDS")
		if secs == "" {
			secs = "60"
		}
		b, err = rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(file, b, 0o644)
		}
	}
	fmt.Println("BENCH progress apiserver profile:", file, err)
}

// metricSum returns the sum of counter family name in controller-runtime's
// metrics registry over the series whose labels include match.
func metricSum(t testing.TB, name string, match map[string]string) float64 {
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if have[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// apiserverRequests returns the apiserver's request counts
// (apiserver_request_total) by "VERB resource[/subresource]", and the
// watchers it closed for not keeping up (apiserver_terminated_watchers_total)
// by "TERMINATED_WATCH resource", and its 429 answers ("HTTP_429"), read from its
// /metrics through cfg; none when they cannot be read (diagnostics only).
func apiserverRequests(cfg *rest.Config) map[string]float64 {
	out := map[string]float64{}
	rc, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		return out
	}
	b, err := rc.Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return out
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return out
	}
	for _, m := range mfs["apiserver_terminated_watchers_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "resource" {
				out["TERMINATED_WATCH "+lp.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range mfs["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["code"] == "429" {
			out["HTTP_429"] += m.GetCounter().GetValue()
		}
		k := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			k += "/" + l["subresource"]
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out
}

// printRequests prints, as one BENCH line labelled what, the requests the
// apiserver served between before and after (apiserverRequests), by count.
func printRequests(what string, before, after map[string]float64) {
	type kv struct {
		k string
		n float64
	}
	var d []kv
	for k, v := range after {
		if n := v - before[k]; n >= 1 {
			d = append(d, kv{k, n})
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].n > d[j].n })
	var parts []string
	for _, x := range d {
		parts = append(parts, fmt.Sprintf("%s=%.0f", strings.ReplaceAll(x.k, " ", ":"), x.n))
	}
	fmt.Printf("BENCH %s apiserver_requests %s\n", what, strings.Join(parts, " "))
}

// processCPU returns the CPU seconds (user + system) used so far by this
// process ("test": the hub or the plain client, and the observer) and by
// its child processes, by command name (kube-apiserver, etcd), from
// /proc/<pid>/stat at 100 ticks per second; none where /proc cannot be read
// (diagnostics only).
func processCPU() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		comm, f := s[open+1:closing], strings.Fields(s[closing+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		switch {
		case pid == self:
			out["test"] += (utime + stime) / 100
		case ppid == self:
			out[comm] += (utime + stime) / 100
		}
	}
	return out
}

// printCPU prints, as one BENCH line labelled what, the CPU seconds each
// process used between before and after (processCPU).
func printCPU(what string, before, after map[string]float64) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		parts = append(parts, fmt.Sprintf("%s=%.1f", k, after[k]-before[k]))
	}
	fmt.Printf("BENCH %s cpu_seconds %s\n", what, strings.Join(parts, " "))
}
