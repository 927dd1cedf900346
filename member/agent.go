package member

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/pflag"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/claims"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/fence"
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
}

// Flags is the Config set by AddFlags.
var Flags = Config{HeartbeatTimeout: fleetv1.DefaultHeartbeatTimeoutSeconds * time.Second, ClaimExpansion: true, ClaimResync: claims.DefaultResync, Roles: true, RoleUpdates: true}

// AddFlags adds the member component's flags to fs, writing into Flags.
func AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&Flags.Cluster, "member-cluster-name", Flags.Cluster, "Name of this member's ManagedCluster on the hub (the add-on's {{CLUSTER_NAME}}).")
	fs.StringVar(&Flags.HubKubeconfig, "member-hub-kubeconfig", Flags.HubKubeconfig, "Kubeconfig with the fleetset add-on's hub credentials (the add-on's {{HUB_KUBECONFIG}}). Empty: no heartbeat and no fencing.")
	fs.DurationVar(&Flags.HeartbeatTimeout, "member-heartbeat-timeout", Flags.HeartbeatTimeout, "Time without reaching the hub after which this member is lost; heartbeats go every third of it.")
	fs.StringVar(&Flags.PeerBindAddress, "member-peer-bind-address", Flags.PeerBindAddress, "host:port of the peer endpoint other members ask whether this one reaches the hub. Empty: none.")
	fs.StringVar(&Flags.PeerURL, "member-peer-url", Flags.PeerURL, "URL at which other members reach the peer endpoint (advertised in the heartbeat).")
	fs.BoolVar(&Flags.ClaimExpansion, "member-claim-expansion", Flags.ClaimExpansion, "Expand the claims of a delivered StatefulSet to its SubsetPlacement's spec.claimStorage and delete the StatefulSet (orphaning its pods) for the work agent to re-create it with the larger claim templates. Runs with or without --member-hub-kubeconfig.")
	fs.BoolVar(&Flags.Roles, "member-roles", Flags.Roles, "Detect the roles of the instances of SubsetPlacements with spec.roles (their role probe, or the label fleetset.io/role their workload sets), label the pods with them and write them into the placements' status. Runs with or without --member-hub-kubeconfig.")
	fs.BoolVar(&Flags.RoleUpdates, "member-role-updates", Flags.RoleUpdates, "In a role-ordered rollout (a SubsetPlacement with spec.update and spec.roles, its StatefulSet on OnDelete), delete the StatefulSet's outdated pods by role, lowest updatePriority first, then the highest ordinal, within spec.update.maxUnavailable, and the leader only as spec.update.leader says (annotating it fleetset.io/switchover-requested for Switchover). Runs with or without --member-hub-kubeconfig.")
	fs.DurationVar(&Flags.ClaimResync, "member-claim-resync", Flags.ClaimResync, "Time between the claim expansion controller's passes over every placement with claimStorage (a refused or pending expansion is retried at that pace).")
}

// Gate is what the scheduler plugins ask of the member component.
type Gate interface {
	// Allows reports whether the pods of sp may be scheduled now, and why not.
	Allows(sp *fleetv1.SubsetPlacement) (bool, string)
	// OnChange registers fn to run when Allows may have changed.
	OnChange(fn func())
}

var (
	startMu sync.Mutex
	started Gate
	// claimsRunning is true while the claim expansion controller runs.
	claimsRunning bool
	// rolesRunning is true while the role controller runs.
	rolesRunning bool
	// updaterRunning is true while the role-ordered update controller runs.
	updaterRunning bool
)

