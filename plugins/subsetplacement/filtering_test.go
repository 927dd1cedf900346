package subsetplacement

import (
	"context"
	"strings"
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
)

// TestFilter runs PreFilter and Filter in a real framework for each node and
// reports which nodes admit the pod (or the PreFilter rejection).
func TestFilter(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Label("disk", "ssd").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "zone-b").Obj(),
		st.MakeNode().Name("c1").Label(v1.LabelTopologyZone, "zone-c").Label("disk", "ssd").Obj(),
		st.MakeNode().Name("d1").Label(v1.LabelTopologyZone, "zone-d").Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
	abc := makePlacement("abc", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	soft := makePlacement("soft", fleetv1.ScheduleAnyway, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	weighted := makePlacement("weighted", fleetv1.DoNotSchedule, 100, dom("zone-a", 0), dom("zone-c", 2))
	ssd := makePlacement("ssd", fleetv1.ScheduleAnyway, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	ssd.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}},
	}}}
	invalid := makePlacement("invalid", fleetv1.DoNotSchedule, 0, domPercent("zone-a", "70%"), domPercent("zone-b", "40%"))
	unordered := makePlacement("unordered", fleetv1.DoNotSchedule, 0, dom("zone-c"), dom("zone-a"), dom("zone-b"))
	spread := makePlacement("spread", fleetv1.DoNotSchedule, 0)
	nozoneb := makePlacement("nozoneb", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-e"))

	tests := []struct {
		name          string
		pod           *v1.Pod
		wantFeasible  []string
		wantPreFilter string // substring of the PreFilter rejection; empty: none
		wantSkip      bool
	}{
		{name: "unmanaged pod is skipped", pod: pod("web-0", "", "0"), wantSkip: true, wantFeasible: []string{"a1", "b1", "c1", "d1", "nozone"}},
		{name: "ordinal 0 of 3 even domains: zone-a only", pod: pod("db-0", "abc", "0"), wantFeasible: []string{"a1"}},
		{name: "ordinal 4 of 3 even domains: zone-b only", pod: pod("db-4", "abc", "4"), wantFeasible: []string{"b1"}},
		{name: "ordinal from the name when the label is missing", pod: pod("db-2", "abc", ""), wantFeasible: []string{"c1"}},
		{name: "domains taken by name, not in list order: ordinal 0 in zone-a", pod: pod("db-0", "unordered", "0"), wantFeasible: []string{"a1"}},
		{name: "no domains: spread only, any node with the topology key", pod: pod("db-0", "spread", "0"), wantFeasible: []string{"a1", "b1", "c1", "d1"}},
		{name: "ScheduleAnyway: any placement domain", pod: pod("db-0", "soft", "0"), wantFeasible: []string{"a1", "b1", "c1"}},
		{name: "zero-count domain never used, ordinal start 100", pod: pod("kv-101", "weighted", "101"), wantFeasible: []string{"c1"}},
		{name: "node selector ANDed with the domains", pod: pod("db-1", "ssd", "1"), wantFeasible: []string{"a1", "c1"}},
		{name: "no node in the ordinal's domain", pod: pod("db-1", "nozoneb", "1"), wantPreFilter: "node(s) not in the domain of the pod's ordinal (topology.kubernetes.io/zone=zone-e)"},
		{name: "missing placement names it", pod: pod("db-0", "nope", "0"), wantPreFilter: `SubsetPlacement default/nope: subsetplacements.fleetset.io "nope" not found`},
		{name: "invalid placement names it and the field", pod: pod("db-0", "invalid", "0"), wantPreFilter: "SubsetPlacement default/invalid is invalid: spec.domains: percentages sum to 110%"},
		{name: "ordinal below ordinalStart", pod: pod("kv-7", "weighted", "7"), wantPreFilter: "ordinal 7 is outside SubsetPlacement default/weighted's ordinal block [100, 1100)"},
		{name: "ordinal past the block", pod: pod("kv-1100", "weighted", "1100"), wantPreFilter: "ordinal 1100 is outside SubsetPlacement default/weighted's ordinal block [100, 1100)"},
		{name: "garbled ordinal label", pod: pod("db-x", "abc", "x"), wantPreFilter: `label apps.kubernetes.io/pod-index="x" is not a non-negative integer`},
	}
	r := plugintest.Resolver(t, abc, soft, weighted, ssd, invalid, nozoneb, unordered, spread)
	pl := NewWithResolver(r, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := plugintest.Framework(t, nil, nodes,
				tf.RegisterPreFilterPlugin(Name, plugintest.Factory(pl)),
				tf.RegisterFilterPlugin(Name, plugintest.Factory(pl)))
			ctx := context.Background()
			state := framework.NewCycleState()
			result, status, _ := fw.RunPreFilterPlugins(ctx, state, tt.pod)
			if tt.wantPreFilter != "" {
				if status.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(status.Message(), tt.wantPreFilter) {
					t.Fatalf("PreFilter status = %v %q, want UnschedulableAndUnresolvable containing %q", status.Code(), status.Message(), tt.wantPreFilter)
				}
				return
			}
			if !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			if got := state.GetSkipFilterPlugins().Has(Name); got != tt.wantSkip {
				t.Errorf("Filter skipped = %v, want %v", got, tt.wantSkip)
			}
			var feasible []string
			for _, ni := range tf.BuildNodeInfos(nodes) {
				if s := fw.RunFilterPlugins(ctx, state, tt.pod, ni); s.IsSuccess() {
					feasible = append(feasible, ni.Node().Name)
				} else if s.Code() != fwk.UnschedulableAndUnresolvable {
					t.Errorf("node %s: code %v, want UnschedulableAndUnresolvable", ni.Node().Name, s.Code())
				}
			}
			if diff := cmp.Diff(tt.wantFeasible, feasible); diff != "" {
				t.Errorf("feasible nodes (-want,+got):\n%s", diff)
			}
			// PreFilter narrows the cycle to the same nodes (all for skipped pods).
			if tt.wantSkip != result.AllNodes() {
				t.Errorf("PreFilterResult.AllNodes() = %v, want %v", result.AllNodes(), tt.wantSkip)
			} else if !tt.wantSkip {
				if diff := cmp.Diff(tt.wantFeasible, sets.List(result.NodeNames)); diff != "" {
					t.Errorf("PreFilterResult nodes (-want,+got):\n%s", diff)
				}
			}
		})
	}
}
