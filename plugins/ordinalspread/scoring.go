package ordinalspread

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// preScoreStateKey is the cycle-state key of what PreScore leaves for Score.
const preScoreStateKey fwk.StateKey = "PreScore" + Name

// preScoreState is computed once per cycle by PreScore; Score only looks
// nodes up in it.
type preScoreState struct {
	// counts maps each scored node holding pods of the set to their number;
	// a node absent holds none. Nil for a placement without domains.
	counts map[*v1.Node]int64
	// perDomain counts the set's pods in each value of the topology key;
	// only for a placement without domains (spread only), else nil.
	perDomain map[string]int64
	// topologyKey is the placement's topology key.
	topologyKey string
	// domain is the ordinal's domain; checkDomain is false when every
	// scored node is known to be in it (SubsetPlacement admitted only those).
	domain      string
	checkDomain bool
}

// Clone returns the same state: it is never modified after PreScore.
func (s *preScoreState) Clone() fwk.StateData { return s }

// mismatch is added to a node's raw score when the node is outside the
// ordinal's domain; raw scores below it are pod counts. NormalizeScore splits
// the two again. A node never holds 2^32 pods.
const mismatch int64 = 1 << 32

// PreScore takes the pod's target from the cycle state SubsetPlacement's
// PreFilter wrote (resolving the placement itself only when SubsetPlacement
// did not run), then counts the set's pods once per cycle: per scored node,
// or, for a placement without domains, per value of the topology key over
// all nodes (as PodTopologySpread's PreScore does). Counts are remembered
// per node between cycles (countMemo): a cycle recounts only the nodes whose
// pods changed. It returns Skip when the
// score could not rank the nodes: every scored node holds as many pods of
// the set and all are in the ordinal's domain, or all outside it. Unmanaged
// pods get Skip, and so do pods whose placement cannot be resolved
// (SubsetPlacement's PreFilter already rejects those when it is enabled).
func (pl *OrdinalSpread) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, filtered []fwk.NodeInfo) *fwk.Status {
	if !ordinaltarget.Managed(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	t, filteredByTarget, err := ordinaltarget.GetPreFilterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if !filteredByTarget {
		if t, err = pl.resolver.Resolve(ctx, pod); err != nil {
			klog.FromContext(ctx).V(4).Info("Not scoring: placement unresolved", "plugin", Name, "pod", klog.KObj(pod), "err", err)
			return fwk.NewStatus(fwk.Skip)
		}
	}
	set := newSetMatcher(pod)
	s := &preScoreState{topologyKey: t.TopologyKey, domain: t.Domain}
	all := filtered
	if pl.nodes != nil {
		var err error
		if all, err = pl.nodes.NodeInfos().List(); err != nil {
			return fwk.AsStatus(fmt.Errorf("listing nodes: %w", err))
		}
	}
	if t.Domain == "" {
		s.perDomain = make(map[string]int64)
		pl.memo.counts(set, all, len(all), func(ni fwk.NodeInfo, n int64) {
			if n == 0 {
				return // no need to read the node's labels
			}
			if d, ok := ni.Node().Labels[t.TopologyKey]; ok {
				s.perDomain[d] += n
			}
		})
		first, uniform := int64(-1), true
		for _, ni := range filtered {
			n := s.perDomain[ni.Node().Labels[t.TopologyKey]]
			if first < 0 {
				first = n
			}
			uniform = uniform && n == first
		}
		if uniform {
			return fwk.NewStatus(fwk.Skip)
		}
		state.Write(preScoreStateKey, s)
		return nil
	}
	// SubsetPlacement's Filter admitted only the ordinal's domain when strict.
	s.checkDomain = !(filteredByTarget && t.Strict)
	var minPods, maxPods int64 = -1, 0
	in, out := 0, 0
	pl.memo.counts(set, filtered, len(all), func(ni fwk.NodeInfo, n int64) {
		if n > 0 {
			if s.counts == nil {
				s.counts = make(map[*v1.Node]int64)
			}
			s.counts[ni.Node()] = n
		}
		if minPods < 0 || n < minPods {
			minPods = n
		}
		maxPods = max(maxPods, n)
		if s.checkDomain {
			if ni.Node().Labels[t.TopologyKey] == t.Domain {
				in++
			} else {
				out++
			}
		}
	})
	if minPods == maxPods && (in == 0 || out == 0) {
		return fwk.NewStatus(fwk.Skip)
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score returns the node's raw score from PreScore's counts: the number of
// pods of the same set in the pod's namespace on the node (in the node's
// domain, for a placement without domains), plus `mismatch` when the node
// is outside the ordinal's domain. Lower is better; NormalizeScore inverts it.
func (pl *OrdinalSpread) Score(_ context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := getPreScoreState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	node := nodeInfo.Node()
	if s.perDomain != nil {
		return s.perDomain[node.Labels[s.topologyKey]], nil
	}
	raw := s.counts[node]
	if s.checkDomain && node.Labels[s.topologyKey] != s.domain {
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

// getPreScoreState returns what PreScore stored under preScoreStateKey. The
// error says it is missing (PreScore did not run, or skipped) or of another
// type.
func getPreScoreState(cycleState fwk.CycleState) (*preScoreState, error) {
	c, err := cycleState.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to ordinalspread.preScoreState error", c)
	}
	return s, nil
}
