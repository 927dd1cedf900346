// Package subsetplacement is the SubsetPlacement scheduler plugin: a pod
// labelled fleetset.io/placement=<name> may only land on nodes inside that
// SubsetPlacement's domains and node selector, and with whenUnsatisfiable
// DoNotSchedule only in the domain its ordinal maps to (the seat sequence of
// package internal/apportion). Pods without the label are skipped. Before
// such a pod is bound, PreBind labels it fleetset.io/domain with its
// ordinal's domain (prebind.go).
//
// For a placement with spec.fencing it also gates scheduling on the member
// component (package member, contract in api/v1alpha1/member.go): while the
// member is fenced, or the placement carries a fence the hub has not yet
// confirmed, its pods are not scheduled. The Gate comes from the registry
// (Factory): fleetset-scheduler's starts the member component, whose
// Fencer deletes the running pods of a fenced member after graceSeconds.
package subsetplacement

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/apis/config/validation"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Name is the name of the plugin in the registry and in configurations.
const Name = "SubsetPlacement"

// subsetPlacementEvents names SubsetPlacement events in the
// scheduler's dynamic informer: <plural>.<version>.<group>.
var subsetPlacementEvents = fwk.EventResource("subsetplacements." + fleetv1.GroupVersion.Version + "." + fleetv1.GroupVersion.Group)

// SubsetPlacement is the plugin.
type SubsetPlacement struct {
	resolver *ordinaltarget.Resolver
	// gate is the member component's verdict on fencing placements; nil:
	// no member component, nothing is fenced.
	gate member.Gate
	// activator moves pods back to the active queue; nil: never (tests).
	activator framework.PodActivator

	// fenced holds the pods last rejected because the gate fenced them, by
	// namespace/name, until the gate changes and they are activated.
	fencedMu sync.Mutex
	fenced   map[string]*v1.Pod

	// index finds the nodes of a domain in PreFilter.
	index nodeIndex

	// client patches the locality labels onto pods at PreBind and binds
	// them at Bind, nodes reads a spread-only pod's node there
	// (prebind.go); nil: PreBind and Bind do nothing (Bind skips).
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	// apiCacher returns the scheduler's API cacher Bind goes through (nil
	// func or nil cacher: the clientset), as DefaultBinder does.
	apiCacher func() framework.APICacher
	// localityMetadata is the args' LocalityMetadata: with
	// LocalityAnnotations PreBind patches nothing.
	localityMetadata config.LocalityMetadata
}

var _ framework.PreFilterPlugin = &SubsetPlacement{}
var _ framework.FilterPlugin = &SubsetPlacement{}
var _ framework.EnqueueExtensions = &SubsetPlacement{}
var _ framework.PreBindPlugin = &SubsetPlacement{}
var _ framework.BindPlugin = &SubsetPlacement{}

// Name returns the plugin name.
func (pl *SubsetPlacement) Name() string { return Name }

// GateFunc starts the member component over the scheduler's handle h and
// the plugin's SubsetPlacement cache and writer, and returns its Gate; a nil
// Gate fences nothing.
type GateFunc func(ctx context.Context, h framework.Handle, placements client.Reader, writer client.Writer) (member.Gate, error)

// Factory returns the plugin's factory for the scheduler's registry, with
// the Gate of gates (nil: no member component, nothing is fenced).
func Factory(gates GateFunc) fwkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
		return New(ctx, args, h, gates)
	}
}

// New builds the plugin from args, a *config.SubsetPlacementArgs (validated
// here) or nil (the defaults: locality as labels and annotations). It reads
// SubsetPlacements through the informer shared with OrdinalSpread (see
// ordinaltarget.ForHandle), gets its Gate from gates (nil: none) and
// re-queues the pods the Gate fenced when its verdict changes. Errors come
// from invalid args, from building the informers or from gates.
func New(ctx context.Context, obj runtime.Object, h framework.Handle, gates GateFunc) (framework.Plugin, error) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	args := &config.SubsetPlacementArgs{LocalityMetadata: config.LocalityLabelsAndAnnotations}
	if obj != nil {
		a, ok := obj.(*config.SubsetPlacementArgs)
		if !ok {
			return nil, fmt.Errorf("want args to be of type SubsetPlacementArgs, got %T", obj)
		}
		if err := validation.ValidateSubsetPlacementArgs(nil, a); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		args = a
	}
	r, err := ordinaltarget.ForHandle(ctx, Name, h)
	if err != nil {
		return nil, err
	}
	var gate member.Gate
	if gates != nil {
		if gate, err = gates(ctx, h, r.Reader(), r.Writer()); err != nil {
			return nil, fmt.Errorf("%s: member component: %w", Name, err)
		}
	}
	pl := NewWithResolver(r, gate).withPreBind(h.ClientSet(), h.SharedInformerFactory().Core().V1().Nodes().Lister())
	pl.activator = h
	pl.apiCacher = h.APICacher
	pl.localityMetadata = args.LocalityMetadata
	if gate != nil {
		gate.OnChange(func() { pl.gateChanged(logger) })
	}
	logger.V(2).Info("Plugin ready", "fencing", gate != nil, "localityMetadata", args.LocalityMetadata)
	return pl, nil
}

