package ordinaltarget

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
)

// compiled is everything derived from one generation of a placement.
type compiled struct {
	uid          types.UID
	generation   int64
	resourceVer  string
	seats        *apportion.Seats // nil when the placement lists no domains
	domains      map[string]struct{}
	topologyKey  string
	nodeSelector *nodeaffinity.LazyErrorNodeSelector
	err          error
}

// Resolver reads SubsetPlacements from an informer cache and resolves pods
// to Targets. Safe for concurrent use.
type Resolver struct {
	cache     client.Reader
	apiReader client.Reader
	// writer writes SubsetPlacements (the member component's fence
	// records); nil for a Resolver built by NewResolver.
	writer   client.Writer
	compiled sync.Map // types.NamespacedName → *compiled
}

var (
	resolversMu sync.Mutex
	resolvers   = map[*rest.Config]*Resolver{}
)

// SyncTimeout bounds how long ForConfig waits for the first sync of the
// SubsetPlacement informer.
var SyncTimeout = time.Minute

// cacheOptions is what the Resolver's cache holds: every SubsetPlacement,
// read without a deep copy (Resolve runs in every scheduling cycle of a
// managed pod): the Resolver and its callers never modify what the cache
// returns.
func cacheOptions(scheme *runtime.Scheme) cache.Options {
	return cache.Options{
		Scheme: scheme,
		ByObject: map[client.Object]cache.ByObject{
			&fleetv1.SubsetPlacement{}: {UnsafeDisableDeepCopy: ptr.To(true)},
		},
	}
}

// newScheme returns the scheme of the Resolver's cache and client.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// ForHandle returns the Resolver of the scheduler that built h (see
// ForConfig), for a plugin named plugin; the error names the plugin.
func ForHandle(ctx context.Context, plugin string, h framework.Handle) (*Resolver, error) {
	if h.KubeConfig() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's kubeconfig", plugin)
	}
	r, err := ForConfig(ctx, h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", plugin, err)
	}
	return r, nil
}

// ForConfig returns the Resolver of a scheduler's kubeconfig, one cache for
// all its profiles. First use starts the SubsetPlacement informer and waits
// up to SyncTimeout for its sync; on error (the CRD missing, no RBAC) the
// scheduler fails to start rather than leave pods Pending.
func ForConfig(ctx context.Context, cfg *rest.Config) (*Resolver, error) {
	resolversMu.Lock()
	defer resolversMu.Unlock()
	if r, ok := resolvers[cfg]; ok {
		return r, nil
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cacheOptions(scheme))
	if err != nil {
		return nil, fmt.Errorf("building SubsetPlacement cache: %w", err)
	}
	apiReader, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building SubsetPlacement client: %w", err)
	}
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	inf, err := c.GetInformer(syncCtx, &fleetv1.SubsetPlacement{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("starting SubsetPlacement informer: %w", err)
	}
	r := &Resolver{cache: c, apiReader: apiReader, writer: apiReader}
	// Forget the compiled form of deleted placements.
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if sp, ok := obj.(*fleetv1.SubsetPlacement); ok {
				r.compiled.Delete(client.ObjectKeyFromObject(sp))
			}
		},
	}); err != nil {
		return nil, err
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(ctx) }()
	if !c.WaitForCacheSync(syncCtx) {
		select {
		case err := <-stopped:
			return nil, fmt.Errorf("SubsetPlacement informer stopped before its first sync: %v", err)
		default:
			return nil, fmt.Errorf("SubsetPlacement informer did not sync within %s: is the SubsetPlacement CRD installed, and may the scheduler list and watch subsetplacements.fleetset.io (manifests/scheduler/rbac.yaml)?",
				SyncTimeout)
		}
	}
	go func() {
		if err := <-stopped; err != nil {
			klog.FromContext(ctx).Error(err, "SubsetPlacement informer stopped")
		}
	}()
	resolvers[cfg] = r
	go func() {
		<-ctx.Done()
		resolversMu.Lock()
		delete(resolvers, cfg)
		resolversMu.Unlock()
	}()
	return r, nil
}

// NewResolver returns a Resolver over the given readers; cached serves every
// lookup and live only confirms a miss (nil: never). For tests and embedding.
func NewResolver(cached, live client.Reader) *Resolver {
	return &Resolver{cache: cached, apiReader: live}
}

