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
	"github.com/fleetset/fleetset/plugins/subsetplacement"
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
			Domains:           []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}},
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

// scoreCycle runs PreFilter (when fw has one), PreScore and Score for pod
// over the snapshot's nodes in fw, and returns OrdinalSpread's PreScore
// status and final scores by node.
func scoreCycle(t *testing.T, fw framework.Framework, pod *v1.Pod) (*fwk.Status, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	nodeInfos, err := fw.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	result, s, _ := fw.RunPreFilterPlugins(ctx, state, pod)
	if !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodeInfos {
		if (result.AllNodes() || result.NodeNames.Has(ni.Node().Name)) && fw.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	preScore := fw.RunPreScorePlugins(ctx, state, pod, feasible)
	if !preScore.IsSuccess() {
		t.Fatalf("PreScore: %v", preScore)
	}
	scores, s := fw.RunScorePlugins(ctx, state, pod, feasible)
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
	skipped := fwk.NewStatus(fwk.Success)
	if state.GetSkipScorePlugins().Has(Name) {
		skipped = fwk.NewStatus(fwk.Skip)
	}
	return skipped, got
}

// TestScoreWithSubsetPlacement runs both fleetset plugins in one framework:
// OrdinalSpread takes the target SubsetPlacement's PreFilter resolved (its
// own resolver is nil here, so resolving again would panic), scores only
// the spread inside the ordinal's domain, and skips when every feasible node
// holds as many pods of the set.
func TestScoreWithSubsetPlacement(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("a2").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "zone-b").Obj(),
	}
	member := func(name, node string) *v1.Pod {
		return st.MakePod().Namespace("default").Name(name).Node(node).
			Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Obj()
	}
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: fleetv1.SubsetPlacementSpec{
			Domains:           []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}},
			WhenUnsatisfiable: fleetv1.DoNotSchedule,
		},
	}
	newPod := func(ordinal string) *v1.Pod {
		return st.MakePod().Namespace("default").Name("db-"+ordinal).
			Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Label(fleetv1.LabelPodIndex, ordinal).Obj()
	}
	tests := []struct {
		name     string
		existing []*v1.Pod
		pod      *v1.Pod
		wantSkip bool
		want     map[string]int64
	}{
		{name: "empty domain: nothing to rank, skipped", pod: newPod("2"), wantSkip: true, want: map[string]int64{}},
		{name: "one pod in the domain: the other node wins", existing: []*v1.Pod{member("db-0", "a1"), member("db-1", "b1")}, pod: newPod("2"),
			want: map[string]int64{"a1": 60, "a2": 100}},
		{name: "as many pods on each feasible node: skipped", existing: []*v1.Pod{member("db-0", "a1"), member("db-2", "a2")}, pod: newPod("4"),
			wantSkip: true, want: map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placement := subsetplacement.NewWithResolver(plugintest.Resolver(t, sp), nil)
			fw := plugintest.Framework(t, tt.existing, nodes,
				tf.RegisterPreFilterPlugin(subsetplacement.Name, plugintest.Factory(placement)),
				tf.RegisterFilterPlugin(subsetplacement.Name, plugintest.Factory(placement)),
				tf.RegisterPreScorePlugin(Name, plugintest.Factory(NewWithResolver(nil, 60))),
				tf.RegisterScorePlugin(Name, plugintest.Factory(NewWithResolver(nil, 60)), 1))
			status, got := scoreCycle(t, fw, tt.pod)
			if status.IsSkip() != tt.wantSkip {
				t.Errorf("PreScore skipped = %v, want %v", status.IsSkip(), tt.wantSkip)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCountsFollowSnapshots scores with one plugin over successive
// snapshots: the per-node counts it remembers between cycles must follow
// pods added to and removed from nodes.
func TestCountsFollowSnapshots(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("a2").Label(v1.LabelTopologyZone, "zone-a").Obj(),
		st.MakeNode().Name("a3").Label(v1.LabelTopologyZone, "zone-a").Obj(),
	}
	member := func(name, node string) *v1.Pod {
		return st.MakePod().Namespace("default").Name(name).Node(node).
			Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Obj()
	}
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:       fleetv1.SubsetPlacementSpec{Domains: []fleetv1.DomainShare{{Name: "zone-a"}}},
	}
	pl := NewWithResolver(plugintest.Resolver(t, sp), 0)
	pod := st.MakePod().Namespace("default").Name("db-9").
		Label(fleetv1.LabelSet, "db").Label(fleetv1.LabelPlacement, "db").Label(fleetv1.LabelPodIndex, "9").Obj()
	steps := []struct {
		existing []*v1.Pod
		want     map[string]int64
	}{
		{existing: []*v1.Pod{member("db-0", "a1")}, want: map[string]int64{"a1": 0, "a2": 100, "a3": 100}},
		{existing: []*v1.Pod{member("db-0", "a1"), member("db-1", "a2")}, want: map[string]int64{"a1": 0, "a2": 0, "a3": 100}},
		{existing: []*v1.Pod{member("db-1", "a2"), member("db-2", "a2")}, want: map[string]int64{"a1": 100, "a2": 0, "a3": 100}},
	}
	for i, step := range steps {
		fw := plugintest.Framework(t, step.existing, nodes,
			tf.RegisterPreScorePlugin(Name, plugintest.Factory(pl)),
			tf.RegisterScorePlugin(Name, plugintest.Factory(pl), 1))
		if _, got := scoreCycle(t, fw, pod); !cmp.Equal(step.want, got) {
			t.Errorf("step %d: scores %v, want %v", i, got, step.want)
		}
	}
}
