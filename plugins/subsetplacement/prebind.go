package subsetplacement

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Locality. A managed pod carries its ordinal's domain as fleetset.io/domain
// (v1alpha1.LabelDomain) and its SubsetPlacement's spec.cluster as
// fleetset.io/cluster (v1alpha1.LabelCluster), so that its containers can
// read them through the downward API:
//   - as annotations, always: Bind creates the pod's Binding with them, and
//     the apiserver copies a Binding's annotations onto the pod in the same
//     write that sets spec.nodeName;
//   - as labels too, unless the plugin's args say LocalityMetadata
//     Annotations: PreBind patches them before the Binding (one more pod
//     write per pod, the price of selecting pods by domain).
// Both must be on the pod before the kubelet starts it: an env var from a
// fieldRef is resolved once, when the container is created. So a patch or
// a Binding that fails fails the binding cycle: the pod is not bound, goes
// back to the queue (backoff) and is scheduled again, rather than run
// without the locality its workload may rely on. The failure is in the
// pod's FailedScheduling event (e.g. the scheduler's ServiceAccount may not
// patch pods, or an admission policy refused the label).

// PreBindPreFlight returns Skip when PreBind has nothing to do for the pod
// on nodeName: the plugin sets annotations only (LocalityAnnotations), the
// pod is not managed, PreFilter stored no target, the plugin has no client
// (NewWithResolver), or the pod already carries the right locality labels.
// It returns Success when PreBind will patch the labels, and an error when
// the domain cannot be known (a placement without domains, and the node or
// its topology key gone).
func (pl *SubsetPlacement) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	_, status := pl.labelsToPatch(ctx, state, pod, nodeName)
	return status
}

// PreBind sets the pod's locality labels (fleetset.io/domain and, when the
// placement names its cluster, fleetset.io/cluster) with a JSON merge patch
// of metadata.labels, through the scheduler's clientset, unless
// PreBindPreFlight's conditions say there is nothing to do. The domain is
// the one the placement's seat sequence gives the pod's ordinal (the
// Target's Domain, known before scheduling; under ScheduleAnyway the pod
// may run in another domain and still carries its ordinal's), or, for a
// placement without domains, the value of the topology key on nodeName. A
// failed patch returns an error: the pod is retried, not bound.
func (pl *SubsetPlacement) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	labels, status := pl.labelsToPatch(ctx, state, pod, nodeName)
	if !status.IsSuccess() {
		if status.IsSkip() {
			return nil
		}
		return status
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	if _, err := pl.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("setting labels %v on pod %s/%s: %w", labels, pod.Namespace, pod.Name, err))
	}
	klog.FromContext(ctx).V(4).Info("Locality labels set", "pod", klog.KObj(pod), "node", nodeName, "labels", labels)
	return nil
}

// Bind binds a managed pod to nodeName with a Binding that carries the
// pod's locality (fleetset.io/domain and fleetset.io/cluster, as PreBind
// computes them) as annotations, which the apiserver copies onto the pod
// as it sets spec.nodeName: one write, as DefaultBinder's. Like
// DefaultBinder it goes through the scheduler's API cacher when it has one
// (SchedulerAsyncAPICalls). It returns Skip, leaving the pod to the next
// bind plugin (DefaultBinder), for a pod that is not managed, without a
// PreFilter target, or when the plugin has no client; an error when the
// domain cannot be known or the Binding fails (the pod is retried).
func (pl *SubsetPlacement) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	locality, status := pl.locality(ctx, state, pod, nodeName)
	if !status.IsSuccess() {
		return status
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Annotations: locality},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	var cacher framework.APICacher
	if pl.apiCacher != nil {
		cacher = pl.apiCacher()
	}
	if cacher != nil {
		onFinish, err := cacher.BindPod(binding)
		if err == nil {
			err = cacher.WaitOnFinish(ctx, onFinish)
		}
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, nodeName, err))
		}
	} else if err := pl.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("binding pod %s/%s to %s: %w", pod.Namespace, pod.Name, nodeName, err))
	}
	klog.FromContext(ctx).V(4).Info("Pod bound with its locality", "pod", klog.KObj(pod), "node", nodeName, "annotations", locality)
	return nil
}

