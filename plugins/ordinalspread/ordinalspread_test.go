package ordinalspread

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
)

// TestScore runs PreScore, Score and NormalizeScore in a real framework and
// checks the final node scores.
func TestScore(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("a2").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "zone-b").Obj(),
		st.MakeNode().Name("c1").Label(v1.LabelTopologyZone, "zone-c").Obj(),
	}
	member := func(name, node string) *v1.Pod {
		return st.MakePod().Namespace("default").Name(name).Node(node).
			Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Obj()
	}
	existing := []*v1.Pod{
		member("db-0", "a1"), member("db-3", "a1"), member("db-1", "b1"),
		// Same labels in another namespace, and another set: not counted.
		st.MakePod().Namespace("other").Name("db-9").Node("a2").Label(fleetv1.LabelSet, "db").Obj(),
		st.MakePod().Namespace("default").Name("web-0").Node("a2").Label(fleetv1.LabelSet, "web").Obj(),
	}
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: fleetv1.SubsetPlacementSpec{
			Domains:           []fleetv1.PlacementDomain{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}},
			WhenUnsatisfiable: fleetv1.ScheduleAnyway,
		},
	}
	newPod := func(ordinal string) *v1.Pod {
		return st.MakePod().Namespace("default").Name("db-"+ordinal).
			Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Label(fleetv1.LabelPodIndex, ordinal).Obj()
	}
	tests := []struct {
		name         string
		pod          *v1.Pod
		domainWeight int32
		want         map[string]int64
	}{
		{
			// Ordinal 6 maps to zone-a: a2 (0 pods) beats a1 (2 pods);
			// outside zone-a only the spread counts.
			name: "ordinal 6 → zone-a, weight 60", pod: newPod("6"), domainWeight: 60,
			want: map[string]int64{"a1": 60, "a2": 100, "b1": 20, "c1": 40},
		},
		{
			name: "ordinal 7 → zone-b, weight 60", pod: newPod("7"), domainWeight: 60,
			want: map[string]int64{"a1": 0, "a2": 40, "b1": 80, "c1": 40},
		},
		{
			name: "ordinal 6, weight 0: spread only", pod: newPod("6"), domainWeight: 0,
			want: map[string]int64{"a1": 0, "a2": 100, "b1": 50, "c1": 100},
		},
		{
			name: "unmanaged pod: skipped, no scores", pod: st.MakePod().Namespace("default").Name("web-1").Obj(), domainWeight: 60,
			want: map[string]int64{},
		},
	}
	r := plugintest.Resolver(t, sp)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := NewWithResolver(r, tt.domainWeight)
			fw := plugintest.Framework(t, existing, nodes,
				tf.RegisterPreScorePlugin(Name, plugintest.Factory(pl)),
				tf.RegisterScorePlugin(Name, plugintest.Factory(pl), 1))
			ctx := context.Background()
			state := framework.NewCycleState()
			nodeInfos, err := fw.SnapshotSharedLister().NodeInfos().List()
			if err != nil {
				t.Fatal(err)
			}
			if s := fw.RunPreScorePlugins(ctx, state, tt.pod, nodeInfos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			scores, s := fw.RunScorePlugins(ctx, state, tt.pod, nodeInfos)
			if !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			got := map[string]int64{}
			for _, ns := range scores {
				for _, ps := range ns.Scores {
					if ps.Name == Name {
						got[ns.Name] = ps.Score
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

// foreignState is cycle state some other plugin wrote under our key.
type foreignState struct{}

func (foreignState) Clone() fwk.StateData { return foreignState{} }

// TestScoreRejectsForeignState: cycle state of the wrong type under the
// PreScore key is an error status, never a panic of the scheduler.
func TestScoreRejectsForeignState(t *testing.T) {
	pl := NewWithResolver(nil, 60)
	state := framework.NewCycleState()
	state.Write(preScoreStateKey, foreignState{})
	ni := framework.NewNodeInfo()
	ni.SetNode(st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj())
	_, status := pl.Score(context.Background(), state, st.MakePod().Name("db-0").Obj(), ni)
	if status.IsSuccess() {
		t.Fatalf("Score with foreign cycle state succeeded, want an error status")
	}
}
