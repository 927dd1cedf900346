package subsetplacement

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
)

func makePlacement(name string, mode fleetv1.WhenUnsatisfiable, start int32, ds ...fleetv1.DomainShare) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       fleetv1.SubsetPlacementSpec{Domains: ds, OrdinalStart: start, WhenUnsatisfiable: mode},
	}
}

func dom(name string, replicas ...int32) fleetv1.DomainShare {
	d := fleetv1.DomainShare{Name: name}
	if len(replicas) > 0 {
		d.Replicas = ptr.To(intstr.FromInt32(replicas[0]))
	}
	return d
}

func domPercent(name, percent string) fleetv1.DomainShare {
	return fleetv1.DomainShare{Name: name, Replicas: ptr.To(intstr.FromString(percent))}
}

func pod(name, placementName string, ordinal string) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).SchedulerName(fleetv1.SchedulerName)
	if placementName != "" {
		w = w.Label(fleetv1.LabelPlacement, placementName)
	}
	if ordinal != "" {
		w = w.Label(fleetv1.LabelPodIndex, ordinal)
	}
	return w.Obj()
}

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
		{name: "ordinal below ordinalStart", pod: pod("kv-7", "weighted", "7"), wantPreFilter: "ordinal 7 is below SubsetPlacement default/weighted ordinalStart 100"},
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

func TestIsSchedulableAfterPlacementChange(t *testing.T) {
	managed := pod("db-0", "db", "0")
	u := func(ns, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	tests := []struct {
		name   string
		pod    *v1.Pod
		newObj interface{}
		want   fwk.QueueingHint
	}{
		{name: "the pod's placement appears", pod: managed, newObj: u("default", "db"), want: fwk.Queue},
		{name: "typed object", pod: managed, newObj: makePlacement("db", fleetv1.DoNotSchedule, 0), want: fwk.Queue},
		{name: "another placement", pod: managed, newObj: u("default", "web"), want: fwk.QueueSkip},
		{name: "same name, other namespace", pod: managed, newObj: u("other", "db"), want: fwk.QueueSkip},
		{name: "unmanaged pod", pod: pod("web-0", "", "0"), newObj: u("default", "db"), want: fwk.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterPlacementChange(klog.Background(), tt.pod, nil, tt.newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
