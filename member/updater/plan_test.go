package updater

import (
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var (
	now   = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	roles = []fleetv1.Role{
		{Name: "primary", IsLeader: true},
		{Name: "replica", UpdatePriority: 2},
		{Name: "learner", UpdatePriority: 1},
	}
)

func testSTS(start, replicas int32) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-east", UID: "sts-uid", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: "db-east-new", CurrentRevision: "db-east-old"},
	}
	if start != 0 {
		s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: start}
	}
	return s
}

// pod is ordinal n of testSTS, Running and Ready since an hour, of role
// and revision rev ("old" or "new").
func pod(n int, role, rev string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-east-" + strconv.Itoa(n), UID: types.UID("uid-" + strconv.Itoa(n)),
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: "db-east-" + rev},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: "sts-uid", Controller: ptr.To(true)}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
	}
	if role != "" {
		p.Labels[fleetv1.LabelRole] = role
	}
	return p
}

func notReady(p *v1.Pod) *v1.Pod {
	p.Status.Conditions[0].Status = v1.ConditionFalse
	return p
}

func compute(sts *appsv1.StatefulSet, pods []*v1.Pod, maxUnavailable int32, leader fleetv1.LeaderUpdate) Plan {
	return Compute(Input{StatefulSet: sts, Pods: pods, Roles: roles, Now: now,
		Update: fleetv1.PlacementUpdate{MaxUnavailable: maxUnavailable, Leader: leader}})
}

func check(t *testing.T, what string, got []*v1.Pod, want ...string) {
	t.Helper()
	if g := names(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Errorf("%s = %v, want %v", what, g, want)
	}
}

func TestOrder(t *testing.T) {
	// Ordinals 0..4: 0 the leader, 1 and 3 replicas (priority 2), 2 and 4
	// learners (priority 1), 5 no role (priority 0); all outdated.
	pods := []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), pod(2, "learner", "old"),
		pod(3, "replica", "old"), pod(4, "learner", "old"), pod(5, "", "old")}
	sts := testSTS(0, 6)
	pl := compute(sts, pods, 1, fleetv1.LeaderHold)
	check(t, "outdated", pl.Outdated, "db-east-5", "db-east-4", "db-east-2", "db-east-3", "db-east-1", "db-east-0")
	check(t, "delete", pl.Delete, "db-east-5")
	check(t, "held leaders", pl.HeldLeaders, "db-east-0")
	if pl.Budget != 1 || len(pl.Unavailable) != 0 {
		t.Errorf("budget %d, unavailable %v", pl.Budget, pl.Unavailable)
	}
	pl = compute(sts, pods, 3, fleetv1.LeaderUpdateNow)
	check(t, "delete (3)", pl.Delete, "db-east-5", "db-east-4", "db-east-2")
	// A budget larger than the followers: the leader still waits for
	// them (last in the subset).
	pl = compute(sts, pods, 10, fleetv1.LeaderUpdateNow)
	check(t, "delete (10)", pl.Delete, "db-east-5", "db-east-4", "db-east-2", "db-east-3", "db-east-1")
	check(t, "held leaders (10)", pl.HeldLeaders, "db-east-0")
}

func TestBudget(t *testing.T) {
	sts := testSTS(0, 3)
	cases := []struct {
		name            string
		pods            []*v1.Pod
		max             int32
		leader          fleetv1.LeaderUpdate
		wantDelete      []string
		wantSwitchover  []string
		wantUnavailable int
	}{
		{"hold: one follower at a time", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), pod(2, "replica", "old")},
			1, fleetv1.LeaderHold, []string{"db-east-2"}, nil, 0},
		{"one replaced not Ready yet: wait", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), notReady(pod(2, "replica", "new"))},
			1, fleetv1.LeaderHold, nil, nil, 1},
		{"one missing: wait", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old")},
			1, fleetv1.LeaderHold, nil, nil, 1},
		{"maxUnavailable 0 holds", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), pod(2, "replica", "old")},
			0, fleetv1.LeaderUpdateNow, nil, nil, 0},
		{"maxUnavailable 2, one unavailable", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), notReady(pod(2, "replica", "old"))},
			2, fleetv1.LeaderHold, []string{"db-east-2"}, nil, 1},
		{"hold: followers done, leader untouched", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "new"), pod(2, "replica", "new")},
			1, fleetv1.LeaderHold, nil, nil, 0},
		{"switchover: annotate, never delete", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "new"), pod(2, "replica", "new")},
			1, fleetv1.LeaderSwitchover, nil, []string{"db-east-0"}, 0},
		{"update: leader last", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "new"), pod(2, "replica", "new")},
			1, fleetv1.LeaderUpdateNow, []string{"db-east-0"}, nil, 0},
		{"update: leader waits for followers", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), pod(2, "replica", "new")},
			2, fleetv1.LeaderUpdateNow, []string{"db-east-1"}, nil, 0},
		{"switchover: followers go on", []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old"), pod(2, "replica", "new")},
			1, fleetv1.LeaderSwitchover, []string{"db-east-1"}, []string{"db-east-0"}, 0},
		{"all updated", []*v1.Pod{pod(0, "primary", "new"), pod(1, "replica", "new"), pod(2, "replica", "new")},
			3, fleetv1.LeaderUpdateNow, nil, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl := compute(sts, tc.pods, tc.max, tc.leader)
			check(t, "delete", pl.Delete, tc.wantDelete...)
			check(t, "switchover", pl.Switchover, tc.wantSwitchover...)
			if len(pl.Unavailable) != tc.wantUnavailable {
				t.Errorf("unavailable %v, want %d", pl.Unavailable, tc.wantUnavailable)
			}
			if pl.Wait != "" {
				t.Errorf("wait %q", pl.Wait)
			}
		})
	}
}

