package ordinalspread

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// maxMemoSets bounds how many sets a countMemo remembers.
const maxMemoSets = 64

// countMemo remembers, per set, how many of the set's pods each node held at
// a NodeInfo generation, so that a cycle counts the pods of only the nodes
// whose pods changed since the set was last scored. The scheduler's
// snapshot gives a NodeInfo a new generation on every change of its pods or
// node, and keeps the *v1.Node of an unchanged node, so (node pointer,
// generation) identifies what the node holds; looking it up touches neither
// the node's labels nor its pods. Safe for concurrent use.
type countMemo struct {
	mu   sync.Mutex
	sets map[setMatcher]map[*v1.Node]genCount
}

// genCount is the number of a set's pods on a node at a NodeInfo generation.
type genCount struct {
	generation, pods int64
}

// counts calls each, in order, for every node of nodes with the number of
// set's pods it holds, counting only the nodes the memo does not know at
// their current generation. numNodes is the cluster's node count: a set's
// memo holding more than twice as many entries (nodes replaced since) is
// dropped and rebuilt.
func (m *countMemo) counts(set setMatcher, nodes []fwk.NodeInfo, numNodes int, each func(ni fwk.NodeInfo, pods int64)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sets == nil {
		m.sets = map[setMatcher]map[*v1.Node]genCount{}
	}
	memo, ok := m.sets[set]
	if !ok || len(memo) > 2*numNodes+16 {
		if !ok && len(m.sets) >= maxMemoSets {
			for k := range m.sets { // forget one set, any
				delete(m.sets, k)
				break
			}
		}
		memo = make(map[*v1.Node]genCount, len(nodes))
		m.sets[set] = memo
	}
	for _, ni := range nodes {
		node, gen := ni.Node(), ni.GetGeneration()
		c, ok := memo[node]
		if !ok || c.generation != gen {
			c = genCount{generation: gen, pods: set.count(ni)}
			memo[node] = c
		}
		each(ni, c.pods)
	}
}
