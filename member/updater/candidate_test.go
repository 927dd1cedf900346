package updater

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestCandidate(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db-east", UID: "sts"},
		Spec:   appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4)},
		Status: appsv1.StatefulSetStatus{UpdateRevision: "new"}}
	pod := func(n, rev, role string, ready bool) *v1.Pod {
		st := v1.ConditionFalse
		if ready {
			st = v1.ConditionTrue
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-east-" + n, UID: types.UID("uid-db-east-" + n),
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: rev, fleetv1.LabelRole: role},
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db-east", UID: "sts", Controller: ptr.To(true)}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}}}}
	}
	roles := []fleetv1.Role{{Name: "leader", IsLeader: true}, {Name: "follower"}}
	tests := []struct {
		name  string
		pods  []*v1.Pod
		fleet []string
		want  string
	}{
		{name: "the lowest updated, Ready follower of the subset",
			pods: []*v1.Pod{pod("0", "old", "leader", true), pod("3", "new", "follower", true), pod("2", "new", "follower", true), pod("1", "old", "follower", true)},
			want: "db-east-2"},
		{name: "not Ready or outdated followers are no candidates: the hub's",
			pods:  []*v1.Pod{pod("0", "old", "leader", true), pod("1", "new", "follower", false), pod("2", "old", "follower", true)},
			fleet: []string{"db-east-0", "db-west-1000"}, want: "db-west-1000"},
		{name: "none: the workload chooses",
			pods: []*v1.Pod{pod("0", "old", "leader", true)}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{StatefulSet: sts, Pods: tc.pods, Roles: roles, Now: time.Now()}
			if got := Candidate(in, "db-east-0", tc.fleet); got != tc.want {
				t.Errorf("Candidate: want %q, got %q", tc.want, got)
			}
		})
	}
}