// clusterOf returns spec.cluster of the pod's SubsetPlacement, "" when it
// is unknown (not in the cache, or delivered by a hub that does not set it).
func (pl *SubsetPlacement) clusterOf(ctx context.Context, pod *v1.Pod) string {
	if pl.resolver == nil {
		return ""
	}
	sp := &fleetv1.SubsetPlacement{}
	if err := pl.resolver.Reader().Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.Labels[fleetv1.LabelPlacement]}, sp); err != nil {
		return ""
	}
	return sp.Spec.Cluster
}

// labelsToPatch returns the locality labels PreBind must patch onto the
// pod bound to nodeName, with Success, or a Skip status when there is
// nothing to patch (see PreBindPreFlight), or an error status.
func (pl *SubsetPlacement) labelsToPatch(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (map[string]string, *fwk.Status) {
	if pl.localityMetadata == config.LocalityAnnotations {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	want, status := pl.locality(ctx, state, pod, nodeName)
	if !status.IsSuccess() {
		return nil, status
	}
	if pod.Labels[fleetv1.LabelDomain] == want[fleetv1.LabelDomain] && pod.Labels[fleetv1.LabelCluster] == want[fleetv1.LabelCluster] {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return want, nil
}

// localityStateKey is the cycle-state key under which locality keeps what
// it computed for the binding cycle (localityState), so that
// PreBindPreFlight, PreBind and Bind read the node and the placement once.
const localityStateKey fwk.StateKey = Name + "/locality"

// localityState is a pod's locality when bound to node.
type localityState struct {
	node     string
	locality map[string]string
}

// Clone returns s: it is written once and never changed.
func (s *localityState) Clone() fwk.StateData { return s }

// locality returns the pod's locality when bound to nodeName, by key:
// fleetset.io/domain always, fleetset.io/cluster when its placement names
// its cluster (read-only: callers must not change the map). The status is
// Skip when the pod is not managed, PreFilter stored no target, or the
// plugin has no client (NewWithResolver), and an error when the domain
// cannot be known. A result is kept in state for the rest of the cycle.
func (pl *SubsetPlacement) locality(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (map[string]string, *fwk.Status) {
	if pl.client == nil || !ordinaltarget.Managed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if c, err := state.Read(localityStateKey); err == nil {
		if ls, ok := c.(*localityState); ok && ls.node == nodeName {
			return ls.locality, nil
		}
	}
	t, ok, err := ordinaltarget.GetPreFilterState(state)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	domain := t.Domain
	if domain == "" {
		// Spread only: the domain is the node's, read from the informer
		// (the binding cycle runs beside the next scheduling cycle, which
		// owns the snapshot).
		if pl.nodes == nil {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		node, err := pl.nodes.Get(nodeName)
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("reading node %s for the domain label: %w", nodeName, err))
		}
		if domain, ok = node.Labels[t.TopologyKey]; !ok || domain == "" {
			return nil, fwk.AsStatus(fmt.Errorf("node %s has no label %s: no domain for pod %s/%s", nodeName, t.TopologyKey, pod.Namespace, pod.Name))
		}
	}
	out := map[string]string{fleetv1.LabelDomain: domain}
	if cluster := pl.clusterOf(ctx, pod); cluster != "" {
		out[fleetv1.LabelCluster] = cluster
	}
	state.Write(localityStateKey, &localityState{node: nodeName, locality: out})
	return out, nil
}

// withPreBind gives pl the clientset PreBind patches pods with and the node
// lister it reads a spread-only pod's node from; returns pl.
func (pl *SubsetPlacement) withPreBind(client kubernetes.Interface, nodes corelisters.NodeLister) *SubsetPlacement {
	pl.client, pl.nodes = client, nodes
	return pl
}
