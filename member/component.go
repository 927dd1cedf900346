package member

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
	"github.com/fleetset/fleetset/member/claims"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/endpoints"
	"github.com/fleetset/fleetset/member/fence"
	"github.com/fleetset/fleetset/member/internal/wiring"
	"github.com/fleetset/fleetset/member/membership"
	"github.com/fleetset/fleetset/member/peers"
	"github.com/fleetset/fleetset/member/roles"
	"github.com/fleetset/fleetset/member/updater"
)

// Config configures the member component of one process.
type Config struct {
	// Cluster is the ManagedCluster's name.
	Cluster string
	// HubKubeconfig is the path of the kubeconfig with the add-on's hub
	// credentials; "" disables the member component (no heartbeat, no
	// fencing: a placement with spec.fencing is scheduled as any other, and
	// the hub, seeing no heartbeat, never relocates its subset).
	HubKubeconfig string
	// HeartbeatTimeout is how long without reaching the hub makes the member
	// lost; heartbeats are sent every third of it.
	HeartbeatTimeout time.Duration
	// PeerBindAddress is where the peer endpoint listens (host:port); ""
	// serves none.
	PeerBindAddress string
	// PeerURL is the URL other members use to reach the peer endpoint; the
	// heartbeat advertises it.
	PeerURL string
	// PeerCertDir holds tls.crt and tls.key, the peer certificate OCM's
	// add-on manager signed for this member (CustomSigner
	// peers.SignerName, mounted at peers.CertDir). Without it (and without
	// PeerInsecure) the member serves no peer endpoint and asks no peer:
	// it knows no peer, so it never fences on hub silence.
	PeerCertDir string
	// PeerCAFile is a PEM file of the fleet peer CA; "" reads it from the
	// hub (ConfigMap peers.CANamespace/peers.CAConfigMapName) and keeps
	// the last one read.
	PeerCAFile string
	// PeerInsecure serves and asks peers over plain HTTP, unauthenticated:
	// tests only.
	PeerInsecure bool
	// ClaimExpansion runs the claim expansion controller (package
	// member/claims), with or without a hub kubeconfig.
	ClaimExpansion bool
	// ClaimResync is the time between the claim expansion controller's
	// passes over every placement with claimStorage.
	ClaimResync time.Duration
	// Roles runs the role controller (package member/roles): role probes,
	// role labels and the roles in SubsetPlacements' status, with or without
	// a hub kubeconfig.
	Roles bool
	// RoleUpdates runs the role-ordered update controller (package
	// member/updater): it replaces the outdated pods of the StatefulSets of
	// SubsetPlacements with spec.update, by role, with or without a hub
	// kubeconfig.
	RoleUpdates bool
	// LeaderElect elects, among the scheduler's replicas, the one that runs
	// the claims, roles and updater controllers (Lease
	// MemberControllersLeaseName); false runs them in every replica.
	LeaderElect bool
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go leader
	// election's durations for that Lease.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity is this process's leader-election identity; "" is
	// <hostname>_<random UUID>, as kube-scheduler's.
	Identity string
	// FleetDNS publishes this member's instances to the hub for fleet DNS
	// (package member/endpoints; api/v1alpha1/fleetdns.go), in the leader,
	// when there is a hub kubeconfig.
	FleetDNS bool
	// FleetDNSResync is how often every FleetSet's report is written again
	// whether or not a pod changed.
	FleetDNSResync time.Duration
	// Actions runs the lifecycle action controller (package
	// member/membership: memberJoin, memberLeave, rolloutComplete); the
	// role probe and switchover actions run with Roles and RoleUpdates.
	Actions bool
	// ClusterDomain is the member cluster's DNS domain, which ends the
	// fleet DNS names in lifecycle actions' environment.
	ClusterDomain string
}

