// Command fleetset-hub runs on an Open Cluster Management hub: it divides
// every FleetSet over its member clusters and domains, delivers one
// ManifestWork per (FleetSet, cluster) and one resync lease ManifestWork per
// cluster, and folds the members' status back into FleetSet.status.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/controller"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetset-hub:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr       string
		probeAddr         string
		leaderElect       bool
		leaderElectionNS  string
		hubIdentity       string
		leaseDuration     time.Duration
		leaseSkew         time.Duration
		kubeAPIQPS        float64
		kubeAPIBurst      int
		maxConcurrentRecs int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "Address the Prometheus /metrics endpoint binds to; \"0\" disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader (Lease fleetset-hub) so only one replica writes.")
	flag.StringVar(&leaderElectionNS, "leader-election-namespace", fleetv1.ResyncLeaseNamespace, "Namespace of the leader election Lease.")
	flag.StringVar(&hubIdentity, "hub-identity", "fleetset-hub", "holderIdentity of the resync Lease in every member cluster.")
	flag.DurationVar(&leaseSkew, "lease-skew", 10*time.Second, "clock-skew margin added to a lost cluster's resync lease expiry before its subsets are relocated (failover policy Relocate).")
	flag.DurationVar(&leaseDuration, "lease-duration", fleetv1.DefaultResyncLeaseDurationSeconds*time.Second, "leaseDurationSeconds of the resync Lease (whole seconds, ≥ 3s); renewed every third of it while the cluster is Available.")
	flag.Float64Var(&kubeAPIQPS, "kube-api-qps", 50, "Queries per second to the hub's kube-apiserver.")
	flag.IntVar(&kubeAPIBurst, "kube-api-burst", 100, "Burst of queries to the hub's kube-apiserver.")
	flag.IntVar(&maxConcurrentRecs, "max-concurrent-reconciles", 4, "Reconciles run in parallel per controller.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
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
	cfg.QPS, cfg.Burst = float32(kubeAPIQPS), kubeAPIBurst
	cfg.UserAgent = "fleetset-hub"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         controller.CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "fleetset-hub",
		LeaderElectionNamespace:       leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{MaxConcurrentReconciles: maxConcurrentRecs},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controller.Setup(ctx, mgr, controller.Options{HubIdentity: hubIdentity, LeaseDuration: leaseDuration, LeaseSkew: leaseSkew}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	logger.Info("Starting", "hubIdentity", hubIdentity, "leaseDuration", leaseDuration, "leaderElect", leaderElect)
	return mgr.Start(ctx)
}
