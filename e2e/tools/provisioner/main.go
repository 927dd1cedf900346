// Command fleetset-local-provisioner is the dynamic volume provisioner of
// fleetset's test beds (the local fleet and the kind fleet), built on
// sigs.k8s.io/sig-storage-lib-external-provisioner.
//
// It provisions a hostPath PersistentVolume (<basePath>/<pv-name>, type
// DirectoryOrCreate) for each claim of a StorageClass whose provisioner is
// fleetset.io/local, once the scheduler has selected a node
// (WaitForFirstConsumer), with a node affinity to that node's
// topology.kubernetes.io/zone (StorageClass parameter pin: zone, the
// default) or to the zone and the node itself (pin: node); it acts as the
// external resizer of those volumes; and the library deletes a PV whose
// claim is gone when its reclaim policy is Delete.
//
// One process per cluster; it takes no leader lease. It serves nothing but
// an optional health and metrics endpoint on a loopback address
// (--health-bind-address).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller/metrics"
)

// DefaultName is the provisioner name of the fleetset-local StorageClass.
const DefaultName = "fleetset.io/local"

func main() {
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster; in-cluster configuration when empty")
	flag.StringVar(&o.name, "provisioner-name", DefaultName, "provisioner name the StorageClasses name")
	flag.StringVar(&o.healthAddr, "health-bind-address", "", "loopback host:port for /healthz, /readyz and /metrics; none when empty")
	flag.IntVar(&o.workers, "workers", 4, "claim and volume workers of the provisioner, and resize workers")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o); err != nil {
		klog.ErrorS(err, "fleetset-local-provisioner failed")
		klog.Flush()
		os.Exit(1)
	}
}

type options struct {
	kubeconfig string
	name       string
	healthAddr string
	workers    int
	// config, when set, is used instead of kubeconfig (tests).
	config *rest.Config
}

// run provisions, resizes and deletes volumes until ctx is done.
func run(ctx context.Context, o options) error {
	logger := klog.FromContext(ctx)
	cfg := o.config
	if cfg == nil {
		var err error
		if o.kubeconfig != "" {
			cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		} else {
			cfg, err = rest.InClusterConfig()
		}
		if err != nil {
			return fmt.Errorf("client configuration: %w", err)
		}
		cfg.UserAgent = "fleetset-local-provisioner"
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	var ln net.Listener
	if o.healthAddr != "" {
		if ln, err = listenLoopback(o.healthAddr); err != nil {
			return err
		}
	}

	// Informers shared by the library's controller and the resizer.
	factory := informers.NewSharedInformerFactory(client, 15*time.Minute)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	classes := factory.Storage().V1().StorageClasses()
	m := metrics.New("controller")
	pc := controller.NewProvisionController(ctx, client, o.name, &localProvisioner{client: client},
		controller.LeaderElection(false),
		controller.Threadiness(o.workers),
		controller.ClaimsInformer(claims.Informer()),
		controller.VolumesInformer(volumes.Informer()),
		controller.ClassesInformer(classes.Informer()),
		controller.MetricsInstance(m),
		// The first retry of a failed provisioning after 1 s, not 15.
		controller.RateLimiter(workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)})),
	)
	rz, err := newResizer(o.name, client, claims, volumes)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())

	var ready atomic.Bool
	done := make(chan struct{})
	if ln != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.PersistentVolumeClaimProvisionTotal, m.PersistentVolumeClaimProvisionFailedTotal,
			m.PersistentVolumeClaimProvisionDurationSeconds, m.PersistentVolumeDeleteTotal,
			m.PersistentVolumeDeleteFailedTotal, m.PersistentVolumeDeleteDurationSeconds)
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !ready.Load() {
				http.Error(w, "informers not synced", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "health server")
			}
		}()
		logger.Info("Serving health and metrics", "address", ln.Addr().String())
	}

	go func() { defer close(done); pc.Run(ctx) }()
	go rz.run(ctx, o.workers)
	if cache.WaitForNamedCacheSync("fleetset-local-provisioner", ctx.Done(),
		claims.Informer().HasSynced, volumes.Informer().HasSynced, classes.Informer().HasSynced) {
		ready.Store(true)
		logger.Info("Ready", "provisioner", o.name)
	}
	<-ctx.Done()
	<-done
	factory.Shutdown()
	return nil
}

// listenLoopback listens on addr, which must name a loopback IP address (or
// localhost): the test beds' servers bind 127.0.0.1 only.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--health-bind-address %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
		_, port, _ := net.SplitHostPort(addr)
		addr = net.JoinHostPort(host, port)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--health-bind-address %q: not a loopback address", addr)
	}
	return net.Listen("tcp", addr)
}
