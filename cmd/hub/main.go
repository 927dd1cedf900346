// Command fleetset-hub runs on an Open Cluster Management hub: it divides
// every FleetSet over its member clusters and domains, delivers one
// ManifestWork per (FleetSet, cluster) and one resync lease ManifestWork per
// cluster, and folds the members' status back into FleetSet.status.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/controller"
	"github.com/fleetset/fleetset/federation/failover"
)

// version is fleetset's version, set when linking:
// go build -ldflags "-X main.version=v1.2.3" (make build and make images set
// it from git describe).
var version = "v0.0.0-dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetset-hub:", err)
		os.Exit(1)
	}
}

// hubFlags are fleetset-hub's command-line flags.
type hubFlags struct {
	metricsAddr       string
	metricsSecure     bool
	metricsCertDir    string
	probeAddr         string
	leaderElect       bool
	leaderElectionNS  string
	hubIdentity       string
	leaseDuration     time.Duration
	relocationMargin  time.Duration
	kubeAPIQPS        float64
	kubeAPIBurst      int
	maxConcurrentRecs int
	maxParallelWrites int
	maxUnobserved     int
	reservedNS        []string
	printVersion      bool
	zap               zap.Options
}

// parseFlags binds and parses the command line.
func parseFlags() *hubFlags {
	f := &hubFlags{}
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "Address the Prometheus /metrics endpoint binds to; \"0\" disables it.")
	flag.BoolVar(&f.metricsSecure, "metrics-secure", false, "Serve /metrics over HTTPS (self-signed unless --metrics-cert-dir is set) and allow only callers that authenticate with a bearer token (TokenReview) and may get the /metrics non-resource URL (SubjectAccessReview), as kubebuilder projects do; for the pod network. Off for the loopback default.")
	flag.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "Directory with tls.crt and tls.key for the secure /metrics endpoint; empty: a self-signed certificate generated at start.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&f.leaderElect, "leader-elect", true, "Elect a leader (Lease fleetset-hub) so only one replica writes.")
	flag.StringVar(&f.leaderElectionNS, "leader-election-namespace", fleetv1.ResyncLeaseNamespace, "Namespace of the leader election Lease.")
	flag.StringVar(&f.hubIdentity, "hub-identity", "fleetset-hub", "holderIdentity of the resync Lease in every member cluster.")
	flag.DurationVar(&f.relocationMargin, "relocation-margin", fleetv1.RelocationMarginSeconds*time.Second, "Margin added to a lost member's fence deadline (its heartbeat timeout + fenceGraceSeconds + terminationGracePeriodSeconds, counted from the hub's own observation of its last heartbeat) before its subsets are relocated (failover policy Relocate).")
	flag.DurationVar(&f.relocationMargin, "lease-skew", fleetv1.RelocationMarginSeconds*time.Second, "Deprecated: use --relocation-margin.")
	flag.DurationVar(&f.leaseDuration, "lease-duration", fleetv1.DefaultResyncLeaseDurationSeconds*time.Second, "leaseDurationSeconds of the resync Lease (whole seconds, ≥ 3s); renewed every third of it while the cluster is Available.")
	flag.Float64Var(&f.kubeAPIQPS, "kube-api-qps", controller.DefaultKubeAPIQPS, "Client-side limit of queries per second to the hub's kube-apiserver (its priority and fairness still applies).")
	flag.IntVar(&f.kubeAPIBurst, "kube-api-burst", controller.DefaultKubeAPIBurst, "Burst of queries to the hub's kube-apiserver above --kube-api-qps.")
	flag.IntVar(&f.maxConcurrentRecs, "max-concurrent-reconciles", controller.DefaultMaxConcurrentReconciles, "Reconciles run in parallel per controller.")
	flag.IntVar(&f.maxParallelWrites, "max-parallel-work-writes", controller.DefaultMaxParallelWrites, "ManifestWork writes one FleetSet reconcile makes in parallel (at most this × --max-concurrent-reconciles in flight).")
	flag.IntVar(&f.maxUnobserved, "max-unobserved-work-writes", controller.DefaultMaxUnobservedWrites, "ManifestWork writes, over all reconciles, made or in flight that the hub's own cache has not seen yet; further writes wait. Keeps the hub's watch of ManifestWorks within what the apiserver buffers per watcher (100 events for a custom resource), so that a burst does not get it closed and replayed.")
	flag.Func("reserved-namespaces", "Comma-separated hub namespaces (a trailing * is a prefix) whose FleetSets are never delivered, besides kube-system, kube-public, kube-node-lease, fleetset-system and open-cluster-management*; may be repeated.", func(v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				f.reservedNS = append(f.reservedNS, n)
			}
		}
		return nil
	})
	flag.BoolVar(&f.printVersion, "version", false, "Print the version and exit.")
	f.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return f
}