// DefaultConfig returns the defaults of the --member-* flags.
func DefaultConfig() Config {
	return Config{HeartbeatTimeout: fleetv1.DefaultHeartbeatTimeoutSeconds * time.Second, ClaimExpansion: true, ClaimResync: claims.DefaultResync,
		Roles: true, RoleUpdates: true, Actions: true, ClusterDomain: fleetv1.DefaultClusterDomain, LeaderElect: true, FleetDNS: true, FleetDNSResync: time.Minute, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// AddFlags adds the member component's --member-* flags to fs, writing
// into c.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Cluster, "member-cluster-name", c.Cluster, "Name of this member's ManagedCluster on the hub (the add-on's {{CLUSTER_NAME}}).")
	fs.StringVar(&c.HubKubeconfig, "member-hub-kubeconfig", c.HubKubeconfig, "Kubeconfig with the fleetset add-on's hub credentials (the add-on's {{HUB_KUBECONFIG}}). Empty: no heartbeat and no fencing.")
	fs.DurationVar(&c.HeartbeatTimeout, "member-heartbeat-timeout", c.HeartbeatTimeout, "Time without reaching the hub after which this member is lost; heartbeats go every third of it.")
	fs.StringVar(&c.PeerBindAddress, "member-peer-bind-address", c.PeerBindAddress, "host:port of the peer endpoint other members ask whether this one reaches the hub. Empty: none.")
	fs.StringVar(&c.PeerURL, "member-peer-url", c.PeerURL, "URL at which other members reach the peer endpoint (advertised in the heartbeat): https://<address>:<port>.")
	fs.StringVar(&c.PeerCertDir, "member-peer-cert-dir", c.PeerCertDir, "Directory of tls.crt and tls.key, the peer certificate OCM signed for this member (add-on: "+peers.CertDir+", CustomSigner "+peers.SignerName+"). Peers are served and asked over mutual TLS only; without it (and without --member-peer-insecure) the member serves no peer endpoint, asks no peer and so never fences on hub silence.")
	fs.StringVar(&c.PeerCAFile, "member-peer-ca-file", c.PeerCAFile, "PEM file of the fleet peer CA that signs the peers' certificates. Empty: read from the hub, ConfigMap "+peers.CANamespace+"/"+peers.CAConfigMapName+" key "+peers.CAConfigMapKey+", and kept while the hub is lost.")
	fs.BoolVar(&c.PeerInsecure, "member-peer-insecure", c.PeerInsecure, "Serve and ask peers over plain HTTP, unauthenticated. For tests only: anyone who reaches the endpoint, or sits between members, can make a member fence or hold.")
	fs.BoolVar(&c.ClaimExpansion, "member-claim-expansion", c.ClaimExpansion, "Expand the claims of a delivered StatefulSet to its SubsetPlacement's spec.claimStorage and delete the StatefulSet (orphaning its pods) for the work agent to re-create it with the larger claim templates. Runs with or without --member-hub-kubeconfig.")
	fs.BoolVar(&c.Roles, "member-roles", c.Roles, "Detect the roles of the instances of SubsetPlacements with spec.roles (their role probe, or the label fleetset.io/role their workload sets), label the pods with them and write them into the placements' status. Runs with or without --member-hub-kubeconfig.")
	fs.BoolVar(&c.RoleUpdates, "member-role-updates", c.RoleUpdates, "In a role-ordered rollout (a SubsetPlacement with spec.update and spec.roles, its StatefulSet on OnDelete), delete the StatefulSet's outdated pods by role, lowest updatePriority first, then the highest ordinal, within spec.update.maxUnavailable, and the leader only as spec.update.leader says (annotating it fleetset.io/switchover-requested for Switchover). Runs with or without --member-hub-kubeconfig.")
	fs.DurationVar(&c.ClaimResync, "member-claim-resync", c.ClaimResync, "Time between the claim expansion controller's passes over every placement with claimStorage (a refused or pending expansion is retried at that pace).")
	fs.BoolVar(&c.LeaderElect, "member-leader-elect", c.LeaderElect, "Run the claims, roles and updater controllers only in the replica that holds the Lease fleetset-system/"+fleetv1.MemberControllersLeaseName+". Heartbeat, peer endpoint and fencing run in every replica.")
	fs.DurationVar(&c.LeaseDuration, "member-leader-elect-lease-duration", c.LeaseDuration, "Leader election lease duration of the member controllers.")
	fs.DurationVar(&c.RenewDeadline, "member-leader-elect-renew-deadline", c.RenewDeadline, "Leader election renew deadline of the member controllers.")
	fs.DurationVar(&c.RetryPeriod, "member-leader-elect-retry-period", c.RetryPeriod, "Leader election retry period of the member controllers.")
	fs.BoolVar(&c.FleetDNS, "member-fleet-dns", c.FleetDNS, "Publish this member's instances (hostname, IP, serving and terminating, as the EndpointSlice controller lists them for the governing Service) to the hub, which delivers them to the other members as EndpointSlices of the governing Service: every instance's name <pod>.<service>.<namespace>.svc resolves in every member. Needs --member-hub-kubeconfig; runs in the leader.")
	fs.BoolVar(&c.Actions, "member-lifecycle-actions", c.Actions, "Run the FleetSets' memberJoin, memberLeave and rolloutComplete lifecycle actions in the instances of their SubsetPlacements (through pods/exec or HTTP), set the readiness gate fleetset.io/member-joined and report leaves to the hub. Runs with or without --member-hub-kubeconfig.")
	fs.StringVar(&c.ClusterDomain, "member-cluster-domain", c.ClusterDomain, "DNS domain of this member cluster: lifecycle actions get fleet DNS names <pod>.<service>.<namespace>.svc.<domain>.")
	fs.DurationVar(&c.FleetDNSResync, "member-fleet-dns-resync", c.FleetDNSResync, "Time between full passes of the fleet DNS publisher, which write every report again if the hub's copy differs.")
}

// validate reports the first bad setting of c, by flag name.
func (c *Config) validate(host Host) error {
	if c.Roles || c.Actions {
		if _, ok := host.Writer.(client.StatusClient); !ok || host.Writer == nil {
			return fmt.Errorf("--member-roles, --member-lifecycle-actions: the SubsetPlacement writer %T cannot write the status subresource", host.Writer)
		}
	}
	if c.HubKubeconfig == "" {
		return nil
	}
	if c.Cluster == "" {
		return errors.New("--member-cluster-name is required with --member-hub-kubeconfig")
	}
	if c.HeartbeatTimeout < 3*time.Second {
		return fmt.Errorf("--member-heartbeat-timeout %s is below 3s", c.HeartbeatTimeout)
	}
	if c.PeerInsecure && c.PeerCertDir != "" {
		return errors.New("--member-peer-insecure and --member-peer-cert-dir exclude each other")
	}
	return nil
}

// Gate is what the scheduler plugins ask of the member component.
type Gate interface {
	// Allows reports whether the pods of sp may be scheduled now, and why not.
	Allows(sp *fleetv1.SubsetPlacement) (bool, string)
	// OnChange registers fn to run when Allows may have changed.
	OnChange(fn func())
}

// Host is what the scheduler lends the member component: its pod informer
// (started by the scheduler), its clientset, and the SubsetPlacement cache
// and writer its plugins share.
type Host struct {
	Pods       coreinformers.PodInformer
	Client     kubernetes.Interface
	Placements client.Reader
	Writer     client.Writer
	// RestConfig is the scheduler's member cluster config, for pods/exec
	// (lifecycle actions); nil with no ActionExecutor: exec actions are
	// refused.
	RestConfig *rest.Config
	// ActionExecutor runs exec actions; nil: pods/exec over RestConfig.
	ActionExecutor actions.Executor
}

// Component is the member side of one fleetset-scheduler process: heartbeat,
// peer endpoint and fencing in every replica, and the claims, roles and
// updater controllers in the elected one. cmd/scheduler builds it; the
// SubsetPlacement plugin starts it (Start) once the scheduler's informers
// exist.
type Component struct {
	cfg *Config

	mu      sync.Mutex
	started bool
	gate    Gate
	err     error
}

// New returns a Component configured by *cfg as it is when Start first runs
// (cmd/scheduler parses the flags in between).
func New(cfg *Config) *Component { return &Component{cfg: cfg} }

// Start starts the component over host the first time it is called, and
// returns its Gate: nil when cfg.HubKubeconfig is empty (nothing is fenced;
// the controllers run all the same unless disabled). Later calls return the
// first call's result. Errors are a bad configuration (named by flag), a bad
// hub kubeconfig, or a peer address that cannot be bound.
func (m *Component) Start(ctx context.Context, host Host) (Gate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		m.started = true
		m.gate, m.err = m.start(klog.NewContext(ctx, klog.FromContext(ctx).WithName("member")), host)
	}
	return m.gate, m.err
}