func TestSwitchoverOnce(t *testing.T) {
	leader := pod(0, "primary", "old")
	leader.Annotations = map[string]string{fleetv1.AnnotationSwitchoverRequested: now.Format(time.RFC3339)}
	pl := compute(testSTS(0, 2), []*v1.Pod{leader, pod(1, "replica", "new")}, 1, fleetv1.LeaderSwitchover)
	check(t, "switchover", pl.Switchover)
	check(t, "delete", pl.Delete)
	check(t, "held", pl.HeldLeaders, "db-east-0")
	// The role moved: the old leader is a follower now, replaced as such.
	old := pod(0, "replica", "old")
	old.Annotations = leader.Annotations
	pl = compute(testSTS(0, 2), []*v1.Pod{old, pod(1, "primary", "new")}, 1, fleetv1.LeaderSwitchover)
	check(t, "delete after the switchover", pl.Delete, "db-east-0")
}

func TestWaitAndOwnership(t *testing.T) {
	pods := []*v1.Pod{pod(0, "primary", "old"), pod(1, "replica", "old")}
	rolling := testSTS(0, 2)
	rolling.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	if pl := compute(rolling, pods, 2, fleetv1.LeaderUpdateNow); pl.Wait == "" || len(pl.Delete) > 0 {
		t.Errorf("RollingUpdate: %+v", pl)
	}
	unset := testSTS(0, 2)
	unset.Spec.UpdateStrategy.Type = ""
	if pl := compute(unset, pods, 2, fleetv1.LeaderUpdateNow); pl.Wait == "" || len(pl.Delete) > 0 {
		t.Errorf("no updateStrategy: %+v", pl)
	}
	stale := testSTS(0, 2)
	stale.Generation = 3
	if pl := compute(stale, pods, 2, fleetv1.LeaderUpdateNow); pl.Wait == "" || len(pl.Delete) > 0 {
		t.Errorf("observedGeneration behind: %+v", pl)
	}
	// A pod of another StatefulSet of the same name (another UID), one
	// being deleted, one this process deleted, one outside the ordinals.
	other := pod(2, "replica", "old")
	other.OwnerReferences[0].UID = "other"
	deleting := pod(1, "replica", "old")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	sts := testSTS(0, 4)
	pl := Compute(Input{StatefulSet: sts, Roles: roles, Now: now, Update: fleetv1.PlacementUpdate{MaxUnavailable: 4, Leader: fleetv1.LeaderHold},
		Pods:     []*v1.Pod{pod(0, "primary", "old"), deleting, other, pod(3, "replica", "old"), pod(9, "replica", "old")},
		Deleting: map[types.UID]bool{"uid-3": true}})
	check(t, "delete", pl.Delete)
	if len(pl.Unavailable) != 3 || pl.Budget != 1 {
		t.Errorf("unavailable %v budget %d, want 3 and 1", pl.Unavailable, pl.Budget)
	}
	// ordinals.start 10.
	pl = compute(testSTS(10, 2), []*v1.Pod{pod(10, "replica", "old"), pod(11, "replica", "old"), pod(1, "replica", "old")}, 1, fleetv1.LeaderHold)
	check(t, "delete (start 10)", pl.Delete, "db-east-11")
}

func TestMinReadySeconds(t *testing.T) {
	sts := testSTS(0, 2)
	sts.Spec.MinReadySeconds = 30
	fresh := pod(1, "replica", "new")
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
	pl := compute(sts, []*v1.Pod{pod(0, "replica", "old"), fresh}, 1, fleetv1.LeaderHold)
	check(t, "delete", pl.Delete)
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
	pl = compute(sts, []*v1.Pod{pod(0, "replica", "old"), fresh}, 1, fleetv1.LeaderHold)
	check(t, "delete", pl.Delete, "db-east-0")
}