// NewWithResolver builds the plugin over an existing resolver and gate (nil:
// nothing is fenced), for tests and embedding; it re-queues no pod and sets
// no domain label (PreBind does nothing without the scheduler's clientset).
func NewWithResolver(r *ordinaltarget.Resolver, gate member.Gate) *SubsetPlacement {
	return &SubsetPlacement{resolver: r, gate: gate, fenced: map[string]*v1.Pod{}}
}

// EventsToRegister returns the events that can make a pod this plugin
// rejected schedulable. The end of a fence is not among them: the plugin
// re-queues the pods it fenced itself (see gateChanged).
func (pl *SubsetPlacement) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A missing or invalid placement is fixed by creating or updating it;
		// an update may also widen the domains or change the ordinal map.
		{Event: fwk.ClusterEvent{Resource: subsetPlacementEvents, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: isSchedulableAfterPlacementChange},
		// A new node, or a node relabelled into a domain, may be the one the
		// pod's ordinal needs. Taints are not ours to check: TaintToleration
		// registers its own events.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterPlacementChange queues the pod only when the changed
// placement is the one it names, in its namespace.
func isSchedulableAfterPlacementChange(logger klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	if !ordinaltarget.Managed(pod) {
		return fwk.QueueSkip, nil
	}
	var ns, name string
	switch o := newObj.(type) {
	case *unstructured.Unstructured:
		ns, name = o.GetNamespace(), o.GetName()
	case *fleetv1.SubsetPlacement:
		ns, name = o.Namespace, o.Name
	default:
		return fwk.Queue, fmt.Errorf("unexpected object %T for a SubsetPlacement event", newObj)
	}
	if ns == pod.Namespace && name == pod.Labels[fleetv1.LabelPlacement] {
		logger.V(5).Info("SubsetPlacement of the pod changed", "pod", klog.KObj(pod), "placement", klog.KRef(ns, name))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterNodeChange returns Queue for a managed pod only when the
// node, added or relabelled, is one its placement admits (the node's domain
// label, the ordinal's domain under DoNotSchedule, the nodeSelector: what
// Filter checks) and, for a relabel, was not admitted before; QueueSkip
// otherwise, as PodTopologySpread does for its topology keys. The pod's
// placement is read from the cache only. A placement missing or unusable,
// or an ordinal the placement cannot use, is QueueSkip: no node fixes it (a
// placement event or a pod update does), and neither does a node while the
// placement is fenced (the end of the fence re-queues the pod). Other
// read errors return Queue.
func (pl *SubsetPlacement) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	if !ordinaltarget.Managed(pod) {
		return fwk.QueueSkip, nil
	}
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newNode == nil {
		return fwk.QueueSkip, nil // a deletion admits no pod
	}
	t, err := pl.resolver.ResolveCached(context.Background(), pod)
	if err != nil {
		var userErr *ordinaltarget.UserError
		if apierrors.IsNotFound(err) || errors.As(err, &userErr) {
			return fwk.QueueSkip, nil
		}
		return fwk.Queue, err
	}
	if reason := nodeMismatch(t, newNode); reason != "" {
		logger.V(5).Info("Node not admitted by the pod's placement", "pod", klog.KObj(pod), "node", klog.KObj(newNode), "reason", reason)
		return fwk.QueueSkip, nil
	}
	if oldNode != nil && nodeMismatch(t, oldNode) == "" {
		return fwk.QueueSkip, nil // admitted before too: this plugin's verdict did not change
	}
	if pl.gate != nil {
		if ok, _ := pl.gate.Allows(t.Placement); !ok {
			return fwk.QueueSkip, nil
		}
	}
	logger.V(5).Info("Node now admitted by the pod's placement", "pod", klog.KObj(pod), "node", klog.KObj(newNode), "domain", t.Domain)
	return fwk.Queue, nil
}
