package ordinalspread

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestCountMemo: a node's count is reused while its NodeInfo keeps its
// generation, recounted when a pod is added or removed (a new generation)
// or the node object is replaced, and kept per set.
func TestCountMemo(t *testing.T) {
	member := func(name, set string) *v1.Pod {
		return st.MakePod().Namespace("default").Name(name).UID(name).Node("a1").Label(fleetv1.LabelSet, set).Obj()
	}
	ni := framework.NewNodeInfo(member("db-0", "db"), member("web-0", "web"))
	ni.SetNode(st.MakeNode().Name("a1").Obj())
	db := setMatcher{namespace: "default", key: fleetv1.LabelSet, value: "db"}
	web := setMatcher{namespace: "default", key: fleetv1.LabelSet, value: "web"}
	var m countMemo
	counts := func(set setMatcher) []int64 {
		var got []int64
		m.counts(set, []fwk.NodeInfo{ni}, 1, func(_ fwk.NodeInfo, n int64) { got = append(got, n) })
		return got
	}
	check := func(step string, set setMatcher, want int64) {
		t.Helper()
		if diff := cmp.Diff([]int64{want}, counts(set)); diff != "" {
			t.Errorf("%s: counts (-want,+got):\n%s", step, diff)
		}
	}
	check("first count", db, 1)
	check("other set", web, 1)
	// A stale entry would show if the memo ignored the generation: poison
	// it and check that it is served only at that generation.
	m.sets[db][ni.Node()] = genCount{generation: ni.GetGeneration(), pods: 7}
	check("same generation: remembered", db, 7)
	ni.AddPod(member("db-1", "db"))
	check("pod added: recounted", db, 2)
	if err := ni.RemovePod(klog.Background(), member("db-0", "db")); err != nil {
		t.Fatal(err)
	}
	check("pod removed: recounted", db, 1)
	m.sets[db][ni.Node()] = genCount{generation: ni.GetGeneration(), pods: 7}
	ni.SetNode(st.MakeNode().Name("a1").Label("x", "y").Obj())
	check("node replaced: recounted", db, 1)
}