func (m *Component) start(ctx context.Context, host Host) (Gate, error) {
	cfg := *m.cfg
	if err := cfg.validate(host); err != nil {
		return nil, err
	}
	if cfg.HubKubeconfig == "" {
		klog.FromContext(ctx).Info("No --member-hub-kubeconfig: the member sends no heartbeat and fences nothing; the hub relocates none of its subsets")
		return nil, startControllers(ctx, cfg, host, nil)
	}
	g, err := startFencing(ctx, cfg, host)
	if err != nil {
		return nil, err
	}
	inContact := func() (bool, string) {
		v, _ := g.Current()
		return v.State == fence.InContact, v.Reason
	}
	return g, startControllers(ctx, cfg, host, inContact)
}

// startControllers starts the enabled member controllers over one
// StatefulSet informer and one event broadcaster, under leader election
// when cfg.LeaderElect; inContact (nil: no hub) gates what must wait for
// the hub.
func startControllers(ctx context.Context, cfg Config, host Host, inContact func() (bool, string)) error {
	if !cfg.ClaimExpansion && !cfg.Roles && !cfg.RoleUpdates && !cfg.Actions && !(cfg.FleetDNS && cfg.HubKubeconfig != "") {
		return nil
	}
	factory := wiring.NewStatefulSetFactory(host.Client)
	broadcaster, recorder, err := wiring.NewRecorder(host.Client)
	if err != nil {
		return err
	}
	d := wiring.Deps{Client: host.Client, Pods: host.Pods, StatefulSets: factory.Apps().V1().StatefulSets(),
		Placements: host.Placements, Writer: host.Writer, Recorder: recorder, InContact: inContact, ClusterDomain: cfg.ClusterDomain}
	exec := host.ActionExecutor
	if exec == nil && host.RestConfig != nil {
		if exec, err = actions.NewRemoteExecutor(host.RestConfig); err != nil {
			return fmt.Errorf("pods/exec client: %w", err)
		}
	}
	d.Actions = actions.NewRunner(exec)
	if cfg.FleetDNS && cfg.HubKubeconfig != "" {
		if d.Hub, err = hubClient(cfg.HubKubeconfig, 10*time.Second); err != nil {
			return err
		}
	}
	d.StatefulSets.Informer() // registered before the factory starts
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	run := func(ctx context.Context) { runControllers(ctx, cfg, d) }
	if !cfg.LeaderElect {
		go run(ctx)
		return nil
	}
	lec, err := electionConfig(cfg, host.Client)
	if err != nil {
		return err
	}
	go elect(ctx, lec, run)
	return nil
}

