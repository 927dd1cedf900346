// Package wiring is what the member controllers (claims, roles, updater)
// share: the clients and informers of one process (Deps) and the
// registration of their event handlers for one run (Handlers). The member
// component (package member) builds one Deps per process; a controller's Run
// registers its handlers, waits for the caches, works until its context
// ends, then removes them, so it can run again in a later leader term.
package wiring

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
)

// Component is the name the member controllers record events under.
const Component = "fleetset-member"

// Deps is what the member controllers read and write through; one per
// process, shared by every controller.
type Deps struct {
	// Client is the member cluster's clientset.
	Client kubernetes.Interface
	// Pods is the scheduler's pod informer.
	Pods coreinformers.PodInformer
	// StatefulSets is the informer of the StatefulSets labelled
	// fleetset.io/set (NewStatefulSetFactory).
	StatefulSets appsinformers.StatefulSetInformer
	// Placements reads SubsetPlacements: the scheduler's cache. When it is
	// a controller-runtime cache, its informer's events wake the
	// controllers; their resyncs do in any case.
	Placements client.Reader
	// Writer writes SubsetPlacements (the status subresource for roles).
	Writer client.Writer
	// Recorder records events as Component.
	Recorder events.EventRecorder
	// InContact says whether the member is in contact with the hub, and
	// why not; nil: no hub, always.
	InContact func() (bool, string)
	// Hub is the hub's clientset with the add-on's credentials, for the
	// fleet DNS publisher; nil: no hub, or fleet DNS disabled.
	Hub kubernetes.Interface
	// Actions runs lifecycle actions (package member/actions); nil: none
	// are run.
	Actions *actions.Runner
	// ClusterDomain ends the fleet DNS names in actions' environment.
	ClusterDomain string
}

// NewStatefulSetFactory returns an informer factory over cs whose
// StatefulSets are those labelled fleetset.io/set, without managed fields.
func NewStatefulSetFactory(cs kubernetes.Interface) informers.SharedInformerFactory {
	return NewLabelledFactory(cs, fleetv1.LabelSet)
}

// NewLabelledFactory returns an informer factory over cs whose informers
// hold only the objects matching the label selector selector (e.g.
// "fleetset.io/set"), without managed fields.
func NewLabelledFactory(cs kubernetes.Interface, selector string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(stripManagedFields))
}

// stripManagedFields drops what no member controller reads.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if a, ok := obj.(metav1.Object); ok {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// NewRecorder returns an events.k8s.io broadcaster over cs and its recorder
// for Component, with a scheme of client-go's types and fleetset's. The
// caller starts the broadcaster (StartRecordingToSinkWithContext) and shuts
// it down.
func NewRecorder(cs kubernetes.Interface) (events.EventBroadcaster, events.EventRecorder, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := fleetv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	return b, b.NewRecorder(scheme, Component), nil
}

// informer is what client-go's and controller-runtime's informers share.
type informer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error
}

// informerSource is what a controller-runtime cache offers: the informer of
// a kind.
type informerSource interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Handlers are the event handlers one controller run registered.
type Handlers struct {
	regs []registration
}

type registration struct {
	inf informer
	reg toolscache.ResourceEventHandlerRegistration
}

// Add registers h on inf.
func (hs *Handlers) Add(inf informer, h toolscache.ResourceEventHandler) error {
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return err
	}
	hs.regs = append(hs.regs, registration{inf, reg})
	return nil
}

// AddPlacements registers h on the SubsetPlacement informer of placements
// when placements is a controller-runtime cache, and does nothing
// otherwise.
func (hs *Handlers) AddPlacements(ctx context.Context, placements client.Reader, h toolscache.ResourceEventHandler) error {
	src, ok := placements.(informerSource)
	if !ok {
		return nil
	}
	inf, err := src.GetInformer(ctx, &fleetv1.SubsetPlacement{})
	if err != nil {
		return fmt.Errorf("SubsetPlacement informer: %w", err)
	}
	return hs.Add(inf, h)
}

// Run waits until every registered handler has seen its informer's initial
// list, runs run until ctx is done, and removes the handlers. It returns
// ctx's error when the caches never synced, and any error removing them.
func (hs *Handlers) Run(ctx context.Context, name string, run func(context.Context)) error {
	defer hs.remove(klog.FromContext(ctx))
	synced := make([]toolscache.InformerSynced, len(hs.regs))
	for i, r := range hs.regs {
		synced[i] = r.reg.HasSynced
	}
	if !toolscache.WaitForNamedCacheSync(name, ctx.Done(), synced...) {
		return errors.Join(ctx.Err(), fmt.Errorf("%s: caches not synced", name))
	}
	run(ctx)
	return nil
}

func (hs *Handlers) remove(logger klog.Logger) {
	for _, r := range hs.regs {
		if err := r.inf.RemoveEventHandler(r.reg); err != nil {
			logger.Error(err, "Removing an event handler")
		}
	}
	hs.regs = nil
}

// SameNameKey is the key of the SubsetPlacement named as obj, in obj's
// namespace (a delivered StatefulSet, or the placement itself); false when
// obj is not an object.
func SameNameKey(obj interface{}) (types.NamespacedName, bool) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, true
}
