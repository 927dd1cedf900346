// Package controller holds fleetset-hub's controllers: FleetSetReconciler
// delivers each FleetSet as one ManifestWork per member cluster and folds the
// members' status back; ResyncReconciler keeps the per-cluster resync lease;
// TenantReconciler keeps each namespace's executor in each cluster (the
// tenant works). All run in one controller-runtime manager (cmd/hub).
//
// Files: setup.go (options, indexes, Setup); fleetset_controller.go (the
// FleetSet reconciler, its watches, its reconcile as a list of steps);
// state.go (what one reconcile reads and decides, typed per step);
// problems.go (what Degraded reports); one file per step, in reconcile
// order: deletion.go, identity.go (the owner identity a restore keeps),
// placement.go, clusters.go (also availability and the FleetSet indexes by
// cluster), tenancy.go, planning.go, restore.go (status.subsets rebuilt
// from the ManifestWorks when lost), rendering.go,
// failover.go, observe.go, rollout.go, works.go (choosing the ManifestWork
// writes), freshness.go, writes.go (making them, in parallel), status.go,
// events.go; resync_controller.go (the resync lease); tenant_controller.go
// (the tenant works); expectations.go
// (cache reads no older than the reconciler's writes); metrics.go.
//
// Every read goes through the manager's cache except four, made live
// through APIReader: the FleetSet's metadata before a reconcile writes
// ManifestWorks (freshness.go); a delivered ConfigMap's or Secret's content
// once its cached resourceVersion changed (rendering.go); the heartbeat
// Lease of each unavailable cluster the failover step considers
// (failover.go); the resync work before a renewal or deletion
// (resync_controller.go).
package controller

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrl "sigs.k8s.io/controller-runtime/pkg/manager"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/heartbeat"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/metawrite"
)

// Defaults of fleetset-hub's flags (cmd/hub), sized so that 1000 FleetSets
// × 20 clusters converge at the apiserver's pace, not the hub's
// (docs/benchmarks.md#hub-throughput).
const (
	// DefaultKubeAPIQPS is the client-side rate limit (requests per second)
	// to the hub's apiserver; the apiserver's own priority and fairness
	// still applies.
	DefaultKubeAPIQPS = 500
	// DefaultKubeAPIBurst is the client-side burst above DefaultKubeAPIQPS.
	DefaultKubeAPIBurst = 1000
	// DefaultMaxConcurrentReconciles is how many reconciles each controller
	// runs at once.
	DefaultMaxConcurrentReconciles = 8
	// DefaultMaxParallelWrites is how many ManifestWork writes one FleetSet
	// reconcile has in flight.
	DefaultMaxParallelWrites = 8
	// DefaultMaxUnobservedWrites is how many ManifestWork writes the hub
	// lets be made and not yet seen by its own cache at once: the
	// apiserver buffers 100 events per watcher of a custom resource and
	// closes a watch that falls further behind (docs/hub.md#delivery).
	DefaultMaxUnobservedWrites = 100
)

// Options configures the hub's controllers.
type Options struct {
	// HubIdentity is the resync Lease's holderIdentity.
	HubIdentity string
	// LeaseDuration is the resync Lease's leaseDurationSeconds (whole seconds,
	// ≥ 3 s); the hub renews it every third of that.
	LeaseDuration time.Duration
	// Clock is the clock of the lease renewals; nil means the real clock.
	Clock clock.Clock
	// RelocationMargin is added to a lost member's fence deadline (heartbeat
	// timeout + fenceGraceSeconds + terminationGracePeriodSeconds, counted
	// from the hub's observation of its last heartbeat) before its subsets
	// are relocated; 0 means v1alpha1.RelocationMarginSeconds.
	RelocationMargin time.Duration
	// MaxParallelWrites bounds the ManifestWork writes one FleetSet
	// reconcile has in flight; 0 means DefaultMaxParallelWrites.
	MaxParallelWrites int
	// MaxUnobservedWrites bounds, over all reconciles, the ManifestWork
	// writes (creations, updates, deletions) made or in flight that the
	// hub's cache has not delivered yet (a write stops counting after 30 s
	// undelivered); 0 means DefaultMaxUnobservedWrites.
	MaxUnobservedWrites int
	// ReservedNamespaces are hub namespaces (an entry ending in "*" is a
	// prefix) whose FleetSets are refused (InvalidSpec), besides
	// v1alpha1.ReservedNamespaces.
	ReservedNamespaces []string
}

