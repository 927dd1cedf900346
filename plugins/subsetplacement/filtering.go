package subsetplacement

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Rejection reasons. Each is reported as UnschedulableAndUnresolvable:
// preempting other pods cannot change a node's domain.
const (
	// ErrReasonPlacement prefixes the reason when the placement is missing or
	// invalid, or the pod has no usable ordinal; the detail names which.
	ErrReasonPlacement = "fleetset placement unusable"
	// ErrReasonDomainNotAllowed is used for nodes outside the placement's domains.
	ErrReasonDomainNotAllowed = "node(s) outside the SubsetPlacement's domains"
	// ErrReasonOrdinalDomain is used for nodes outside the ordinal's domain.
	ErrReasonOrdinalDomain = "node(s) not in the domain of the pod's ordinal"
	// ErrReasonNodeSelector is used for nodes not matching the placement's nodeSelector.
	ErrReasonNodeSelector = "node(s) didn't match the SubsetPlacement's nodeSelector"
	// ErrReasonFenced prefixes the reason when the placement has
	// spec.fencing and the member component fences it (the member is cut
	// off from the hub, or fenced the placement and the hub has not yet
	// confirmed it); the detail says which, e.g. "fenced: cut off: no
	// contact with the hub for 1m0s while peer(s) west reach it".
	ErrReasonFenced = "fenced"
)

// preFilterStateKey is the cycle-state key of what PreFilter leaves for
// Filter. The pod's Target is not in it: PreFilter stores that once, for
// both plugins, with ordinaltarget.WritePreFilterState.
const preFilterStateKey fwk.StateKey = "PreFilter" + Name

// preFilterState is what PreFilter computes for Filter.
type preFilterState struct {
	// admitted are the nodes of the cycle's snapshot that the pod's Target
	// admits (shared with the node index: read only).
	admitted *nodeSet
}

// Clone returns the same state: it is never modified after PreFilter.
func (s *preFilterState) Clone() fwk.StateData { return s }

// PreFilter resolves the pod's placement, ordinal and ordinal domain once per
// cycle, stores the Target in the cycle state for Filter and OrdinalSpread
// (ordinaltarget.WritePreFilterState), and narrows the cycle to the nodes of
// the allowed domains (the ordinal's domain under DoNotSchedule) with a
// PreFilterResult, so the other Filter plugins run only on those nodes. The
// nodes come from a per-domain index of the snapshot's nodes (nodeIndex),
// not from reading every node's labels. Unmanaged pods get Skip; an
// unusable placement, a placement the member component fences, or no node
// in the allowed domains, makes the pod UnschedulableAndUnresolvable with
// the reason naming the placement, why it is fenced, or the domain.
func (pl *SubsetPlacement) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*framework.PreFilterResult, *fwk.Status) {
	if !ordinaltarget.Managed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	t, err := pl.resolver.Resolve(ctx, pod)
	if err != nil {
		var userErr *ordinaltarget.UserError
		if !apierrors.IsNotFound(err) && !errors.As(err, &userErr) {
			return nil, fwk.AsStatus(err)
		}
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %v", ErrReasonPlacement, err))
	}
	if t.Placement.Spec.Fencing != nil {
		if reason, fenced := pl.fence(pod, t.Placement); fenced {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonFenced+": "+reason)
		}
	}
	klog.FromContext(ctx).V(5).Info("Pod placement resolved", "plugin", Name, "pod", klog.KObj(pod),
		"placement", klog.KObj(t.Placement), "ordinal", t.Ordinal, "domain", t.Domain, "strict", t.Strict)
	admitted := pl.index.allowed(nodes, t)
	ordinaltarget.WritePreFilterState(state, t)
	state.Write(preFilterStateKey, &preFilterState{admitted: admitted})
	if len(admitted.nodes) == 0 {
		reason := ErrReasonDomainNotAllowed
		if t.Strict {
			reason = fmt.Sprintf("%s (%s=%s)", ErrReasonOrdinalDomain, t.TopologyKey, t.Domain)
		}
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return &framework.PreFilterResult{NodeNames: admitted.names}, nil
}

// PreFilterExtensions returns nil: adding or removing other pods never
// changes which domains a pod may use.
func (pl *SubsetPlacement) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter admits the node only inside the placement's domains and node
// selector and, when strict, only in the ordinal's domain.
// A node PreFilter admitted passes with one lookup by pointer, which reads
// nothing of the node; any other node (one the cycle's snapshot did not
// hold as is) has its labels checked against the Target PreFilter stored.
func (pl *SubsetPlacement) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := nodeInfo.Node()
	if _, ok := s.admitted.nodes[node]; ok {
		return nil
	}
	t, ok, err := ordinaltarget.GetPreFilterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if !ok {
		return fwk.AsStatus(errors.New("no fleetset target in cycleState: PreFilter did not store it"))
	}
	if reason := nodeMismatch(t, node); reason != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil
}

// getPreFilterState returns what PreFilter stored under preFilterStateKey.
// The error says it is missing (PreFilter did not run) or of another type.
func getPreFilterState(cycleState fwk.CycleState) (*preFilterState, error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to subsetplacement.preFilterState error", c)
	}
	return s, nil
}
