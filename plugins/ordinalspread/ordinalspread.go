// Package ordinalspread is the OrdinalSpread scheduler plugin: among the
// feasible nodes it scores first the nodes in the domain the pod's ordinal maps
// to (what makes whenUnsatisfiable ScheduleAnyway still prefer the right
// domain), then the nodes holding the fewest pods of the same set, in the
// manner of PodTopologySpread's scoring. Pods without the
// fleetset.io/placement label are skipped.
package ordinalspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/apis/config/validation"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Name is the name of the plugin in the registry and in configurations.
const Name = "OrdinalSpread"

const preScoreStateKey fwk.StateKey = "PreScore" + Name

// OrdinalSpread is the plugin.
type OrdinalSpread struct {
	resolver     *ordinaltarget.Resolver
	domainWeight int64
	// nodes lists every node of the cycle's snapshot, for counting a
	// spread-only set per domain; nil: count over the nodes PreScore gets.
	nodes framework.SharedLister
}

var _ framework.PreScorePlugin = &OrdinalSpread{}
var _ framework.ScorePlugin = &OrdinalSpread{}

// Name returns the plugin name.
func (pl *OrdinalSpread) Name() string { return Name }

// New builds the plugin from *config.OrdinalSpreadArgs (validated here).
// Errors: wrong args type, invalid args, or failing to build the
// SubsetPlacement informer.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*config.OrdinalSpreadArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type OrdinalSpreadArgs, got %T", obj)
	}
	if err := validation.ValidateOrdinalSpreadArgs(nil, args); err != nil {
		return nil, err
	}
	r, err := ordinaltarget.ForHandle(ctx, Name, h)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Plugin ready", "plugin", Name, "domainWeight", args.DomainWeight)
	pl := NewWithResolver(r, args.DomainWeight)
	pl.nodes = h.SnapshotSharedLister()
	return pl, nil
}

// NewWithResolver builds the plugin over an existing resolver; domainWeight
// is OrdinalSpreadArgs.DomainWeight (0–100).
func NewWithResolver(r *ordinaltarget.Resolver, domainWeight int32) *OrdinalSpread {
	return &OrdinalSpread{resolver: r, domainWeight: int64(domainWeight)}
}

// preScoreState is computed once per cycle by PreScore.
type preScoreState struct {
	target *ordinaltarget.Target
	// setKey, setValue select the pods counted as "of the same set".
	setKey, setValue string
	// perDomain counts the set's pods in each value of the topology key;
	// only for a placement without domains (spread only), else nil.
	perDomain map[string]int64
}

// Clone returns the same state: it is never modified after PreScore.
func (s *preScoreState) Clone() fwk.StateData { return s }

// mismatch is added to a node's raw score when the node is outside the
// ordinal's domain; raw scores below it are pod counts. NormalizeScore splits
// the two again. A node never holds 2^32 pods.
const mismatch int64 = 1 << 32

// PreScore resolves the pod's target domain and, for a placement without
// domains, counts the set's pods per value of the topology key over all nodes
// (as PodTopologySpread's PreScore does). Unmanaged pods get Skip, and so do
// pods whose placement cannot be resolved (SubsetPlacement's PreFilter
// already rejects those when it is enabled).
func (pl *OrdinalSpread) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, filtered []fwk.NodeInfo) *fwk.Status {
	if !ordinaltarget.Managed(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	t, err := pl.resolver.Resolve(ctx, pod)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Not scoring: placement unresolved", "plugin", Name, "pod", klog.KObj(pod), "err", err)
		return fwk.NewStatus(fwk.Skip)
	}
	s := &preScoreState{target: t, setKey: fleetv1.LabelPlacement, setValue: pod.Labels[fleetv1.LabelPlacement]}
	if v, ok := pod.Labels[fleetv1.LabelSet]; ok {
		s.setKey, s.setValue = fleetv1.LabelSet, v
	}
	if t.Domain == "" {
		all := filtered
		if pl.nodes != nil {
			var err error
			if all, err = pl.nodes.NodeInfos().List(); err != nil {
				return fwk.AsStatus(fmt.Errorf("listing nodes: %w", err))
			}
		}
		s.perDomain = make(map[string]int64)
		for _, ni := range all {
			if d, ok := ni.Node().Labels[t.TopologyKey]; ok {
				s.perDomain[d] += s.countSet(pod.Namespace, ni)
			}
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// countSet returns how many live pods of the set in namespace ns the node holds.
func (s *preScoreState) countSet(ns string, nodeInfo fwk.NodeInfo) int64 {
	var n int64
	for _, pi := range nodeInfo.GetPods() {
		p := pi.GetPod()
		if p.Namespace == ns && p.Labels[s.setKey] == s.setValue && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// Score returns the node's raw score: the number of pods of the same set in
// the pod's namespace on the node (in the node's domain, for a placement
// without domains), plus `mismatch` when the node is outside the ordinal's
// domain. Lower is better; NormalizeScore inverts it.
func (pl *OrdinalSpread) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	c, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, fwk.AsStatus(fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err))
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return 0, fwk.AsStatus(fmt.Errorf("%+v convert to ordinalspread.preScoreState error", c))
	}
	if s.perDomain != nil {
		return s.perDomain[nodeInfo.Node().Labels[s.target.TopologyKey]], nil
	}
	raw := s.countSet(pod.Namespace, nodeInfo)
	if nodeInfo.Node().Labels[s.target.TopologyKey] != s.target.Domain {
		raw += mismatch
	}
	return raw, nil
}

// ScoreExtensions returns the plugin itself, for NormalizeScore.
func (pl *OrdinalSpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps raw scores to [0, MaxNodeScore]: domainWeight points
// for a node in the ordinal's domain, plus up to 100-domainWeight points
// scaled from the fewest (full points) to the most (none) same-set pods among
// the scored nodes.
func (pl *OrdinalSpread) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	minPods, maxPods := int64(-1), int64(0)
	for _, s := range scores {
		n := s.Score % mismatch
		if minPods < 0 || n < minPods {
			minPods = n
		}
		maxPods = max(maxPods, n)
	}
	spreadWeight := framework.MaxNodeScore - pl.domainWeight
	for i := range scores {
		n, out := scores[i].Score%mismatch, scores[i].Score >= mismatch
		var score int64
		if !out {
			score = pl.domainWeight
		}
		if maxPods > minPods {
			score += spreadWeight * (maxPods - n) / (maxPods - minPods)
		} else {
			score += spreadWeight
		}
		scores[i].Score = score
	}
	return nil
}