// runControllers runs the enabled controllers over d until ctx is done.
func runControllers(ctx context.Context, cfg Config, d wiring.Deps) {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	start := func(name string, on bool, run func(context.Context) error) {
		if !on {
			return
		}
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Member controller stopped", "controller", name)
			}
		})
	}
	start("claims", cfg.ClaimExpansion, func(ctx context.Context) error { return claims.Run(ctx, d, cfg.ClaimResync) })
	start("roles", cfg.Roles, func(ctx context.Context) error { return roles.Run(ctx, d) })
	start("updater", cfg.RoleUpdates, func(ctx context.Context) error { return updater.Run(ctx, d) })
	start("membership", cfg.Actions, func(ctx context.Context) error { return membership.Run(ctx, d) })
	start("fleet-dns", d.Hub != nil, func(ctx context.Context) error {
		return endpoints.Run(ctx, d, d.Hub, cfg.Cluster, cfg.FleetDNSResync)
	})
	wg.Wait()
}

// electionConfig is client-go leader election on the Lease
// MemberControllersLeaseName, with an identity unique to this process.
func electionConfig(cfg Config, cs kubernetes.Interface) (leaderelection.LeaderElectionConfig, error) {
	identity := cfg.Identity
	if identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return leaderelection.LeaderElectionConfig{}, err
		}
		identity = host + "_" + string(uuid.NewUUID())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.MemberControllersLeaseName},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	return leaderelection.LeaderElectionConfig{Lock: lock, Name: fleetv1.MemberControllersLeaseName, ReleaseOnCancel: true,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod}, nil
}

// elect runs leader terms until ctx is done: run runs while this process
// holds the Lease, and a term ends only after run has returned (its
// handlers removed), so two terms never overlap.
func elect(ctx context.Context, lec leaderelection.LeaderElectionConfig, run func(context.Context)) {
	logger := klog.FromContext(ctx)
	identity := lec.Lock.Identity()
	for ctx.Err() == nil {
		done := make(chan struct{})
		lec.Callbacks = leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				defer close(done)
				logger.Info("Leading the member controllers", "lease", lec.Name, "identity", identity)
				run(ctx)
			},
			OnStoppedLeading: func() {},
		}
		le, err := leaderelection.NewLeaderElector(lec)
		if err != nil {
			logger.Error(err, "Member controllers' leader election")
			return
		}
		le.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		// Run returns with ctx live only after it held the Lease and lost it.
		<-done
		logger.Info("Stopped leading the member controllers", "lease", lec.Name, "identity", identity)
	}
}