// Start starts, once per process, the member component of cfg: the
// heartbeat, the peer endpoint and the Fencer, over the scheduler's pod
// informer, clientset, placement cache and client, the claim expansion
// controller (member/claims) over the clientset and placement cache, and the
// role controller (member/roles) over the pod informer, clientset, placement
// cache and client, and the role-ordered update controller (member/updater)
// over the clientset, pod informer and placement cache. It returns the Gate,
// or nil when cfg.HubKubeconfig is empty (the claim expansion, role and
// role-ordered update controllers run all the same, unless
// cfg.ClaimExpansion, cfg.Roles or cfg.RoleUpdates is false). Errors are a
// bad configuration or kubeconfig, or a peer address that cannot be bound.
func Start(ctx context.Context, cfg Config, pods coreinformers.PodInformer, cs kubernetes.Interface, placements client.Reader, writer client.Writer) (Gate, error) {
	startMu.Lock()
	defer startMu.Unlock()
	if started != nil {
		return started, nil
	}
	logger := klog.FromContext(ctx).WithName("member")
	if cfg.ClaimExpansion && !claimsRunning {
		if err := claims.Start(klog.NewContext(ctx, logger), cs, placements, cfg.ClaimResync); err != nil {
			return nil, fmt.Errorf("claim expansion: %w", err)
		}
		claimsRunning = true
		go func() {
			<-ctx.Done()
			startMu.Lock()
			claimsRunning = false
			startMu.Unlock()
		}()
	}
	if cfg.Roles && !rolesRunning {
		if err := roles.Start(klog.NewContext(ctx, logger), cs, pods, placements, writer); err != nil {
			return nil, fmt.Errorf("roles: %w", err)
		}
		rolesRunning = true
		go func() {
			<-ctx.Done()
			startMu.Lock()
			rolesRunning = false
			startMu.Unlock()
		}()
	}
	if cfg.RoleUpdates && !updaterRunning {
		if err := updater.Start(klog.NewContext(ctx, logger), cs, pods, placements); err != nil {
			return nil, fmt.Errorf("role-ordered updates: %w", err)
		}
		updaterRunning = true
		go func() {
			<-ctx.Done()
			startMu.Lock()
			updaterRunning = false
			startMu.Unlock()
		}()
	}
	if cfg.HubKubeconfig == "" {
		logger.Info("No --member-hub-kubeconfig: the member sends no heartbeat and fences nothing; the hub relocates none of its subsets")
		return nil, nil
	}
	if cfg.Cluster == "" {
		return nil, errors.New("--member-cluster-name is required with --member-hub-kubeconfig")
	}
	if cfg.HeartbeatTimeout < 3*time.Second {
		return nil, fmt.Errorf("--member-heartbeat-timeout %s is below 3s", cfg.HeartbeatTimeout)
	}
	hubCfg, err := clientcmd.BuildConfigFromFlags("", cfg.HubKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", cfg.HubKubeconfig, err)
	}
	hubCfg.Timeout = cfg.HeartbeatTimeout / 3
	hubCS, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
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
	period := cfg.HeartbeatTimeout / 3
	mon := contact.NewMonitor(clk, cfg.HeartbeatTimeout)
	identity, _ := os.Hostname()
	hb := &contact.Heartbeat{Cluster: cfg.Cluster, Identity: identity, PeerURL: cfg.PeerURL, Hub: hubCS.CoordinationV1(),
		Local: cs.CoordinationV1(), Monitor: mon, Clock: clk, Period: period}
	if cfg.PeerBindAddress != "" {
		ln, err := net.Listen("tcp", cfg.PeerBindAddress)
		if err != nil {
			return nil, fmt.Errorf("peer endpoint: %w", err)
		}
		srv := &http.Server{Handler: peers.Handler(cfg.Cluster, mon), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	hc := &http.Client{}
	g := &fence.Guard{
		Monitor: mon, Clock: clk, PeerPoll: fleetv1.FenceConfirmation(cfg.HeartbeatTimeout),
		Peers: func(ctx context.Context) (map[string]string, error) { return peerURLs(ctx, cs, cfg.Cluster) },
		Ask: func(ctx context.Context, p map[string]string) []peers.Result {
			return peers.Ask(ctx, hc, p, min(2*time.Second, period))
		},
	}
	f := &fence.Fencer{Guard: g, Placements: placements, Writer: writer, Pods: pods.Lister(), Client: cs,
		Confirm: func(ctx context.Context, sp *fleetv1.SubsetPlacement, e int64) (bool, error) {
			return confirm(ctx, hubC, cfg.Cluster, sp, e)
		},
		ConfirmAfter: period, Clock: clk, Interval: time.Second}
	synced := pods.Informer().HasSynced
	ctx = klog.NewContext(ctx, logger)
	hb.Report = func() (string, string) {
		v, _ := g.Current()
		return string(v.State), v.Reason
	}
	go hb.Run(ctx)
	go f.Run(ctx, synced)
	logger.Info("Member component started", "cluster", cfg.Cluster, "heartbeatTimeout", cfg.HeartbeatTimeout, "peerURL", cfg.PeerURL)
	started = g
	return g, nil
}

// peerURLs reads the peers the hub delivered (v1alpha1.PeersConfigMapName),
// without this member.
func peerURLs(ctx context.Context, cs kubernetes.Interface, self string) (map[string]string, error) {
	cm, err := cs.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.PeersConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.PeersKey]), &out); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", fleetv1.ResyncLeaseNamespace, fleetv1.PeersConfigMapName, fleetv1.PeersKey, err)
	}
	delete(out, self)
	return out, nil
}

// confirm reads the hub's ManifestWork of sp's FleetSet for this cluster and
// reports whether it still holds sp at epoch or above.
func confirm(ctx context.Context, hub client.Reader, cluster string, sp *fleetv1.SubsetPlacement, epoch int64) (bool, error) {
	set := sp.Labels[fleetv1.LabelSet]
	if set == "" {
		return false, nil
	}
	w := &workv1.ManifestWork{}
	if err := hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.ManifestWorkName(sp.Namespace, set)}, w); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return fence.WorkHolds(w, sp.Namespace, sp.Name, epoch), nil
}
