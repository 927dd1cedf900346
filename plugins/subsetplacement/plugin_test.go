package subsetplacement

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/fence/fencetest"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
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

// nodeHint returns the QueueingHintFn that the framework built from pl holds
// for Node events (pl's EventsToRegister, as the scheduling queue reads it).
func nodeHint(t *testing.T, pl *SubsetPlacement) fwk.QueueingHintFn {
	t.Helper()
	fw := plugintest.Framework(t, nil, nil,
		tf.RegisterPreFilterPlugin(Name, plugintest.Factory(pl)),
		tf.RegisterFilterPlugin(Name, plugintest.Factory(pl)))
	for _, ext := range fw.EnqueueExtensions() {
		if ext.Name() != Name {
			continue
		}
		events, err := ext.EventsToRegister(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Event.Resource == fwk.Node {
				if e.Event.ActionType&fwk.Delete != 0 {
					t.Errorf("Node event %v: deleting a node never admits a pod", e.Event.ActionType)
				}
				return e.QueueingHintFn
			}
		}
	}
	t.Fatalf("the framework has no Node event of %s", Name)
	return nil
}

// TestIsSchedulableAfterNodeChange checks the Node queueing hint the
// framework holds for SubsetPlacement: Queue only when the added or
// relabelled node is one the pod's placement admits and was not before.
func TestIsSchedulableAfterNodeChange(t *testing.T) {
	abc := makePlacement("abc", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c"))
	soft := makePlacement("soft", fleetv1.ScheduleAnyway, 0, dom("zone-a"), dom("zone-b"))
	spread := makePlacement("spread", fleetv1.DoNotSchedule, 0)
	ssd := makePlacement("ssd", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	ssd.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}},
	}}}
	invalid := makePlacement("invalid", fleetv1.DoNotSchedule, 0, domPercent("zone-a", "70%"), domPercent("zone-b", "40%"))
	fenced := makePlacement("fenced", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	fenced.Spec.Fencing = &fleetv1.PlacementFencing{}

	node := func(zone string, labels ...string) *v1.Node {
		w := st.MakeNode().Name("n1")
		if zone != "" {
			w = w.Label(v1.LabelTopologyZone, zone)
		}
		for i := 0; i+1 < len(labels); i += 2 {
			w = w.Label(labels[i], labels[i+1])
		}
		return w.Obj()
	}
	// Ordinal 1 of abc is in zone-b; ordinal 0 of ssd and fenced in zone-a.
	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		// fence drives the member to Fenced; false: in contact.
		fence bool
		want  fwk.QueueingHint
	}{
		{name: "node added in the ordinal's domain", pod: pod("db-1", "abc", "1"), new: node("zone-b"), want: fwk.Queue},
		{name: "node added in another domain of the placement", pod: pod("db-1", "abc", "1"), new: node("zone-a"), want: fwk.QueueSkip},
		{name: "node added outside the placement's domains", pod: pod("db-1", "abc", "1"), new: node("zone-d"), want: fwk.QueueSkip},
		{name: "node added without the topology key", pod: pod("db-1", "abc", "1"), new: node(""), want: fwk.QueueSkip},
		{name: "node relabelled into the ordinal's domain", pod: pod("db-1", "abc", "1"), old: node("zone-a"), new: node("zone-b"), want: fwk.Queue},
		{name: "node given the topology key of the ordinal's domain", pod: pod("db-1", "abc", "1"), old: node(""), new: node("zone-b"), want: fwk.Queue},
		{name: "node in the domain relabelled otherwise", pod: pod("db-1", "abc", "1"), old: node("zone-b"), new: node("zone-b", "disk", "ssd"), want: fwk.QueueSkip},
		{name: "node relabelled out of the ordinal's domain", pod: pod("db-1", "abc", "1"), old: node("zone-b"), new: node("zone-c"), want: fwk.QueueSkip},
		{name: "ScheduleAnyway: node added in any placement domain", pod: pod("db-0", "soft", "0"), new: node("zone-b"), want: fwk.Queue},
		{name: "ScheduleAnyway: node added outside the domains", pod: pod("db-0", "soft", "0"), new: node("zone-c"), want: fwk.QueueSkip},
		{name: "spread only: any node with the topology key", pod: pod("db-0", "spread", "0"), new: node("zone-x"), want: fwk.Queue},
		{name: "spread only: node without the topology key", pod: pod("db-0", "spread", "0"), new: node(""), want: fwk.QueueSkip},
		{name: "nodeSelector: node in the domain not matching", pod: pod("db-0", "ssd", "0"), new: node("zone-a"), want: fwk.QueueSkip},
		{name: "nodeSelector: node relabelled to match", pod: pod("db-0", "ssd", "0"), old: node("zone-a"), new: node("zone-a", "disk", "ssd"), want: fwk.Queue},
		{name: "missing placement: only a placement event helps", pod: pod("db-0", "nope", "0"), new: node("zone-a"), want: fwk.QueueSkip},
		{name: "invalid placement: only a placement event helps", pod: pod("db-0", "invalid", "0"), new: node("zone-a"), want: fwk.QueueSkip},
		{name: "garbled ordinal: no node helps", pod: pod("db-x", "abc", "x"), new: node("zone-a"), want: fwk.QueueSkip},
		{name: "fenced placement: the end of the fence re-queues, not nodes", pod: pod("db-0", "fenced", "0"), new: node("zone-a"), fence: true, want: fwk.QueueSkip},
		{name: "fencing placement in contact with the hub", pod: pod("db-0", "fenced", "0"), new: node("zone-a"), want: fwk.Queue},
		{name: "unmanaged pod", pod: pod("web-0", "", "0"), new: node("zone-a"), want: fwk.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fencetest.New()
			if tt.fence {
				d.Fence()
			} else {
				d.Contact()
			}
			pl := NewWithResolver(ordinaltarget.NewResolver(plugintest.Client(t, abc, soft, spread, ssd, invalid, fenced), nil), d.Guard)
			hint := nodeHint(t, pl)
			var oldObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			got, err := hint(klog.Background(), tt.pod, oldObj, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
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