// startFencing starts the heartbeat, the peer endpoint and the Fencer of
// cfg over host, and returns the Guard, the Gate.
func startFencing(ctx context.Context, cfg Config, host Host) (*fence.Guard, error) {
	logger := klog.FromContext(ctx)
	hubCfg, err := clientcmd.BuildConfigFromFlags("", cfg.HubKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", cfg.HubKubeconfig, err)
	}
	period := cfg.HeartbeatTimeout / 3
	hubCfg = dedicatedHubConfig(hubCfg, hubRequestTimeout(period))
	hubCS, err := newHubClient(hubCfg, hubRequestTimeout(period))
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := workv1.Install(scheme); err != nil {
		return nil, err
	}
	hubC, err := client.New(hubCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	clk := clock.RealClock{}
	mon := contact.NewMonitor(clk, cfg.HeartbeatTimeout)
	clients, serverTLS, err := peerTLS(ctx, cfg, hubCS, host.Client)
	if err != nil {
		return nil, err
	}
	if clients == nil {
		cfg.PeerURL = ""
	} else if err := servePeers(ctx, cfg, mon, serverTLS); err != nil {
		return nil, err
	}
	g := &fence.Guard{
		Monitor: mon, Clock: clk, PeerPoll: fleetv1.FenceConfirmation(cfg.HeartbeatTimeout), FrozenAfter: cfg.HeartbeatTimeout,
		Peers: func(ctx context.Context) (peers.URLs, error) {
			if clients == nil {
				return peers.URLs{}, nil // no certificate: no peer, never fence on hub silence
			}
			return peerURLs(ctx, host.Client, cfg.Cluster)
		},
		Ask: func(ctx context.Context, p peers.URLs) []peers.Result {
			return peers.Ask(ctx, clients, p, min(2*time.Second, period))
		},
	}
	g.Epochs = &fence.Epochs{Client: host.Client}
	if err := g.Epochs.Load(ctx); err != nil {
		// Loaded again at the Fencer's first sweep; until then nothing
		// is recorded or refused.
		logger.Error(err, "Reading the member's record of placement epochs")
	}
	broadcaster, recorder, err := wiring.NewRecorder(host.Client)
	if err != nil {
		return nil, err
	}
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("fencer events: %w", err)
	}
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	f := &fence.Fencer{Guard: g, Recorder: recorder, Placements: host.Placements, Writer: host.Writer, Pods: host.Pods.Lister(), Client: host.Client,
		Confirm: func(ctx context.Context, sp *fleetv1.SubsetPlacement, e int64, returned time.Time) (bool, error) {
			return confirm(ctx, hubC, cfg.Cluster, sp, e, returned)
		},
		ConfirmAfter: period, ConfirmTimeout: hubRequestTimeout(period), Clock: clk, Interval: time.Second}
	identity, _ := os.Hostname()
	hb := &contact.Heartbeat{Cluster: cfg.Cluster, Identity: identity, PeerURL: cfg.PeerURL, Hub: hubCS.CoordinationV1(),
		Local: host.Client.CoordinationV1(), Monitor: mon, Clock: clk, Period: period,
		Report: reportWith(g, f), Restored: g.Restore}

	go hb.Run(ctx)
	go f.Run(ctx, host.Pods.Informer().HasSynced)
	logger.Info("Member component started", "cluster", cfg.Cluster, "heartbeatTimeout", cfg.HeartbeatTimeout, "peerURL", cfg.PeerURL)
	return g, nil
}

// servePeers serves the peer endpoint on cfg.PeerBindAddress, if any, until
// ctx is done, over tc (nil: plain HTTP).
func servePeers(ctx context.Context, cfg Config, mon *contact.Monitor, tc *tls.Config) error {
	if cfg.PeerBindAddress == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.PeerBindAddress)
	if err != nil {
		return fmt.Errorf("peer endpoint: %w", err)
	}
	peers.Serve(ctx, ln, peers.Handler(cfg.Cluster, mon), tc)
	return nil
}

