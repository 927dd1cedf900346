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
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// The locality labels. Before a managed pod is bound, PreBind sets its label
// fleetset.io/domain (v1alpha1.LabelDomain) to the domain its ordinal belongs
// to, and fleetset.io/cluster (v1alpha1.LabelCluster) to its
// SubsetPlacement's spec.cluster, so that the pod's containers can read
// them through the downward API.
// The label must be on the pod before the kubelet starts it: an env var
// from fieldRef metadata.labels is resolved once, when the container is
// created. So a patch that fails fails PreBind: the pod is not bound, goes
// back to the queue (backoff) and is scheduled again, rather than run
// without the label its workload may rely on. The failure is in the pod's
// FailedScheduling event (e.g. the scheduler's ServiceAccount may not patch
// pods, or an admission policy refused the label).

// PreBindPreFlight returns Skip when PreBind has nothing to do for the pod
// on nodeName: the pod is not managed, PreFilter stored no target, the
// plugin has no client (NewWithResolver), or the pod already carries the
// right fleetset.io/domain label. It returns Success when PreBind will
// patch the label, and an error when the domain cannot be known (a
// placement without domains, and the node or its topology key gone).
func (pl *SubsetPlacement) PreBindPreFlight(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	_, status := pl.domainLabel(ctx, state, pod, nodeName)
	return status
}

// PreBind sets the pod's label fleetset.io/domain with a JSON merge patch
// of metadata.labels, through the scheduler's clientset, unless
// PreBindPreFlight's conditions say there is nothing to do. The domain is
// the one the placement's seat sequence gives the pod's ordinal (the
// Target's Domain, known before scheduling; under ScheduleAnyway the pod
// may run in another domain and still carries its ordinal's), or, for a
// placement without domains, the value of the topology key on nodeName. A
// failed patch returns an error: the pod is retried, not bound.
func (pl *SubsetPlacement) PreBind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	domain, status := pl.domainLabel(ctx, state, pod, nodeName)
	if !status.IsSuccess() {
		if status.IsSkip() {
			return nil
		}
		return status
	}
	labels := map[string]string{fleetv1.LabelDomain: domain}
	if cluster := pl.clusterOf(ctx, pod); cluster != "" {
		labels[fleetv1.LabelCluster] = cluster
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

// domainLabel returns the value of fleetset.io/domain the pod must carry
// when bound to nodeName, with Success, or a Skip status when there is
// nothing to patch (see PreBindPreFlight), or an error status.
func (pl *SubsetPlacement) domainLabel(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (string, *fwk.Status) {
	if pl.client == nil || !ordinaltarget.Managed(pod) {
		return "", fwk.NewStatus(fwk.Skip)
	}
	t, ok, err := ordinaltarget.GetPreFilterState(state)
	if err != nil {
		return "", fwk.AsStatus(err)
	}
	if !ok {
		return "", fwk.NewStatus(fwk.Skip)
	}
	domain := t.Domain
	if domain == "" {
		// Spread only: the domain is the node's, read from the informer
		// (the binding cycle runs beside the next scheduling cycle, which
		// owns the snapshot).
		if pl.nodes == nil {
			return "", fwk.NewStatus(fwk.Skip)
		}
		node, err := pl.nodes.Get(nodeName)
		if err != nil {
			return "", fwk.AsStatus(fmt.Errorf("reading node %s for the domain label: %w", nodeName, err))
		}
		if domain, ok = node.Labels[t.TopologyKey]; !ok || domain == "" {
			return "", fwk.AsStatus(fmt.Errorf("node %s has no label %s: no domain for pod %s/%s", nodeName, t.TopologyKey, pod.Namespace, pod.Name))
		}
	}
	if v, ok := pod.Labels[fleetv1.LabelDomain]; ok && v == domain && pod.Labels[fleetv1.LabelCluster] == pl.clusterOf(ctx, pod) {
		return "", fwk.NewStatus(fwk.Skip)
	}
	return domain, nil
}

// withPreBind gives pl the clientset PreBind patches pods with and the node
// lister it reads a spread-only pod's node from; returns pl.
func (pl *SubsetPlacement) withPreBind(client kubernetes.Interface, nodes corelisters.NodeLister) *SubsetPlacement {
	pl.client, pl.nodes = client, nodes
	return pl
}