// NewScheme returns a scheme with the types the hub reads and writes:
// client-go's, fleetset.io/v1alpha1, OCM cluster/v1 and work/v1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1.AddToScheme, clusterv1.Install, clusterv1beta1.Install, clusterv1beta2.Install, workv1.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// CacheOptions restricts the manager's cache of ManifestWorks to those the hub
// wrote (label app.kubernetes.io/managed-by=fleetset-hub), so a hub shared
// with other OCM users does not cache theirs, and strips managedFields from
// every cached object: the hub never reads them, and an update without them
// leaves the stored ones as they are. Cached ManifestWorks also lose the
// manifests the hub never reads back (stripWorkManifests).
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&workv1.ManifestWork{}: {
				Label:     labels.SelectorFromSet(labels.Set{fleetv1.LabelManagedBy: fleetv1.ManagedByHub}),
				Transform: stripWorkManifests,
			},
			&coordinationv1.Lease{}: {Label: labels.SelectorFromSet(labels.Set{fleetv1.LabelHeartbeat: "true"})},
			// The members' fleet DNS reports only.
			&discoveryv1.EndpointSlice{}: {Label: labels.SelectorFromSet(labels.Set{fleetv1.LabelMemberEndpoints: "true"})},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// stripWorkManifests is the cache transform of ManifestWorks: it strips
// managedFields and the manifests the hub never reads back
// (manifestwork.StripForCache), and returns obj.
func stripWorkManifests(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if w, ok := obj.(*workv1.ManifestWork); ok {
		manifestwork.StripForCache(w)
	}
	return obj, err
}

// Setup registers the indexes, the expectations that keep the FleetSet
// controller's cache reads no older than its writes, and both controllers
// with mgr. It returns an error if opts
// is invalid or a controller cannot be built.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.HubIdentity == "" {
		return fmt.Errorf("hub identity: must not be empty")
	}
	if opts.LeaseDuration < 3*time.Second || opts.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("lease duration: must be whole seconds ≥ 3s, got %v", opts.LeaseDuration)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RelocationMargin < 0 {
		return fmt.Errorf("relocation margin: must not be negative, got %v", opts.RelocationMargin)
	}
	if opts.RelocationMargin == 0 {
		opts.RelocationMargin = fleetv1.RelocationMarginSeconds * time.Second
	}
	if opts.MaxParallelWrites < 0 {
		return fmt.Errorf("max parallel writes: must not be negative, got %d", opts.MaxParallelWrites)
	}
	if opts.MaxParallelWrites == 0 {
		opts.MaxParallelWrites = DefaultMaxParallelWrites
	}
	if opts.MaxUnobservedWrites < 0 {
		return fmt.Errorf("max unobserved writes: must not be negative, got %d", opts.MaxUnobservedWrites)
	}
	if opts.MaxUnobservedWrites == 0 {
		opts.MaxUnobservedWrites = DefaultMaxUnobservedWrites
	}
	for _, ix := range []struct {
		obj   client.Object
		field string
		index client.IndexerFunc
	}{
		{&fleetv1.FleetSet{}, ClusterIndex, clustersOf},
		{&fleetv1.FleetSet{}, liveClusterIndex, liveClustersOf},
		{&fleetv1.FleetSet{}, movedFromIndex, movedFromOf},
		{&fleetv1.FleetSet{}, DependencyIndex, dependenciesOf},
		{&workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf},
		{&workv1.ManifestWork{}, deletingWorkIndex, deletingWork},
	} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.index); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	exp := newCacheExpectations(expectationTTL, opts.Clock.Now)
	exp.window = opts.MaxUnobservedWrites
	beats, err := watchHeartbeats(ctx, mgr, opts.Clock)
	if err != nil {
		return err
	}
	addOns, err := addOnsServed(mgr)
	if err != nil {
		return err
	}
	beats.IsMember = func(cluster string) bool { return isMember(ctx, mgr.GetCache(), cluster, addOns) }
	acks := make(chan event.GenericEvent, 64)
	beats.AwaitingAck = func(cluster string) {
		mc := &clusterv1.ManagedCluster{}
		mc.Name = cluster
		select {
		case acks <- event.GenericEvent{Object: mc}:
		default: // full: the member's next heartbeat asks again
		}
	}
	if err := exp.watch(ctx, mgr.GetCache(), map[string]client.Object{kindFleetSet: &fleetv1.FleetSet{}, kindManifestWork: &workv1.ManifestWork{}}); err != nil {
		return err
	}
	writer, err := metawrite.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	fr := &FleetSetReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("fleetset-hub"), RelocationMargin: opts.RelocationMargin, Clock: opts.Clock,
		Heartbeats: beats, AckEvents: acks, APIReader: mgr.GetAPIReader(), MaxParallelWrites: opts.MaxParallelWrites, Writer: writer, expectations: exp,
		ReservedNamespaces: opts.ReservedNamespaces}
	if err := fr.SetupWithManager(mgr); err != nil {
		return err
	}
	rr := &ResyncReconciler{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorderFor("fleetset-hub"),
		HubIdentity:   opts.HubIdentity,
		LeaseDuration: opts.LeaseDuration,
		Clock:         opts.Clock,
		APIReader:     mgr.GetAPIReader(),
		Peers:         beats.Peers,
		Heartbeats:    beats,
		AddOns:        addOns,
	}
	if err := rr.SetupWithManager(mgr); err != nil {
		return err
	}
	tr := &TenantReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("fleetset-hub"), ReservedNamespaces: opts.ReservedNamespaces}
	return tr.SetupWithManager(mgr)
}

