//go:build integration

package controller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

var (
	env       *controlplane.Env
	k8sClient client.Client
	scheme    *runtime.Scheme
)

func TestMain(m *testing.M) {
	// Logs go to stderr only when HUB_TEST_LOG is set.
	if os.Getenv("HUB_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	crds, err := controlplane.OCMCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, err = controlplane.Start(append([]string{"manifests/crds"}, crds...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if scheme, err = NewScheme(); err == nil {
		k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme})
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping control plane:", err)
	}
	os.Exit(code)
}

// hub is a fleetset-hub manager running in the test process.
type hub struct {
	cancel context.CancelFunc
	done   chan error
	// writes counts non-GET requests, by category (see countingTransport).
	writes *writeCounter
	// reconciles is the manager's MaxConcurrentReconciles.
	reconciles int
	// cache is the manager's cache.
	cache cache.Cache
	// limiter is the client-side rate limiter of the manager's clients.
	limiter *waitingLimiter
}

// startHub starts a manager with both controllers on the test apiserver;
// t.Cleanup stops it (stop may be called earlier).
func startHub(t testing.TB, leaseDuration time.Duration) *hub {
	t.Helper()
	return startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: leaseDuration})
}

// startHubWith is startHub with the given Options.
func startHubWith(t testing.TB, opts Options) *hub {
	t.Helper()
	return startHubOn(t, env.Config, opts)
}

// startHubOn is startHubWith on the apiserver of base.
func startHubOn(t testing.TB, base *rest.Config, opts Options) *hub {
	t.Helper()
	wc := &writeCounter{}
	cfg := rest.CopyConfig(base)
	// The hub's defaults (cmd/hub --kube-api-qps, --kube-api-burst,
	// --max-concurrent-reconciles), unless BENCH_QPS (burst twice that) or
	// BENCH_RECONCILES set them. The token bucket is shared by the manager's
	// clients (cmd/hub gives each client its own), so that the benchmark
	// can tell how long requests waited in it.
	limiter := newWaitingLimiter(benchQPS(t))
	cfg.RateLimiter = limiter
	reconciles := envInt(t, "BENCH_RECONCILES", DefaultMaxConcurrentReconciles)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, c: wc} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: reconciles},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := Setup(ctx, mgr, opts); err != nil {
		cancel()
		t.Fatal(err)
	}
	h := &hub{cancel: cancel, done: make(chan error, 1), writes: wc, reconciles: reconciles, cache: mgr.GetCache(), limiter: limiter}
	go func() { h.done <- mgr.Start(ctx) }()
	go applyTenantWorks(ctx, base)
	t.Cleanup(h.stop)
	return h
}

// heldTenants holds the namespaces whose tenant works applyTenantWorks
// leaves alone (a test stores the namespace, with value true).
var heldTenants sync.Map

// applyTenantWorks is the work agent's part for tenant works (there is no
// agent here): every 100 ms until ctx ends, it reports each tenant work on
// the apiserver of cfg Applied at its generation, except those of
// heldTenants and those some test reported already. Like a work agent it
// watches the works (an informer restricted to tenant works) instead of
// listing them from the apiserver: a LIST of every work ten times a second
// would load the apiserver the hub benchmark measures.
func applyTenantWorks(ctx context.Context, cfg *rest.Config) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	tenant, err := labels.NewRequirement(fleetv1.LabelTenant, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	works, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&workv1.ManifestWork{}: {Label: labels.NewSelector().Add(*tenant)},
	}})
	if err != nil {
		panic(err)
	}
	go func() { _ = works.Start(ctx) }()
	if !works.WaitForCacheSync(ctx) {
		return
	}
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var list workv1.ManifestWorkList
		if err := works.List(ctx, &list); err != nil {
			return false, nil
		}
		for i := range list.Items {
			w := &list.Items[i]
			if _, held := heldTenants.Load(w.Labels[fleetv1.LabelTenant]); held || apimeta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied) != nil &&
				apimeta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied).ObservedGeneration == w.Generation {
				continue
			}
			apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
				Reason: "AppliedManifestWorkComplete", Message: "applied by the test", ObservedGeneration: w.Generation})
			_ = c.Status().Update(ctx, w)
		}
		return false, nil
	})
}

// stop stops the manager and waits for it; it may be called twice.
func (h *hub) stop() {
	h.cancel()
	if h.done != nil {
		<-h.done
		h.done = nil
	}
}

// waitingLimiter is client-go's token bucket rate limiter that adds up how
// long requests waited in it.
type waitingLimiter struct {
	flowcontrol.RateLimiter
	waited atomic.Int64 // nanoseconds
}

// newWaitingLimiter returns a waitingLimiter of qps and burst.
func newWaitingLimiter(qps float32, burst int) *waitingLimiter {
	return &waitingLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// Wait waits for a token, as the token bucket does, and counts the time.
func (l *waitingLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	l.waited.Add(int64(time.Since(start)))
	return err
}

// Accept takes a token, as the token bucket does, and counts the time.
func (l *waitingLimiter) Accept() {
	start := time.Now()
	l.RateLimiter.Accept()
	l.waited.Add(int64(time.Since(start)))
}

// seconds returns the time requests waited so far.
func (l *waitingLimiter) seconds() float64 { return time.Duration(l.waited.Load()).Seconds() }

// writeCounter counts API writes by category.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int
	total  atomic.Int64
}

// add counts one write of category cat.
func (w *writeCounter) add(cat string) {
	w.note(cat)
	w.total.Add(1)
}

// note counts one occurrence of cat that is not a write of its own (a
// throttled request, or a write that conflicted, already counted).
func (w *writeCounter) note(cat string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[string]int{}
	}
	w.counts[cat]++
}

