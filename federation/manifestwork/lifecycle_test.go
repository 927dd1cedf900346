package manifestwork

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestLifecycleActionsRendering(t *testing.T) {
	join := &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"join.sh"}}}
	leave := &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"leave.sh"}}, Target: fleetv1.TargetAnyLive}
	sp := Subset{Name: "east", Cluster: "east", Replicas: 2, BlockSize: 1000,
		Leave:  []fleetv1.PlacementLeave{{Ordinal: 2, Reason: fleetv1.LeaveScaledDown}},
		Origin: &fleetv1.SubsetOrigin{Cluster: "west", Epoch: 2, Reason: fleetv1.LeaveRelocated}}
	tests := []struct {
		name      string
		actions   *fleetv1.LifecycleActions
		gates     []corev1.PodReadinessGate
		wantGates []corev1.PodReadinessGate
		wantSpec  *fleetv1.PlacementActions
		wantPaths int
	}{
		{name: "no actions: no gate, no spec.actions, no feedback"},
		{
			name:      "memberJoin: the readiness gate, once, after the template's own",
			actions:   &fleetv1.LifecycleActions{MemberJoin: join},
			gates:     []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}},
			wantGates: []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}, {ConditionType: fleetv1.ConditionMemberJoined}},
			wantSpec: &fleetv1.PlacementActions{Actions: fleetv1.LifecycleActions{MemberJoin: join}, FleetSet: "db", ServiceName: "db",
				Leave: sp.Leave, Origin: sp.Origin},
			wantPaths: 5,
		},
		{
			name:      "memberJoin with the gate already in the template: not twice",
			actions:   &fleetv1.LifecycleActions{MemberJoin: join},
			gates:     []corev1.PodReadinessGate{{ConditionType: fleetv1.ConditionMemberJoined}},
			wantGates: []corev1.PodReadinessGate{{ConditionType: fleetv1.ConditionMemberJoined}},
			wantSpec: &fleetv1.PlacementActions{Actions: fleetv1.LifecycleActions{MemberJoin: join}, FleetSet: "db", ServiceName: "db",
				Leave: sp.Leave, Origin: sp.Origin},
			wantPaths: 5,
		},
		{
			name:    "memberLeave only: no gate",
			actions: &fleetv1.LifecycleActions{MemberLeave: leave},
			wantSpec: &fleetv1.PlacementActions{Actions: fleetv1.LifecycleActions{MemberLeave: leave}, FleetSet: "db", ServiceName: "db",
				Leave: sp.Leave, Origin: sp.Origin},
			wantPaths: 5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := makeFleetSet("ns", "db").subset("east", "east", nil).obj()
			fs.Spec.LifecycleActions = tc.actions
			fs.Spec.Template.Spec.ReadinessGates = tc.gates
			sts, err := StatefulSet(fs, sp)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantGates, sts.Spec.Template.Spec.ReadinessGates); diff != "" {
				t.Errorf("readiness gates (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSpec, SubsetPlacement(fs, sp).Spec.Actions); diff != "" {
				t.Errorf("spec.actions (-want,+got):\n%s", diff)
			}
			c := placementConfig(fs, "db-east")
			paths := 0
			for _, r := range c.FeedbackRules {
				paths += len(r.JsonPaths)
			}
			if paths != tc.wantPaths {
				t.Errorf("feedback JSONPaths: want %d, got %d (%v)", tc.wantPaths, paths, c.FeedbackRules)
			}
		})
	}
}

func TestActionsFeedback(t *testing.T) {
	w := &workv1.ManifestWork{}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "SubsetPlacement", Name: "db-east"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: FeedbackActionsLeft, Value: workv1.FieldValue{String: ptr.To("4,3,x")}},
				{Name: FeedbackActionsLeaveFailed, Value: workv1.FieldValue{String: ptr.To("db-east-5: exit 1")}},
			}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Kind: "SubsetPlacement", Name: "db-west"}},
	}
	want := map[string]ActionsReport{"db-east": {Left: []int32{3, 4}, LeaveFailed: "db-east-5: exit 1"}}
	if diff := cmp.Diff(want, ActionsFeedback(w)); diff != "" {
		t.Errorf("ActionsFeedback (-want,+got):\n%s", diff)
	}
}