// peerTLS returns how to ask peers and the peer endpoint's TLS: mutual TLS
// with cfg.PeerCertDir's certificate and the fleet peer CA (from
// cfg.PeerCAFile, or reloaded from the hub through hub every few minutes
// in the background, with the member's own copy through member while the
// hub cannot be read: loadPeerCA); plain HTTP (nil *tls.Config) with
// cfg.PeerInsecure; and nil Clients when neither is set: no peers.
// Errors: an unreadable certificate or CA file.
func peerTLS(ctx context.Context, cfg Config, hub, member kubernetes.Interface) (peers.Clients, *tls.Config, error) {
	logger := klog.FromContext(ctx)
	switch {
	case cfg.PeerInsecure:
		logger.Info("WARNING: --member-peer-insecure: peers are served and asked over plain HTTP, unauthenticated")
		return peers.Plain(peers.NewClient()), nil, nil
	case cfg.PeerCertDir == "":
		logger.Info("No --member-peer-cert-dir: no peer endpoint, no peer asked; this member never fences on hub silence and the hub holds relocation from it")
		return nil, nil, nil
	}
	t := &peers.TLS{CertDir: cfg.PeerCertDir}
	b := &peers.CABundle{}
	t.CA = b.Pool
	if cfg.PeerCAFile != "" {
		pem, err := os.ReadFile(cfg.PeerCAFile)
		if err == nil {
			err = b.Set(pem)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--member-peer-ca-file: %w", err)
		}
	} else {
		go loadPeerCA(ctx, b, hub, member, 5*time.Minute)
	}
	return t.Clients(), t.ServerConfig(), nil
}

// LocalPeerCAName is the member's own copy of the fleet peer CA: a
// ConfigMap in v1alpha1.ResyncLeaseNamespace of the member cluster, key
// peers.CAConfigMapKey, that the member component writes after each read
// from the hub that changed it.
const LocalPeerCAName = "fleetset-peer-ca"

