package subsetplacement

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/member/fence/fencetest"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

func fencingPlacements() (fenced, open *fleetv1.SubsetPlacement) {
	fenced = makePlacement("fenced", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	fenced.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: 30, Epoch: 2}
	open = makePlacement("open", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	return fenced, open
}

// TestPreFilterFencing runs PreFilter in a real framework with a real
// fence.Guard driven through each state: a placement with spec.fencing
// schedules while the member is in contact with the hub or holding (a hub
// outage), and is rejected as UnschedulableAndUnresolvable, with the
// Guard's reason, while the member is fenced or the placement carries a
// fence record the hub has not superseded. A placement without spec.fencing
// is never fenced, and without a member component nothing is.
func TestPreFilterFencing(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "zone-b").Obj(),
	}
	tests := []struct {
		name string
		// drive puts the Guard in its state; nil: no member component.
		drive func(d *fencetest.Driver)
		// record is the placement's fence record ("" none).
		record string
		// wantReason is a substring of the rejection of the fencing
		// placement's pod; empty: it schedules (on a1, its ordinal's domain).
		wantReason string
	}{
		{name: "no member component schedules"},
		{name: "in contact schedules", drive: func(d *fencetest.Driver) { d.Contact() }},
		{name: "holding through a hub outage schedules", drive: func(d *fencetest.Driver) { d.Hold() }},
		{name: "fenced: cut off while a peer reaches the hub", drive: func(d *fencetest.Driver) { d.Fence() },
			wantReason: "fenced: cut off: no contact with the hub for 30s while peer(s) west reach it"},
		{name: "fenced record at the placement's epoch holds it after contact returns", drive: func(d *fencetest.Driver) { d.Contact() },
			record: "2", wantReason: "fenced: fenced at epoch 2 while cut off; waiting for the hub to confirm"},
		{name: "unreadable fence record holds it", drive: func(d *fencetest.Driver) { d.Contact() },
			record: "x", wantReason: "fenced: fenced at epoch"},
		{name: "fence record below the delivered epoch: a new grant schedules", drive: func(d *fencetest.Driver) { d.Contact() }, record: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fenced, open := fencingPlacements()
			if tt.record != "" {
				fenced.Annotations = map[string]string{fleetv1.AnnotationFencedEpoch: tt.record}
			}
			var gate member.Gate
			if tt.drive != nil {
				d := fencetest.New()
				tt.drive(d)
				gate = d.Guard
			}
			pl := NewWithResolver(ordinaltarget.NewResolver(plugintest.Client(t, fenced, open), nil), gate)
			fw := plugintest.Framework(t, nil, nodes,
				tf.RegisterPreFilterPlugin(Name, plugintest.Factory(pl)),
				tf.RegisterFilterPlugin(Name, plugintest.Factory(pl)))
			run := func(p *v1.Pod) (*framework.PreFilterResult, *fwk.Status) {
				result, status, _ := fw.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), p)
				return result, status
			}

			result, status := run(pod("db-0", "fenced", "0"))
			if tt.wantReason != "" {
				if status.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(status.Message(), tt.wantReason) {
					t.Errorf("fencing placement: PreFilter = %v %q, want UnschedulableAndUnresolvable containing %q", status.Code(), status.Message(), tt.wantReason)
				}
				if !strings.HasPrefix(status.Message(), ErrReasonFenced+": ") {
					t.Errorf("reason %q does not start with %q", status.Message(), ErrReasonFenced)
				}
			} else if !status.IsSuccess() {
				t.Errorf("fencing placement: PreFilter = %v", status)
			} else if diff := cmp.Diff([]string{"a1"}, sets.List(result.NodeNames)); diff != "" {
				t.Errorf("fencing placement: nodes (-want,+got):\n%s", diff)
			}

			// Never fenced without spec.fencing, whatever the member's state.
			result, status = run(pod("web-1", "open", "1"))
			if !status.IsSuccess() {
				t.Fatalf("placement without fencing: PreFilter = %v", status)
			}
			if diff := cmp.Diff([]string{"b1"}, sets.List(result.NodeNames)); diff != "" {
				t.Errorf("placement without fencing: nodes (-want,+got):\n%s", diff)
			}
		})
	}
}

// fakeActivator records the pods it is asked to activate.
type fakeActivator struct{ activated []string }

func (a *fakeActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for _, p := range pods {
		a.activated = append(a.activated, p.Name)
	}
}

// TestGateChangeRequeuesFencedPods: the pods PreFilter fenced are moved
// back to the active queue when the Guard's state changes (here: the member
// reaches the hub again), once; pods it did not fence are not.
func TestGateChangeRequeuesFencedPods(t *testing.T) {
	fenced, open := fencingPlacements()
	d := fencetest.New()
	d.Fence()
	pl := NewWithResolver(ordinaltarget.NewResolver(plugintest.Client(t, fenced, open), nil), d.Guard)
	act := &fakeActivator{}
	pl.activator = act
	logger := klog.Background()
	d.Guard.OnChange(func() { pl.gateChanged(logger) })
	ctx := context.Background()
	for _, p := range []*v1.Pod{pod("db-0", "fenced", "0"), pod("db-1", "fenced", "1"), pod("web-0", "open", "0")} {
		_, status := pl.PreFilter(ctx, framework.NewCycleState(), p, nil)
		if p.Name != "web-0" && status.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("%s: PreFilter = %v, want fenced", p.Name, status)
		}
	}
	d.Lose(fencetest.Timeout) // still fenced: no change, no activation
	if len(act.activated) != 0 {
		t.Fatalf("activated %v while fenced", act.activated)
	}
	d.Contact()
	if diff := cmp.Diff([]string{"db-0", "db-1"}, sets.List(sets.New(act.activated...))); diff != "" {
		t.Errorf("activated when contact returned (-want,+got):\n%s", diff)
	}
	act.activated = nil
	d.Contact() // no change: nothing left to activate
	if len(act.activated) != 0 {
		t.Errorf("activated %v again", act.activated)
	}
	a1 := tf.BuildNodeInfos([]*v1.Node{st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj()})
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pod("db-0", "fenced", "0"), a1); !status.IsSuccess() {
		t.Errorf("PreFilter in contact = %v", status)
	}
	if len(pl.fenced) != 0 {
		t.Errorf("in contact left %d pods recorded as fenced", len(pl.fenced))
	}
}