// Reader returns the Resolver's cached reader of SubsetPlacements.
func (r *Resolver) Reader() client.Reader { return r.cache }

// Writer returns the Resolver's writer of SubsetPlacements (a live client),
// nil for a Resolver built by NewResolver.
func (r *Resolver) Writer() client.Writer { return r.writer }

// Resolve returns the Target of a managed pod. Errors are for the user: a
// missing placement (apierrors NotFound, wrapped), an invalid placement, or a
// pod without a usable ordinal; each names the placement or the label. A
// placement missing from the cache is confirmed with one live read.
func (r *Resolver) Resolve(ctx context.Context, pod *v1.Pod) (*Target, error) {
	return r.resolve(ctx, pod, true)
}

// ResolveCached is Resolve reading the cache only: a placement missing from
// the cache is NotFound without a live read. For callers that run on every
// cluster event, such as queueing hints.
func (r *Resolver) ResolveCached(ctx context.Context, pod *v1.Pod) (*Target, error) {
	return r.resolve(ctx, pod, false)
}

// resolve is Resolve; live allows the live read that confirms a miss.
func (r *Resolver) resolve(ctx context.Context, pod *v1.Pod, live bool) (*Target, error) {
	name := pod.Labels[fleetv1.LabelPlacement]
	key := types.NamespacedName{Namespace: pod.Namespace, Name: name}
	sp := &fleetv1.SubsetPlacement{}
	err := r.cache.Get(ctx, key, sp)
	if apierrors.IsNotFound(err) && live && r.apiReader != nil {
		// The scheduler re-queues the pod from its own informer, which may
		// see a new placement before ours: confirm a miss with one live read.
		err = r.apiReader.Get(ctx, key, sp)
	}
	if err != nil {
		return nil, fmt.Errorf("SubsetPlacement %s: %w", key, err)
	}
	c := r.compile(sp)
	if c.err != nil {
		return nil, &UserError{Err: fmt.Errorf("SubsetPlacement %s is invalid: %w", key, c.err)}
	}
	ordinal, err := Ordinal(pod)
	if err != nil {
		return nil, &UserError{Err: err}
	}
	offset := ordinal - int64(sp.Spec.OrdinalStart)
	if block := int64(sp.Spec.OrdinalBlockSizeOrDefault()); offset < 0 || offset >= block {
		// Bounded by the placement's block, never by a pod's label: the
		// ordinal map below grows only as far as the block.
		return nil, &UserError{Err: fmt.Errorf("ordinal %d is outside SubsetPlacement %s's ordinal block [%d, %d)", ordinal, key, sp.Spec.OrdinalStart, int64(sp.Spec.OrdinalStart)+block)}
	}
	t := &Target{
		Placement:    sp,
		Ordinal:      ordinal,
		TopologyKey:  c.topologyKey,
		Domains:      c.domains,
		NodeSelector: c.nodeSelector,
	}
	if c.seats != nil {
		if t.Domain, err = c.seats.NameOf(offset); err != nil {
			return nil, &UserError{Err: fmt.Errorf("SubsetPlacement %s: ordinal %d: %w", key, ordinal, err)}
		}
		t.Strict = sp.Spec.WhenUnsatisfiable != fleetv1.ScheduleAnyway
	}
	return t, nil
}

// compile returns the derived form of sp, rebuilding it only when the
// placement's resourceVersion changed since the last call.
func (r *Resolver) compile(sp *fleetv1.SubsetPlacement) *compiled {
	key := client.ObjectKeyFromObject(sp)
	if v, ok := r.compiled.Load(key); ok {
		if c := v.(*compiled); c.uid == sp.UID && c.resourceVer == sp.ResourceVersion && c.generation == sp.Generation {
			return c
		}
	}
	c := &compiled{uid: sp.UID, generation: sp.Generation, resourceVer: sp.ResourceVersion}
	c.seats, c.domains, c.err = Compile(&sp.Spec)
	c.topologyKey = fleetv1.TopologyKeyOrDefault(sp.Spec.TopologyKey)
	if c.err == nil && sp.Spec.NodeSelector != nil {
		c.nodeSelector = nodeaffinity.NewLazyErrorNodeSelector(sp.Spec.NodeSelector)
	}
	r.compiled.Store(key, c)
	return c
}
