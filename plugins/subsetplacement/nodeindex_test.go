package subsetplacement

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// TestPreFilterFollowsNodeChanges runs one plugin's PreFilter and Filter
// over successive node lists, as successive snapshots give them: its node
// index must admit exactly the nodes whose labels put them in the pod's
// domain after every kind of change, and Filter must agree with it for the
// nodes of each list.
func TestPreFilterFollowsNodeChanges(t *testing.T) {
	abc := makePlacement("abc", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	soft := makePlacement("soft", fleetv1.ScheduleAnyway, 0, dom("zone-a"), dom("zone-b"))
	ssd := makePlacement("ssd", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	ssd.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}},
	}}}
	pl := NewWithResolver(plugintest.Resolver(t, abc, soft, ssd), nil)
	node := func(name, zone string, labels ...string) *v1.Node {
		w := st.MakeNode().Name(name).Label(v1.LabelTopologyZone, zone)
		for i := 0; i+1 < len(labels); i += 2 {
			w = w.Label(labels[i], labels[i+1])
		}
		return w.Obj()
	}
	a1, a2, b1 := node("a1", "zone-a"), node("a2", "zone-a"), node("b1", "zone-b")
	a1Status := a1.DeepCopy() // a new object, same labels: a status update
	a1Status.Status.Phase = v1.NodeRunning
	a2Moved := node("a2", "zone-b") // relabelled into zone-b
	a2SSD := node("a2", "zone-a", "disk", "ssd")
	a3 := node("a3", "zone-a")

	zoneA := pod("db-0", "abc", "0") // ordinal 0 → zone-a
	zoneB := pod("db-1", "abc", "1") // ordinal 1 → zone-b
	anyAB := pod("db-0", "soft", "0")
	onSSD := pod("db-0", "ssd", "0") // zone-a, disk=ssd

	steps := []struct {
		name  string
		nodes []*v1.Node
		pod   *v1.Pod
		want  []string // admitted; nil: PreFilter rejects
	}{
		{name: "first list", nodes: []*v1.Node{a1, a2, b1}, pod: zoneA, want: []string{"a1", "a2"}},
		{name: "same list, other domain", nodes: []*v1.Node{a1, a2, b1}, pod: zoneB, want: []string{"b1"}},
		{name: "status update keeps the index", nodes: []*v1.Node{a1Status, a2, b1}, pod: zoneA, want: []string{"a1", "a2"}},
		{name: "relabel moves the node", nodes: []*v1.Node{a1Status, a2Moved, b1}, pod: zoneA, want: []string{"a1"}},
		{name: "relabel seen from the other domain", nodes: []*v1.Node{a1Status, a2Moved, b1}, pod: zoneB, want: []string{"a2", "b1"}},
		{name: "node added", nodes: []*v1.Node{a1Status, a2Moved, b1, a3}, pod: zoneA, want: []string{"a1", "a3"}},
		{name: "node removed", nodes: []*v1.Node{a2Moved, b1, a3}, pod: zoneA, want: []string{"a3"}},
		{name: "union of domains", nodes: []*v1.Node{a1, a2, b1, a3}, pod: anyAB, want: []string{"a1", "a2", "a3", "b1"}},
		{name: "nodeSelector on the domain's nodes", nodes: []*v1.Node{a1, a2SSD, b1}, pod: onSSD, want: []string{"a2"}},
		{name: "domain emptied", nodes: []*v1.Node{a2Moved, b1}, pod: zoneA, want: nil},
	}
	for _, step := range steps {
		nodeInfos := tf.BuildNodeInfos(step.nodes)
		state := framework.NewCycleState()
		result, status := pl.PreFilter(context.Background(), state, step.pod, nodeInfos)
		if step.want == nil {
			if status.Code() != fwk.UnschedulableAndUnresolvable {
				t.Fatalf("%s: PreFilter = %v, want UnschedulableAndUnresolvable", step.name, status)
			}
			continue
		}
		if !status.IsSuccess() {
			t.Fatalf("%s: PreFilter: %v", step.name, status)
		}
		if diff := cmp.Diff(step.want, sets.List(result.NodeNames)); diff != "" {
			t.Errorf("%s: admitted (-want,+got):\n%s", step.name, diff)
		}
		var passed []string
		for _, ni := range nodeInfos {
			ok := pl.Filter(context.Background(), state, step.pod, ni).IsSuccess()
			if ok {
				passed = append(passed, ni.Node().Name)
			}
			if labelsOK := nodeMismatch(mustTarget(t, state), ni.Node()) == ""; ok != labelsOK {
				t.Errorf("%s: Filter(%s) = %v, labels say %v", step.name, ni.Node().Name, ok, labelsOK)
			}
		}
		if diff := cmp.Diff(step.want, sets.List(sets.New(passed...))); diff != "" {
			t.Errorf("%s: Filter passed (-want,+got):\n%s", step.name, diff)
		}
	}
}

// TestNodeIndexSetsAreNotModified: a set the index returned keeps its
// contents when a later list changes a node's object (status update), so a
// cycle that still holds it never sees it change.
func TestNodeIndexSetsAreNotModified(t *testing.T) {
	a1 := st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj()
	a1Status := a1.DeepCopy()
	abc := makePlacement("abc", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	pl := NewWithResolver(plugintest.Resolver(t, abc), nil)
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), state, pod("db-0", "abc", "0"), tf.BuildNodeInfos([]*v1.Node{a1})); !status.IsSuccess() {
		t.Fatal(status)
	}
	first := mustPreFilterState(t, state).admitted
	if _, status := pl.PreFilter(context.Background(), framework.NewCycleState(), pod("db-0", "abc", "0"), tf.BuildNodeInfos([]*v1.Node{a1Status})); !status.IsSuccess() {
		t.Fatal(status)
	}
	if _, ok := first.nodes[a1]; !ok || len(first.nodes) != 1 {
		t.Errorf("the first cycle's set changed: %v", first.nodes)
	}
}

func mustPreFilterState(t *testing.T, state fwk.CycleState) *preFilterState {
	t.Helper()
	s, err := getPreFilterState(state)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustTarget(t *testing.T, state fwk.CycleState) *ordinaltarget.Target {
	t.Helper()
	tgt, ok, err := ordinaltarget.GetPreFilterState(state)
	if err != nil || !ok {
		t.Fatalf("PreFilter stored no target: %v", err)
	}
	return tgt
}