func TestWithMembers(t *testing.T) {
	fs := makeFleetSet("ns", "db").subset("east", "east", nil).subset("west", "west", nil).obj()
	subsets := []Subset{
		{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 1000, Replicas: 2, Leaders: []string{"db-east-1"}},
		{Name: "west", Cluster: "west", OrdinalStart: 1000, BlockSize: 1000, Replicas: 1},
	}
	got := withMembers(fs, subsets)
	want := []string{"db-east-0", "db-east-1", "db-west-1000"}
	for _, sp := range got {
		if diff := cmp.Diff(want, sp.Members); diff != "" {
			t.Errorf("subset %s: members (-want,+got):\n%s", sp.Name, diff)
		}
		if sp.Leader != "db-east-1" {
			t.Errorf("subset %s: leader %q, want db-east-1", sp.Name, sp.Leader)
		}
	}
	if subsets[0].Members != nil {
		t.Errorf("withMembers changed its input")
	}
	subsets[1].Leaders = []string{"db-west-1000"}
	if l := withMembers(fs, subsets)[0].Leader; l != "" {
		t.Errorf("two leaders: leader %q, want none", l)
	}
	subsets[0].Leave = []fleetv1.PlacementLeave{{Ordinal: 1, Reason: fleetv1.LeaveScaledDown}}
	if diff := cmp.Diff([]string{"db-east-0", "db-west-1000"}, withMembers(fs, subsets)[1].Members); diff != "" {
		t.Errorf("held scale-down: every subset's members leave out the leaver (-want,+got):\n%s", diff)
	}
}

func TestInstancesClaims(t *testing.T) {
	fs := makeFleetSet("ns", "db").subset("east", "west", nil).obj()
	sp := Subset{Name: "east", Cluster: "west", Replicas: 3, BlockSize: 1000, ClaimsLeft: &fleetv1.SubsetClaims{LeftIn: "east", Replicas: 2}}
	got, err := Instances(fs, []Subset{sp})
	if err != nil {
		t.Fatal(err)
	}
	var claims []string
	for _, in := range got {
		claims = append(claims, in.Name+"="+in.Claims+"@"+in.OldClaimsCluster)
	}
	want := []string{"db-east-0=Fresh@east", "db-east-1=Fresh@east", "db-east-2=@"}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want,+got):\n%s", diff)
	}
}

// TestSwitchoverTargetOrdinal (issue 48): the ordinal of a switchover
// target is parsed with its bounds: 2^32 (which int32 wraps to 0) and
// anything outside int32 names no instance; forms the StatefulSet
// controller never writes (sign, leading zero) neither.
func TestSwitchoverTargetOrdinal(t *testing.T) {
	fs := &fleetv1.FleetSet{}
	fs.Name = "db"
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"x"}}}}
	fs.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 2},
		{Name: "west", Cluster: "west", OrdinalStart: 2147483000, Replicas: 647}}
	for to, ok := range map[string]bool{
		"db-east-0": true, "db-east-1": true, "db-east-2": false,
		"db-east-4294967296":          false, // 2^32: int32(n) == 0
		"db-east-4294967297":          false, // int32(n) == 1
		"db-east-9223372036854775808": false, "db-east--1": false, "db-east-+1": false, "db-east-01": false, "db-east-": false,
		"db-west-2147483000": true, "db-west-2147483646": true, "db-west-2147483647": false, "db-west-2147483648": false,
	} {
		_, err := SwitchoverTarget(fs, to)
		if (err == nil) != ok {
			t.Errorf("SwitchoverTarget(%q): %v, want accepted %v", to, err, ok)
		}
	}
	for s, want := range map[string]int32{"0": 0, "7": 7, "2147483647": 2147483647} {
		if n, err := ParseOrdinal(s); err != nil || n != want {
			t.Errorf("ParseOrdinal(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"4294967296", "2147483648", "-1", "+1", "01", "", "1e3", " 1"} {
		if n, err := ParseOrdinal(s); err == nil {
			t.Errorf("ParseOrdinal(%q) = %d, want an error", s, n)
		}
	}
}
