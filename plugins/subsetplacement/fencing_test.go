package subsetplacement

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// fencingNow is the scheduler's clock in these tests.
var fencingNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func fencingPlacements() (fenced, open *fleetv1.SubsetPlacement) {
	fenced = makePlacement("fenced", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	fenced.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: 30}
	open = makePlacement("open", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"))
	return fenced, open
}

func leaseAt(renewed time.Time, seconds int32) *coordinationv1.Lease {
	return plugintest.Lease(&renewed, ptr.To(seconds))
}

// TestPreFilterFencing runs PreFilter in a real framework over each state of
// the resync Lease: a placement with spec.fencing schedules only while the
// Lease is fresh, and is otherwise rejected as UnschedulableAndUnresolvable
// with a reason naming the Lease and its expiry; a placement without
// spec.fencing is never fenced.
func TestPreFilterFencing(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "zone-b").Obj(),
	}
	const lease = "Lease fleetset-system/fleetset-resync"
	tests := []struct {
		name  string
		lease *coordinationv1.Lease // nil: missing
		// wantReason is the PreFilter rejection of the fencing placement's
		// pod; empty: it schedules (on a1, its ordinal's domain).
		wantReason string
	}{
		{name: "fresh lease schedules", lease: leaseAt(fencingNow.Add(-2*time.Second), 5)},
		{name: "lease expiring this instant still schedules", lease: leaseAt(fencingNow.Add(-5*time.Second), 5)},
		{name: "expired lease fences, naming the expiry", lease: leaseAt(fencingNow.Add(-10*time.Second), 5),
			wantReason: "fenced: " + lease + " expired at 2026-03-04T05:06:02Z"},
		{name: "lease renewed in the future (hub clock ahead) schedules", lease: leaseAt(fencingNow.Add(time.Minute), 5)},
		{name: "missing lease fences", lease: nil, wantReason: "fenced: " + lease + " not found"},
		{name: "lease without renewTime fences", lease: plugintest.Lease(nil, ptr.To[int32](60)),
			wantReason: "fenced: " + lease + " has no renewTime or leaseDurationSeconds"},
		{name: "lease without leaseDurationSeconds fences", lease: plugintest.Lease(&fencingNow, nil),
			wantReason: "fenced: " + lease + " has no renewTime or leaseDurationSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fenced, open := fencingPlacements()
			pl := NewWithResolver(ordinaltarget.NewResolver(plugintest.Client(t, tt.lease, fenced, open), nil))
			pl.now = func() time.Time { return fencingNow }
			fw := plugintest.Framework(t, nil, nodes,
				tf.RegisterPreFilterPlugin(Name, plugintest.Factory(pl)),
				tf.RegisterFilterPlugin(Name, plugintest.Factory(pl)))
			run := func(p *v1.Pod) (*framework.PreFilterResult, *fwk.Status) {
				result, status, _ := fw.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), p)
				return result, status
			}

			result, status := run(pod("db-0", "fenced", "0"))
			if tt.wantReason != "" {
				if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != tt.wantReason {
					t.Errorf("fencing placement: PreFilter = %v %q, want UnschedulableAndUnresolvable %q", status.Code(), status.Message(), tt.wantReason)
				}
				if !strings.HasPrefix(status.Message(), ErrReasonFenced+": ") {
					t.Errorf("reason %q does not start with %q", status.Message(), ErrReasonFenced)
				}
			} else if !status.IsSuccess() {
				t.Errorf("fencing placement, lease fresh: PreFilter = %v", status)
			} else if diff := cmp.Diff([]string{"a1"}, sets.List(result.NodeNames)); diff != "" {
				t.Errorf("fencing placement, lease fresh: nodes (-want,+got):\n%s", diff)
			}

			// Never fenced without spec.fencing, whatever the Lease.
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

// TestLeaseRenewalRequeuesFencedPods: the pods PreFilter fenced are moved
// back to the active queue once the cache sees the Lease fresh, and only
// then; pods it did not fence are not.
func TestLeaseRenewalRequeuesFencedPods(t *testing.T) {
	fenced, open := fencingPlacements()
	c := plugintest.Client(t, leaseAt(fencingNow.Add(-time.Minute), 5), fenced, open)
	pl := NewWithResolver(ordinaltarget.NewResolver(c, nil))
	pl.now = func() time.Time { return fencingNow }
	act := &fakeActivator{}
	pl.activator = act
	ctx := context.Background()
	for _, p := range []*v1.Pod{pod("db-0", "fenced", "0"), pod("db-1", "fenced", "1"), pod("web-0", "open", "0")} {
		_, status := pl.PreFilter(ctx, framework.NewCycleState(), p, nil)
		if p.Name != "web-0" && status.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("%s: PreFilter = %v, want fenced", p.Name, status)
		}
	}
	pl.leaseChanged(klog.Background()) // an update that leaves it expired
	if len(act.activated) != 0 {
		t.Fatalf("activated %v while the lease is expired", act.activated)
	}
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime.Time = fencingNow
	if err := c.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	pl.leaseChanged(klog.Background())
	if diff := cmp.Diff([]string{"db-0", "db-1"}, sets.List(sets.New(act.activated...))); diff != "" {
		t.Errorf("activated on renewal (-want,+got):\n%s", diff)
	}
	act.activated = nil
	pl.leaseChanged(klog.Background()) // a later renewal: nothing left to activate
	if len(act.activated) != 0 {
		t.Errorf("activated %v again", act.activated)
	}
	// Fresh lease: PreFilter passes and records nothing.
	a1 := tf.BuildNodeInfos([]*v1.Node{st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj()})
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), pod("db-0", "fenced", "0"), a1); !status.IsSuccess() {
		t.Errorf("PreFilter with a fresh lease = %v", status)
	}
	if len(pl.fenced) != 0 {
		t.Errorf("fresh lease left %d pods recorded as fenced", len(pl.fenced))
	}
}
