package subsetplacement

import (
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// nodeIndex holds, for the node list of the scheduler's snapshot, the names
// of the nodes per value of each topology key the placements use, so that
// PreFilter finds a domain's nodes with a map lookup instead of reading the
// labels of every node in every cycle.
//
// It is built from the nodes PreFilter receives (the cycle's snapshot), not
// from an informer, so it never names a node the snapshot lacks nor misses
// one the snapshot holds. Each call first checks that the list is the one
// indexed: the snapshot keeps a node's *v1.Node until the Node object
// changes, so comparing one pointer per node detects every change. A
// changed node whose indexed label values are the same (a status update)
// keeps the index; any other change (a node added, removed or relabelled)
// rebuilds it, lazily, per topology key.
//
// Safe for concurrent use. What it returns may be its own: callers must
// not modify it (the framework clones a PreFilterResult's set). The index
// never modifies a set once returned: a node's new pointer goes into a copy.
type nodeIndex struct {
	mu sync.Mutex
	// nodes are the Node() of each NodeInfo of the list indexed, in order.
	nodes []*v1.Node
	// byValue maps a topology key to its values' nodes.
	byValue map[string]map[string]*nodeSet
	// withKey maps a topology key to the nodes carrying it.
	withKey map[string]*nodeSet
}

// nodeSet is a set of nodes of one snapshot, by name (for a
// PreFilterResult) and by *v1.Node (for Filter: a lookup that does not read
// the node's memory).
type nodeSet struct {
	names sets.Set[string]
	nodes map[*v1.Node]struct{}
}

// newNodeSet returns an empty nodeSet.
func newNodeSet() *nodeSet {
	return &nodeSet{names: sets.New[string](), nodes: map[*v1.Node]struct{}{}}
}

// insert adds n to the set.
func (s *nodeSet) insert(n *v1.Node) {
	s.names.Insert(n.Name)
	s.nodes[n] = struct{}{}
}

// emptyNodeSet is returned when no node is admitted.
var emptyNodeSet = newNodeSet()

// allowed returns the nodes in nodes that t admits: exactly those
// nodeMismatch accepts. The set may be the index's own: read only.
func (x *nodeIndex) allowed(nodes []fwk.NodeInfo, t *ordinaltarget.Target) *nodeSet {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.sync(nodes)
	byValue := x.values(t.TopologyKey)
	var candidates *nodeSet
	switch {
	case t.Strict:
		candidates = byValue[t.Domain]
	case t.Domains == nil:
		candidates = x.withKey[t.TopologyKey]
	default:
		candidates = newNodeSet()
		for d := range t.Domains {
			if s := byValue[d]; s != nil {
				for n := range s.nodes {
					candidates.insert(n)
				}
			}
		}
	}
	if candidates == nil || len(candidates.nodes) == 0 {
		return emptyNodeSet
	}
	if t.NodeSelector == nil {
		return candidates
	}
	out := newNodeSet()
	for n := range candidates.nodes {
		if match, err := t.NodeSelector.Match(n); err == nil && match {
			out.insert(n)
		}
	}
	return out
}

// sync makes the index describe nodes (see nodeIndex).
func (x *nodeIndex) sync(nodes []fwk.NodeInfo) {
	if x.byValue != nil && len(nodes) == len(x.nodes) {
		var swaps map[*v1.Node]*v1.Node // old → new, same name and indexed values
		same := true
		for i, ni := range nodes {
			n, old := ni.Node(), x.nodes[i]
			if n == old {
				continue
			}
			if n == nil || old == nil || n.Name != old.Name || !x.sameValues(old, n) {
				same = false
				break
			}
			if swaps == nil {
				swaps = map[*v1.Node]*v1.Node{}
			}
			swaps[old] = n
		}
		if same {
			if swaps != nil {
				x.swap(swaps)
				for i, ni := range nodes {
					x.nodes[i] = ni.Node()
				}
			}
			return
		}
	}
	x.nodes = x.nodes[:0]
	for _, ni := range nodes {
		x.nodes = append(x.nodes, ni.Node())
	}
	x.byValue = map[string]map[string]*nodeSet{}
	x.withKey = map[string]*nodeSet{}
}

// swap replaces, in every set holding them, the old nodes by the new ones
// (same names, same indexed values), copying each set it changes once.
func (x *nodeIndex) swap(swaps map[*v1.Node]*v1.Node) {
	for key, byValue := range x.byValue {
		changed := map[string]bool{}
		for _, n := range swaps {
			if v, ok := n.Labels[key]; ok {
				changed[v] = true
			}
		}
		for v := range changed {
			byValue[v] = byValue[v].swapped(swaps)
		}
		if len(changed) > 0 {
			x.withKey[key] = x.withKey[key].swapped(swaps)
		}
	}
}

// swapped returns a copy of s with each old node of swaps it holds replaced
// by the new one. The names do not change, and are shared.
func (s *nodeSet) swapped(swaps map[*v1.Node]*v1.Node) *nodeSet {
	c := &nodeSet{names: s.names, nodes: maps.Clone(s.nodes)}
	for old, n := range swaps {
		if _, ok := c.nodes[old]; ok {
			delete(c.nodes, old)
			c.nodes[n] = struct{}{}
		}
	}
	return c
}

// sameValues reports whether nodes a and b carry the same values of every
// indexed topology key.
func (x *nodeIndex) sameValues(a, b *v1.Node) bool {
	for key := range x.byValue {
		va, oka := a.Labels[key]
		vb, okb := b.Labels[key]
		if va != vb || oka != okb {
			return false
		}
	}
	return true
}

// values returns the index of topology key key, building it (and
// withKey[key]) on first use.
func (x *nodeIndex) values(key string) map[string]*nodeSet {
	if m, ok := x.byValue[key]; ok {
		return m
	}
	m := map[string]*nodeSet{}
	all := newNodeSet()
	for _, n := range x.nodes {
		if n == nil {
			continue
		}
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		s, ok := m[v]
		if !ok {
			s = newNodeSet()
			m[v] = s
		}
		s.insert(n)
		all.insert(n)
	}
	x.byValue[key] = m
	x.withKey[key] = all
	return m
}
