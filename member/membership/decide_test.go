package membership

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestJoin(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-east-0", UID: "uid-2"}}
	joinedPod := pod.DeepCopy()
	joinedPod.Annotations = map[string]string{fleetv1.AnnotationMemberJoined: "uid-2"}
	oldJoinedPod := pod.DeepCopy()
	oldJoinedPod.Annotations = map[string]string{fleetv1.AnnotationMemberJoined: "uid-1"}
	joined := func(epoch string) Claim {
		return Claim{Name: "data-db-east-0", Annotations: map[string]string{fleetv1.AnnotationMemberJoined: "uid-1", fleetv1.AnnotationMemberJoinedEpoch: epoch}}
	}
	relocated := &fleetv1.SubsetOrigin{Cluster: "west", Epoch: 2, Reason: fleetv1.LeaveRelocated}
	moved := &fleetv1.SubsetOrigin{Cluster: "west", Epoch: 1, Reason: fleetv1.LeaveMoved}
	tests := []struct {
		name string
		in   JoinInput
		want JoinDecision
	}{
		{name: "fresh claim, no origin: FirstStart", in: JoinInput{Pod: pod, Claims: []Claim{{Name: "data"}}}, want: JoinDecision{Reason: fleetv1.JoinFirstStart}},
		{name: "restart on a joined claim: joined, nothing runs", in: JoinInput{Pod: pod, Claims: []Claim{joined("0")}}, want: JoinDecision{Joined: true}},
		{name: "one of two claims not joined: joins", in: JoinInput{Pod: pod, Claims: []Claim{joined("0"), {Name: "logs"}}, JoinedBefore: true},
			want: JoinDecision{Reason: fleetv1.JoinFreshVolume}},
		{name: "replaced volume of an ordinal that joined here: FreshVolume", in: JoinInput{Pod: pod, Claims: []Claim{{Name: "data"}}, JoinedBefore: true},
			want: JoinDecision{Reason: fleetv1.JoinFreshVolume}},
		{name: "claim left by scale-down: Rejoin", in: JoinInput{Pod: pod, Claims: []Claim{{Name: "data", Annotations: map[string]string{fleetv1.AnnotationMemberLeft: "ScaledDown"}}}, JoinedBefore: true},
			want: JoinDecision{Reason: fleetv1.JoinRejoin}},
		{name: "relocated subset, fresh claim: leave then join, Relocated", in: JoinInput{Pod: pod, Claims: []Claim{{Name: "data"}}, Origin: relocated},
			want: JoinDecision{Reason: fleetv1.JoinRelocated, LeaveFirst: fleetv1.LeaveRelocated}},
		{name: "moved subset: Moved", in: JoinInput{Pod: pod, Claims: []Claim{{Name: "data"}}, Origin: moved},
			want: JoinDecision{Reason: fleetv1.JoinMoved, LeaveFirst: fleetv1.LeaveMoved}},
		{name: "failed back home (epoch 3, no origin), claim joined at epoch 0: Moved", in: JoinInput{Pod: pod, Claims: []Claim{joined("0")}, Epoch: 3},
			want: JoinDecision{Reason: fleetv1.JoinMoved, LeaveFirst: fleetv1.LeaveMoved}},
		{name: "failback onto a claim joined at an older epoch: joins again", in: JoinInput{Pod: pod, Claims: []Claim{joined("0")}, Epoch: 2, Origin: relocated},
			want: JoinDecision{Reason: fleetv1.JoinRelocated, LeaveFirst: fleetv1.LeaveRelocated}},
		{name: "claim joined at the placement's epoch: joined", in: JoinInput{Pod: pod, Claims: []Claim{joined("2")}, Epoch: 2, Origin: relocated}, want: JoinDecision{Joined: true}},
		{name: "no claims, pod annotated with its own UID: joined", in: JoinInput{Pod: joinedPod}, want: JoinDecision{Joined: true}},
		{name: "no claims, annotation of another pod: joins", in: JoinInput{Pod: oldJoinedPod}, want: JoinDecision{Reason: fleetv1.JoinFirstStart}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Join(tc.in); got != tc.want {
				t.Errorf("Join: want %+v, got %+v", tc.want, got)
			}
		})
	}
}

func TestLeftOrdinals(t *testing.T) {
	leave := []fleetv1.PlacementLeave{{Ordinal: 3}, {Ordinal: 4}}
	got := fleetv1.FormatOrdinals(LeftOrdinals(leave, map[int32]bool{4: true, 7: true}))
	if got != "4" {
		t.Errorf("want 4 (7 is no longer asked for), got %q", got)
	}
}
