package subsetplacement

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
)

// bindNodes returns a lister of the binding tests' nodes: node-a in zone-a,
// node-c in zone-c, node-none without a zone.
func bindNodes(t *testing.T) corelisters.NodeLister {
	t.Helper()
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, n := range []*v1.Node{
		st.MakeNode().Name("node-a").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("node-c").Label(v1.LabelTopologyZone, "zone-c").Obj(),
		st.MakeNode().Name("node-none").Obj(),
	} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewNodeLister(indexer)
}

// TestPreBindSetsDomainLabel: PreBind labels a managed pod with its
// ordinal's domain (a placement with domains, whatever node it is bound
// to) or its node's domain (spread only), with one merge patch of
// metadata.labels; it does nothing for an unmanaged pod or one already
// labelled right, and fails (the pod is retried) when the patch fails.
func TestPreBindSetsDomainLabel(t *testing.T) {
	placements := []*fleetv1.SubsetPlacement{
		makePlacement("even", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c")),
		makePlacement("anyway", fleetv1.ScheduleAnyway, 0, dom("zone-a"), dom("zone-b"), dom("zone-c")),
		makePlacement("spread", fleetv1.DoNotSchedule, 0),
	}
	r := plugintest.Resolver(t, placements...)
	nodes := bindNodes(t)
	labelled := func(p *v1.Pod, v string) *v1.Pod {
		p.Labels[fleetv1.LabelDomain] = v
		return p
	}
	for _, tt := range []struct {
		name      string
		pod       *v1.Pod
		node      string
		missing   bool   // the pod is not in the API: the patch fails
		want      string // label after PreBind; "" with code Skip: no patch
		preFlight fwk.Code
		code      fwk.Code
	}{
		{name: "ordinal 4 of three even zones", pod: pod("db-4", "even", "4"), node: "node-a", want: "zone-b", preFlight: fwk.Success, code: fwk.Success},
		{name: "ScheduleAnyway: the ordinal's domain, not the node's", pod: pod("db-2", "anyway", "2"), node: "node-a", want: "zone-c", preFlight: fwk.Success, code: fwk.Success},
		{name: "a wrong label is replaced", pod: labelled(pod("db-0", "even", "0"), "zone-x"), node: "node-a", want: "zone-a", preFlight: fwk.Success, code: fwk.Success},
		{name: "already right: no patch", pod: labelled(pod("db-1", "even", "1"), "zone-b"), node: "node-a", preFlight: fwk.Skip, code: fwk.Success},
		{name: "spread only: the node's domain", pod: pod("db-7", "spread", "7"), node: "node-c", want: "zone-c", preFlight: fwk.Success, code: fwk.Success},
		{name: "spread only: node without the key", pod: pod("db-7", "spread", "7"), node: "node-none", preFlight: fwk.Error, code: fwk.Error},
		{name: "spread only: node gone", pod: pod("db-7", "spread", "7"), node: "node-gone", preFlight: fwk.Error, code: fwk.Error},
		{name: "unmanaged", pod: st.MakePod().Namespace("default").Name("web-0").Obj(), node: "node-a", preFlight: fwk.Skip, code: fwk.Success},
		{name: "patch fails", pod: pod("db-3", "even", "3"), node: "node-a", missing: true, preFlight: fwk.Success, code: fwk.Error},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cs := fake.NewClientset()
			if !tt.missing {
				if _, err := cs.CoreV1().Pods("default").Create(ctx, tt.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			pl := NewWithResolver(r, nil).withPreBind(cs, nodes)
			state := framework.NewCycleState()
			if _, ok := tt.pod.Labels[fleetv1.LabelPlacement]; ok {
				if _, status := pl.PreFilter(ctx, state, tt.pod, nil); status.Code() != fwk.UnschedulableAndUnresolvable && !status.IsSuccess() {
					t.Fatalf("PreFilter: %v", status)
				}
			}
			if got := pl.PreBindPreFlight(ctx, state, tt.pod, tt.node).Code(); got != tt.preFlight {
				t.Errorf("PreBindPreFlight = %v, want %v", got, tt.preFlight)
			}
			cs.ClearActions()
			status := pl.PreBind(ctx, state, tt.pod, tt.node)
			if status.Code() != tt.code {
				t.Fatalf("PreBind = %v, want %v", status, tt.code)
			}
			var patches []k8stesting.PatchAction
			for _, a := range cs.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok {
					patches = append(patches, p)
				}
			}
			if tt.want == "" {
				if len(patches) != 0 && !tt.missing {
					t.Errorf("PreBind patched %d times, want none", len(patches))
				}
				return
			}
			if len(patches) != 1 || patches[0].GetPatchType() != types.MergePatchType ||
				string(patches[0].GetPatch()) != `{"metadata":{"labels":{"fleetset.io/domain":"`+tt.want+`"}}}` {
				t.Fatalf("patches = %v, want one merge patch of the domain label", patches)
			}
			got, err := cs.CoreV1().Pods("default").Get(ctx, tt.pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels[fleetv1.LabelDomain] != tt.want || got.Labels[fleetv1.LabelPlacement] != tt.pod.Labels[fleetv1.LabelPlacement] {
				t.Errorf("labels after PreBind = %v, want %s=%s and the others kept", got.Labels, fleetv1.LabelDomain, tt.want)
			}
		})
	}
}

// TestBindCarriesLocality: Bind binds a managed pod with one Binding whose
// annotations are its locality (the ordinal's domain, or the node's for a
// spread-only placement), skips unmanaged pods (DefaultBinder binds them),
// and fails without binding when the domain cannot be known. With
// localityMetadata Annotations, PreBind patches nothing and Bind still
// carries the locality.
func TestBindCarriesLocality(t *testing.T) {
	placements := []*fleetv1.SubsetPlacement{
		makePlacement("even", fleetv1.DoNotSchedule, 0, dom("zone-a"), dom("zone-b"), dom("zone-c")),
		makePlacement("spread", fleetv1.DoNotSchedule, 0),
	}
	r := plugintest.Resolver(t, placements...)
	nodes := bindNodes(t)
	for _, mode := range []config.LocalityMetadata{config.LocalityLabelsAndAnnotations, config.LocalityAnnotations} {
		for _, tt := range []struct {
			name   string
			pod    *v1.Pod
			node   string
			want   string // the Binding's fleetset.io/domain; "": not bound here
			code   fwk.Code
			patch  bool // PreBind patches (LabelsAndAnnotations only)
			failed bool // the API refuses the Binding
		}{
			{name: "ordinal 4 of three even zones", pod: pod("db-4", "even", "4"), node: "node-a", want: "zone-b", code: fwk.Success, patch: true},
			{name: "spread only: the node's domain", pod: pod("db-7", "spread", "7"), node: "node-c", want: "zone-c", code: fwk.Success, patch: true},
			{name: "spread only: node without the key", pod: pod("db-7", "spread", "7"), node: "node-none", code: fwk.Error},
			{name: "unmanaged: left to DefaultBinder", pod: st.MakePod().Namespace("default").Name("web-0").Obj(), node: "node-a", code: fwk.Skip},
			{name: "the Binding fails", pod: pod("db-3", "even", "3"), node: "node-a", code: fwk.Error, patch: true, failed: true},
		} {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				ctx := context.Background()
				cs := fake.NewClientset()
				if _, err := cs.CoreV1().Pods("default").Create(ctx, tt.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				var bindings []*v1.Binding
				cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() != "binding" {
						return false, nil, nil
					}
					if tt.failed {
						return true, nil, apierrors.NewConflict(v1.Resource("pods/binding"), tt.pod.Name, errors.New("already assigned"))
					}
					bindings = append(bindings, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
					return true, nil, nil
				})
				pl := NewWithResolver(r, nil).withPreBind(cs, nodes)
				pl.localityMetadata = mode
				state := framework.NewCycleState()
				if _, ok := tt.pod.Labels[fleetv1.LabelPlacement]; ok {
					// No node in the plugin's index: PreFilter stores the
					// target and finds no node, as in TestPreBindSetsDomainLabel.
					if _, status := pl.PreFilter(ctx, state, tt.pod, nil); status.Code() != fwk.UnschedulableAndUnresolvable && !status.IsSuccess() {
						t.Fatalf("PreFilter: %v", status)
					}
				}
				cs.ClearActions()
				if status := pl.PreBind(ctx, state, tt.pod, tt.node); tt.code != fwk.Error && !status.IsSuccess() {
					t.Fatalf("PreBind: %v", status)
				}
				patched := 0
				for _, a := range cs.Actions() {
					if _, ok := a.(k8stesting.PatchAction); ok {
						patched++
					}
				}
				if wantPatch := tt.patch && mode == config.LocalityLabelsAndAnnotations; (patched == 1) != wantPatch || patched > 1 {
					t.Errorf("PreBind patched %d times, want a patch: %v", patched, wantPatch)
				}
				status := pl.Bind(ctx, state, tt.pod, tt.node)
				if status.Code() != tt.code {
					t.Fatalf("Bind = %v, want %v", status, tt.code)
				}
				if tt.want == "" || tt.failed {
					if len(bindings) != 0 {
						t.Errorf("Bind created %d Bindings, want none", len(bindings))
					}
					return
				}
				if len(bindings) != 1 {
					t.Fatalf("Bind created %d Bindings, want 1", len(bindings))
				}
				b := bindings[0]
				if b.Name != tt.pod.Name || b.UID != tt.pod.UID || b.Target.Kind != "Node" || b.Target.Name != tt.node {
					t.Errorf("Binding %s (uid %q) → %s %s, want %s → Node %s", b.Name, b.UID, b.Target.Kind, b.Target.Name, tt.pod.Name, tt.node)
				}
				if got := b.Annotations[fleetv1.LabelDomain]; got != tt.want || len(b.Labels) != 0 {
					t.Errorf("Binding annotations %v labels %v, want %s=%s and no labels", b.Annotations, b.Labels, fleetv1.LabelDomain, tt.want)
				}
			})
		}
	}
}