// loadPeerCA reads the fleet peer CA from the hub into b until ctx is done:
// every peers.RetryUntilLoaded until the first success, then every
// refresh; a failed read keeps the last CA. Each CA read from the hub is
// kept in the member cluster through member (LocalPeerCAName), and while
// b holds none and the hub cannot be read, that copy is loaded: a member
// component restarted during a hub outage could otherwise neither ask its
// peers nor answer them, and would fence on the outage (seen in the
// 60-minute chaos run, seed 2711: east and west both fenced during a 30 s
// hub apiserver stop that followed their restarts).
func loadPeerCA(ctx context.Context, b *peers.CABundle, hub, member kubernetes.Interface, refresh time.Duration) {
	logger := klog.FromContext(ctx)
	var saved string
	for {
		var pem string
		cm, err := hub.CoreV1().ConfigMaps(peers.CANamespace).Get(ctx, peers.CAConfigMapName, metav1.GetOptions{})
		if err == nil {
			pem = cm.Data[peers.CAConfigMapKey]
			err = b.Set([]byte(pem))
		}
		if err == nil && pem != saved {
			if serr := saveLocalPeerCA(ctx, member, pem); serr != nil {
				logger.Error(serr, "Keeping a copy of the fleet peer CA in the member cluster", "configMap", fleetv1.ResyncLeaseNamespace+"/"+LocalPeerCAName)
			} else {
				saved = pem
			}
		}
		wait := refresh
		if err != nil {
			logger.Error(err, "Reading the fleet peer CA from the hub", "configMap", peers.CANamespace+"/"+peers.CAConfigMapName, "loaded", b.Loaded())
			if !b.Loaded() {
				wait = peers.RetryUntilLoaded
				if local, lerr := member.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(ctx, LocalPeerCAName, metav1.GetOptions{}); lerr == nil && b.Set([]byte(local.Data[peers.CAConfigMapKey])) == nil {
					logger.Info("Loaded the member cluster's copy of the fleet peer CA until the hub answers", "configMap", fleetv1.ResyncLeaseNamespace+"/"+LocalPeerCAName)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// saveLocalPeerCA writes pem as the member's copy of the fleet peer CA
// (LocalPeerCAName), creating it if absent. It returns the write's error.
func saveLocalPeerCA(ctx context.Context, member kubernetes.Interface, pem string) error {
	cms := member.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace)
	cur, err := cms.Get(ctx, LocalPeerCAName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: LocalPeerCAName, Namespace: fleetv1.ResyncLeaseNamespace},
			Data: map[string]string{peers.CAConfigMapKey: pem}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cur.Data[peers.CAConfigMapKey] == pem {
		return nil
	}
	cur.Data = map[string]string{peers.CAConfigMapKey: pem}
	_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// peerURLs reads the peers the hub currently lists
// (v1alpha1.PeersConfigMapName): every URL of each peer (PeersAllKey), or
// one per peer (PeersKey) from a hub before PeersAllKey; without this
// member. Errors: the read's, or a key that is not the JSON expected.
func peerURLs(ctx context.Context, cs kubernetes.Interface, self string) (peers.URLs, error) {
	cm, err := cs.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.PeersConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := peers.URLs{}
	if all, ok := cm.Data[fleetv1.PeersAllKey]; ok {
		if err := json.Unmarshal([]byte(all), &out); err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", fleetv1.ResyncLeaseNamespace, fleetv1.PeersConfigMapName, fleetv1.PeersAllKey, err)
		}
	} else {
		one := map[string]string{}
		if err := json.Unmarshal([]byte(cm.Data[fleetv1.PeersKey]), &one); err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", fleetv1.ResyncLeaseNamespace, fleetv1.PeersConfigMapName, fleetv1.PeersKey, err)
		}
		for c, u := range one {
			out[c] = []string{u}
		}
	}
	delete(out, self)
	return out, nil
}

// confirm reads the hub's ManifestWork of sp's FleetSet for this cluster and
// reports whether it still holds sp at epoch or above and acknowledges a
// heartbeat sent at or after returned (fence.WorkAcknowledges): a work the
// hub wrote after it read the member back.
func confirm(ctx context.Context, hub client.Reader, cluster string, sp *fleetv1.SubsetPlacement, epoch int64, returned time.Time) (bool, error) {
	set := sp.Labels[fleetv1.LabelSet]
	if set == "" {
		return false, nil
	}
	w := &workv1.ManifestWork{}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.ManifestWorkName(sp.Namespace, set)}, w); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return fence.Confirms(w, sp.Namespace, sp.Name, epoch, returned), nil
}

// hubRequestTimeout returns the deadline of each request the member's
// fencing path (heartbeat, fence confirmation, peer CA) makes to the hub,
// for a heartbeat period: half of it, so that a beat (a read and a write)
// ends within its period even when the hub is silently unreachable and
// every request hangs until its deadline.
func hubRequestTimeout(period time.Duration) time.Duration { return period / 2 }

// dedicatedHubConfig returns a copy of c, each request bounded by timeout,
// with a transport of its own whose dials time out after timeout: client-go
// shares one transport (and its HTTP/2 connections) between clients of
// equal TLS settings, and a dialer of its own keeps the heartbeat's
// connections apart from the other hub clients'. A connection a silent
// partition left hanging fails each request at its deadline and is closed
// by client-go's HTTP/2 health check (a ping after 30 s without a frame,
// 15 s to answer).
func dedicatedHubConfig(c *rest.Config, timeout time.Duration) *rest.Config {
	c = rest.CopyConfig(c)
	c.Timeout = timeout
	c.Dial = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	return c
}

// hubClient returns a clientset of the hub from the kubeconfig at path,
// each request bounded by timeout.
func hubClient(path string, timeout time.Duration) (kubernetes.Interface, error) {
	c, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", path, err)
	}
	return newHubClient(c, timeout)
}

// newHubClient returns a clientset of the hub at c, each request bounded by
// timeout.
func newHubClient(c *rest.Config, timeout time.Duration) (kubernetes.Interface, error) {
	c = rest.CopyConfig(c)
	c.Timeout = timeout
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	return cs, nil
}

// reportWith returns what each heartbeat tells the hub: g's state and
// peers, and the longest fence f enforces (-1 when it cannot be read).
func reportWith(g *fence.Guard, f *fence.Fencer) func() contact.Report {
	return func() contact.Report {
		r := g.Report()
		r.FenceSeconds = -1
		if s, err := f.EnforcedSeconds(context.Background()); err == nil {
			r.FenceSeconds = s
		}
		r.FencedPlacements = f.Records()
		r.Epochs = g.Epochs.Report()
		return r
	}
}