func run() error {
	f := parseFlags()
	if f.printVersion {
		fmt.Println("fleetset-hub", version)
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	klog.SetLogger(ctrl.Log)
	logger := ctrl.Log.WithName("fleetset-hub")

	scheme, err := controller.NewScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.kubeAPIQPS), f.kubeAPIBurst
	cfg.UserAgent = "fleetset-hub"
	ctx := ctrl.SetupSignalHandler()
	mgr, err := newManager(ctx, cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         controller.CacheOptions(),
		Metrics:                       metricsOptions(f.metricsAddr, f.metricsSecure, f.metricsCertDir),
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "fleetset-hub",
		LeaderElectionNamespace:       f.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: f.maxConcurrentRecs},
		// Deprecated only for managers shorter-lived than their process;
		// the hub's lives as long as the process.
		EventBroadcaster: controller.NewEventBroadcaster(), //nolint:staticcheck
	}, logger)
	if err != nil {
		return err
	}
	if err := controller.Setup(ctx, mgr, controller.Options{HubIdentity: f.hubIdentity, LeaseDuration: f.leaseDuration, RelocationMargin: f.relocationMargin,
		MaxParallelWrites: f.maxParallelWrites, MaxUnobservedWrites: f.maxUnobserved,
		ReservedNamespaces: f.reservedNS}); err != nil {
		return err
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	if failover.UnsafeNoFence {
		logger.Info("WARNING: UNSAFE TEST BUILD (-tags fleetset_unsafe_nofence): lost clusters' subsets are relocated without waiting for their fence, so one identity can run in two clusters; never run this build outside the chaos run")
	}
	logger.Info("Starting", "version", version, "hubIdentity", f.hubIdentity, "leaseDuration", f.leaseDuration, "leaderElect", f.leaderElect)
	return mgr.Start(ctx)
}

// newManager creates the manager once the hub's kube-apiserver answers
// (waitForAPIServer), as kube-controller-manager waits rather than exit:
// the manager reads discovery when it is created. The apiserver may stop
// again before that read: a few more tries before giving up.
func newManager(ctx context.Context, cfg *rest.Config, opts ctrl.Options, logger logr.Logger) (ctrl.Manager, error) {
	if err := waitForAPIServer(ctx, cfg, apiServerRetry, logger); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		mgr, err := ctrl.NewManager(cfg, opts)
		if err == nil {
			return mgr, nil
		}
		if attempt == 5 || ctx.Err() != nil {
			return nil, fmt.Errorf("creating manager: %w", err)
		}
		logger.Info("Creating the manager failed; waiting for the hub's kube-apiserver again", "attempt", attempt, "error", err.Error())
		if err := waitForAPIServer(ctx, cfg, apiServerRetry, logger); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(apiServerRetry[0] << attempt):
		}
	}
}

// addProbes adds /healthz (a ping) and /readyz (the cache synced).
func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	})
}

// apiServerRetry is how often waitForAPIServer asks: after 1 s, then
// doubling, at most every 15 s.
var apiServerRetry = [2]time.Duration{time.Second, 15 * time.Second}

// waitForAPIServer returns once the kube-apiserver of cfg answers GET
// /readyz with 200 (open to every caller, as /version is; /version alone
// answers before the custom resources' discovery is served, and the
// manager then fails on ManifestWork's REST mapping), asking again after
// retry[0], doubling up to retry[1], and logging each failure; it returns
// an error naming the host if ctx ends first, and a client construction
// error at once.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, retry [2]time.Duration, logger logr.Logger) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	start, delay := time.Now(), retry[0]
	for {
		_, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		logger.Info("Waiting for the hub's kube-apiserver", "host", cfg.Host, "waited", time.Since(start).Round(time.Second).String(), "error", err.Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the hub's kube-apiserver at %s: %w (last error: %v)", cfg.Host, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, retry[1])
	}
}

// metricsOptions returns the /metrics server options: plain HTTP on addr, or,
// when secure, HTTPS with controller-runtime's authentication and
// authorization filter (a TokenReview of the caller's bearer token, then a
// SubjectAccessReview for get on the /metrics non-resource URL), with the
// certificate from certDir (tls.crt, tls.key) or a generated self-signed one
// when certDir is empty.
func metricsOptions(addr string, secure bool, certDir string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if secure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.CertDir = certDir
	}
	return o
}