// TestLocalityReadOncePerCycle: PreBind and Bind of one binding cycle read
// the node and the placement once; Bind reuses PreBind's locality (here the
// node lister is gone by then) for the same node, and computes it again for
// another node.
func TestLocalityReadOncePerCycle(t *testing.T) {
	r := plugintest.Resolver(t, makePlacement("spread", fleetv1.DoNotSchedule, 0))
	ctx := context.Background()
	p := pod("db-7", "spread", "7")
	cs := fake.NewClientset(p)
	var bindings []*v1.Binding
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bindings = append(bindings, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
		return true, nil, nil
	})
	pl := NewWithResolver(r, nil).withPreBind(cs, bindNodes(t))
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(ctx, state, p, nil); status.Code() != fwk.UnschedulableAndUnresolvable && !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	if status := pl.PreBind(ctx, state, p, "node-c"); !status.IsSuccess() {
		t.Fatalf("PreBind: %v", status)
	}
	pl.nodes = nil // a second read of the node would now Skip
	if status := pl.Bind(ctx, state, p, "node-c"); !status.IsSuccess() {
		t.Fatalf("Bind: %v", status)
	}
	if len(bindings) != 1 || bindings[0].Annotations[fleetv1.LabelDomain] != "zone-c" {
		t.Fatalf("bindings %v, want one with %s=zone-c from PreBind's locality", bindings, fleetv1.LabelDomain)
	}
	if status := pl.Bind(ctx, state, p, "node-a"); !status.IsSkip() {
		t.Errorf("Bind to another node = %v, want Skip (its node read again, no lister)", status)
	}
}