// snapshot returns a copy of the counts.
func (w *writeCounter) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// countingTransport counts every request that is not a GET (reads, lists and
// watches are GETs; a watch of ManifestWorks is noted as
// "watch_manifestworks", a GET or LIST of a resource as "read_<resource>"): "lease" for the resync lease ManifestWork, "event" for
// Events, "leader" for leader election, "tenant" for the tenant works,
// "work" for the FleetSets' ManifestWorks, "fleetset" for FleetSets (update, status), else "other".
// A request the apiserver throttles (429, retried by client-go) counts as
// "throttled" instead; a 409 (conflict, already exists) counts as a write
// and as "conflict"; a resync lease write that failed otherwise also as
// "lease_failed".
type countingTransport struct {
	next http.RoundTripper
	c    *writeCounter
}

// readResource returns the resource a GET of an API path reads (the plural
// after "namespaces/<ns>/" or after the group version), false for a path
// outside /api and /apis.
func readResource(path string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts[0], true
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		if r.URL.Query().Get("watch") == "true" {
			if strings.HasSuffix(r.URL.Path, "/manifestworks") {
				t.c.note("watch_manifestworks")
			}
		} else if res, ok := readResource(r.URL.Path); ok {
			t.c.note("read_" + res)
		}
		return t.next.RoundTrip(r)
	}
	var cat string
	switch p := r.URL.Path; {
	case strings.Contains(p, "/manifestworks/fleetset-resync") || (r.Method == http.MethodPost && strings.HasSuffix(p, "/manifestworks") && isResyncCreate(r)):
		cat = "lease"
	case strings.Contains(p, "/manifestworks/"+fleetv1.TenantWorkPrefix) || (r.Method == http.MethodPost && strings.HasSuffix(p, "/manifestworks") && bodyContains(r, `"`+fleetv1.LabelTenant+`"`)):
		cat = "tenant"
	case strings.Contains(p, "/events"):
		cat = "event"
	case strings.Contains(p, "/leases"):
		cat = "leader"
	case strings.Contains(p, "/manifestworks"):
		cat = "work"
	case strings.Contains(p, "/fleetsets"):
		cat = "fleetset"
	default:
		cat = "other"
	}
	resp, err := t.next.RoundTrip(r)
	switch {
	case err == nil && resp.StatusCode == http.StatusTooManyRequests:
		t.c.note("throttled")
	case err == nil && resp.StatusCode == http.StatusConflict:
		t.c.add(cat)
		t.c.note("conflict")
	default:
		t.c.add(cat)
		if cat == "lease" && (err != nil || resp.StatusCode >= 300) {
			// A resync lease write that failed (timeout, server error):
			// counted as a request, not a renewal.
			t.c.note("lease_failed")
		}
	}
	return resp, err
}

// isResyncCreate tells a POST of the resync work from other ManifestWork
// creations by a copy of the request body.
func isResyncCreate(r *http.Request) bool { return bodyContains(r, `"name":"fleetset-resync"`) }

// bodyContains reports whether the first 4 KiB of a copy of r's body hold s.
func bodyContains(r *http.Request, s string) bool {
	if r.GetBody == nil {
		return false
	}
	b, err := r.GetBody()
	if err != nil {
		return false
	}
	defer b.Close()
	buf := make([]byte, 4096)
	n, _ := b.Read(buf)
	return strings.Contains(string(buf[:n]), s)
}

// eventually polls cond every 100 ms until it returns true or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
	}
}

// createNamespace creates a namespace (a ManagedCluster's, or a FleetSet's).
func createNamespace(t testing.TB, name string) {
	t.Helper()
	err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Every cluster is in the set "global"; FleetSets in the namespace may
	// reach them all.
	if err := controlplane.BindClusterSet(context.Background(), k8sClient, name, controlplane.GlobalClusterSet); err != nil {
		t.Fatal(err)
	}
}

// createCluster creates a ManagedCluster and its namespace, Available as given.
func createCluster(t testing.TB, name string, available bool) {
	t.Helper()
	createNamespace(t, name)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if err := k8sClient.Create(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
	setAvailable(t, name, available)
}

// setAvailable sets the ManagedClusterConditionAvailable condition.
func setAvailable(t testing.TB, name string, available bool) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	s, reason := metav1.ConditionTrue, "ManagedClusterAvailable"
	if !available {
		s, reason = metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped"
	}
	apimeta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: s, Reason: reason, Message: "set by test"})
	if err := k8sClient.Status().Update(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
}

// deleteCluster deletes a ManagedCluster (its namespace stays: envtest has
// no namespace controller).
func deleteCluster(t testing.TB, name string) {
	t.Helper()
	if err := k8sClient.Delete(context.Background(), &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// works returns the ManifestWorks owned by FleetSet ns/name, by cluster,
// without fleet DNS works (allWorks lists those too).
func works(t testing.TB, ns, name string) map[string]*workv1.ManifestWork {
	t.Helper()
	var list workv1.ManifestWorkList
	if err := k8sClient.List(context.Background(), &list, client.MatchingLabels{"fleetset.io/owner-namespace": ns, "fleetset.io/owner-name": name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*workv1.ManifestWork{}
	for i := range list.Items {
		w := &list.Items[i]
		if manifestwork.IsFleetDNSWork(w) {
			continue
		}
		if _, dup := out[w.Namespace]; dup {
			t.Fatalf("two ManifestWorks of %s/%s in cluster %s", ns, name, w.Namespace)
		}
		out[w.Namespace] = w
	}
	return out
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