// watchHeartbeats returns the hub's heartbeat observer, fed by the manager's
// informer of heartbeat Leases (label v1alpha1.LabelHeartbeat, every cluster
// namespace) and ticking every second while the manager runs, leader or not:
// every replica keeps its own observed times, and a new leader starts from
// its own start, as a restarted hub does.
func watchHeartbeats(ctx context.Context, mgr ctrl.Manager, clk clock.Clock) (*heartbeat.Observer, error) {
	o := heartbeat.NewObserver(clk)
	inf, err := mgr.GetCache().GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return nil, fmt.Errorf("heartbeat Lease informer: %w", err)
	}
	observe := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			o.Observe(l)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, n any) { observe(n) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if l, ok := obj.(*coordinationv1.Lease); ok && l.Name == fleetv1.HeartbeatLeaseName {
				o.Forget(l.Namespace)
			}
		},
	}); err != nil {
		return nil, err
	}
	if err := mgr.Add(observerRunnable{o}); err != nil {
		return nil, err
	}
	return o, nil
}

// observerRunnable ticks the observer on every replica, leader or not: a
// replica that becomes leader must know of a full disruption that ended
// while it was standing by.
type observerRunnable struct{ o *heartbeat.Observer }

func (r observerRunnable) Start(ctx context.Context) error {
	r.o.Run(ctx, time.Second)
	return nil
}

func (observerRunnable) NeedLeaderElection() bool { return false }

// isMember reports whether cluster is a member for the heartbeat rules: its
// ManagedCluster exists in reader (the manager's cache) and is not being
// deleted; and, with addOns (the hub serves OCM's add-on API) while the
// ClusterManagementAddOn v1alpha1.AddOnName exists (fleetset installed as
// an add-on), its ManagedClusterAddOn AddOnName exists and is not being
// deleted. When the cache cannot answer (not synced yet, or an error), the
// cluster counts as a member, as every heartbeat did before the rule.
func isMember(ctx context.Context, reader client.Reader, cluster string, addOns bool) bool {
	mc := &clusterv1.ManagedCluster{}
	switch err := reader.Get(ctx, client.ObjectKey{Name: cluster}, mc); {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	case !mc.DeletionTimestamp.IsZero():
		return false
	case !addOns:
		return true
	}
	switch err := reader.Get(ctx, client.ObjectKey{Name: fleetv1.AddOnName}, addOnMeta(kindClusterManagementAddOn)); {
	case apierrors.IsNotFound(err):
		return true // not installed as an add-on
	case err != nil:
		return true
	}
	enabled := addOnMeta(kindManagedClusterAddOn)
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: cluster, Name: fleetv1.AddOnName}, enabled); {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	}
	return enabled.DeletionTimestamp.IsZero()
}

// OCM's add-on kinds, read as metadata only.
const (
	addOnGroupVersion          = "addon.open-cluster-management.io/v1alpha1"
	kindClusterManagementAddOn = "ClusterManagementAddOn"
	kindManagedClusterAddOn    = "ManagedClusterAddOn"
)

// addOnMeta is an empty metadata-only object of OCM add-on kind kind.
func addOnMeta(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: addOnGroupVersion, Kind: kind}}
}

// addOnsServed reports whether the hub's apiserver serves OCM's add-on
// API (ManagedClusterAddOn and ClusterManagementAddOn v1alpha1). The error
// is the discovery's, other than the kinds not being served.
func addOnsServed(mgr ctrl.Manager) (bool, error) {
	for _, kind := range []string{kindClusterManagementAddOn, kindManagedClusterAddOn} {
		_, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: "addon.open-cluster-management.io", Kind: kind}, "v1alpha1")
		switch {
		case apimeta.IsNoMatchError(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("discovering OCM's add-on API: %w", err)
		}
	}
	return true, nil
}
