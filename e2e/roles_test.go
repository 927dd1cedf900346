//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// setRole labels pod ns/name in member m fleetset.io/role=role, as a
// workload that reports its own role does (the label contract).
func setRole(ctx context.Context, m member, ns, name, role string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{fleetv1.LabelRole: role}}})
	return m.c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.RawPatch(types.MergePatchType, patch))
}

// roleOf returns the pod's role label and whether it was asked to switch
// over.
func roleOf(ctx context.Context, m member, ns, name string) (string, bool, error) {
	p := &corev1.Pod{}
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		return "", false, err
	}
	_, asked := p.Annotations[fleetv1.AnnotationSwitchoverRequested]
	return p.Labels[fleetv1.LabelRole], asked, nil
}

// TestRolesAcrossTheFleet: a FleetSet whose workload reports its own role
// (no probe: the label contract). The leader shows in status.leader; a
// second leader is MultipleLeaders naming both; a role Service selects the
// role in every member. A rolling update then replaces every follower
// before the leader (one-second samples), asks the leader for a switchover
// and, the role moved by the workload, replaces the old leader too.
func TestRolesAcrossTheFleet(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-roles")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly}}
	fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "db-rw", Role: "primary", Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}}}
	fs.Spec.Switchover = &fleetv1.Switchover{Policy: fleetv1.SwitchoverRequired, DeadlineSeconds: 5}
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 4)

	// The workload: the lowest ordinal of the second member leads, every
	// other instance (re-created ones too) is a replica.
	var leader instance
	for _, in := range ins {
		if in.cluster == f.members[1].name && (leader.pod == "" || in.ordinal < leader.ordinal) {
			leader = in
		}
	}
	var mu sync.Mutex
	leaderPod, leaderCluster := leader.pod, leader.cluster
	ctx, cancel := context.WithCancel(t.Context())
	workload := make(chan struct{})
	go func() {
		defer close(workload)
		for tick := time.NewTicker(500 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			cur, err := f.instances(ctx, ns, "db")
			if err != nil {
				continue
			}
			mu.Lock()
			lp, lc := leaderPod, leaderCluster
			mu.Unlock()
			for _, in := range cur {
				want := "replica"
				if in.pod == lp && in.cluster == lc {
					want = "primary"
				}
				if role, _, err := roleOf(ctx, f.member(in.cluster), ns, in.pod); err == nil && role != want {
					_ = setRole(ctx, f.member(in.cluster), ns, in.pod, want)
				}
			}
		}
	}()
	defer func() { cancel(); <-workload }()

	eventually(t, waitTimeout, "status.leader "+leader.pod, func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		l := got.Status.Leader
		return l != nil && l.Name == leader.pod && l.Cluster == leader.cluster, fmt.Sprintf("leader %+v", l), nil
	})
	for _, m := range f.members {
		svc := &corev1.Service{}
		if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db-rw"}, svc); err != nil || svc.Spec.Selector[fleetv1.LabelRole] != "primary" {
			t.Errorf("%s: Service db-rw %v (selector %v)", m.name, err, svc.Spec.Selector)
		}
	}

	// Split brain: a replica of the first member claims the lead too.
	var other instance
	for _, in := range ins {
		if in.cluster == f.members[0].name {
			other = in
			break
		}
	}
	mu.Lock()
	leaderPod, leaderCluster = "", ""
	mu.Unlock()
	for _, in := range []instance{leader, other} {
		if err := setRole(t.Context(), f.member(in.cluster), ns, in.pod, "primary"); err != nil {
			t.Fatal(err)
		}
	}
	// Hold the workload off while both claim it.
	cancel()
	<-workload
	for _, in := range []instance{leader, other} {
		if err := setRole(t.Context(), f.member(in.cluster), ns, in.pod, "primary"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, waitTimeout, "Degraded MultipleLeaders naming both", func(ctx context.Context) (bool, string, error) {
		c, detail, err := f.degraded(ctx, ns, "db")
		return c != nil && c.Reason == fleetv1.ReasonMultipleLeaders && strings.Contains(c.Message, leader.pod+" in cluster "+leader.cluster) &&
			strings.Contains(c.Message, other.pod+" in cluster "+other.cluster), detail, err
	})
	if err := setRole(t.Context(), f.member(other.cluster), ns, other.pod, "replica"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	leaderPod, leaderCluster = leader.pod, leader.cluster
	mu.Unlock()
	ctx, cancel = context.WithCancel(t.Context())
	workload = make(chan struct{})
	go func() {
		defer close(workload)
		for tick := time.NewTicker(500 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			cur, err := f.instances(ctx, ns, "db")
			if err != nil {
				continue
			}
			mu.Lock()
			lp, lc := leaderPod, leaderCluster
			mu.Unlock()
			for _, in := range cur {
				want := "replica"
				if in.pod == lp && in.cluster == lc {
					want = "primary"
				}
				if role, _, err := roleOf(ctx, f.member(in.cluster), ns, in.pod); err == nil && role != want {
					_ = setRole(ctx, f.member(in.cluster), ns, in.pod, want)
				}
			}
		}
	}()
	eventually(t, waitTimeout, "one leader again", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		return err == nil && got.Status.Leader != nil && got.Status.Leader.Name == leader.pod, "", err
	})

	// A rolling update: followers first, then the switchover.
	uids := podUIDs(ins)
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
	})
	var violations []string
	eventually(t, 3*waitTimeout, "every follower replaced and the leader asked to switch over", func(ctx context.Context) (bool, string, error) {
		cur, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		replaced := 0
		for _, in := range cur {
			if in.uid != uids[in.cluster+"/"+in.pod] {
				if in.pod == leader.pod && in.cluster == leader.cluster {
					violations = append(violations, fmt.Sprintf("the leader %s was replaced while followers were outdated: %s", in.pod, podSummary(cur)))
				}
				replaced++
			}
		}
		_, asked, err := roleOf(ctx, f.member(leader.cluster), ns, leader.pod)
		return replaced == 3 && asked && len(cur) == 4, fmt.Sprintf("%d replaced, switchover asked %v: %s", replaced, asked, podSummary(cur)), err
	})
	eventually(t, waitTimeout, "Required: RolloutBlocked naming the leader", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		c := condition(got, fleetv1.ConditionProgressing)
		return c != nil && c.Reason == fleetv1.ReasonRolloutBlocked && strings.Contains(c.Message, "SwitchoverHeld: leader "+leader.pod), rolloutSummary(got), nil
	})
	if p, _, _ := roleOf(t.Context(), f.member(leader.cluster), ns, leader.pod); p != "primary" {
		t.Errorf("the held leader's role: %q", p)
	}
	// The workload answers: the lead moves to an updated replica.
	var next instance
	cur, err := f.instances(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range cur {
		if in.pod != leader.pod {
			next = in
			break
		}
	}
	mu.Lock()
	leaderPod, leaderCluster = next.pod, next.cluster
	mu.Unlock()
	eventually(t, 3*waitTimeout, "the old leader replaced, the rollout complete, "+next.pod+" leading", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		cur, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		oldReplaced := false
		for _, in := range cur {
			if in.pod == leader.pod && in.uid != uids[in.cluster+"/"+in.pod] && in.ready {
				oldReplaced = true
			}
		}
		return oldReplaced && got.Status.CurrentRevision == got.Status.UpdateRevision && got.Status.Leader != nil && got.Status.Leader.Name == next.pod,
			rolloutSummary(got) + " " + podSummary(cur), nil
	})
	cancel()
	<-workload
	for _, v := range violations {
		t.Error(v)
	}
}

// TestSwitchoverBestEffort: a leader that never hands its role over is
// updated anyway once switchover.deadlineSeconds has passed (BestEffort),
// after every follower of the fleet, with a SwitchoverSkipped event.
func TestSwitchoverBestEffort(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-switchover")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	fs.Spec.Switchover = &fleetv1.Switchover{Policy: fleetv1.SwitchoverBestEffort, DeadlineSeconds: 5}
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 4)
	leader := ins[0] // the lowest ordinal leads, and never lets go
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { // the workload: labels every instance, the leader's pod name keeps the lead
		defer close(done)
		for tick := time.NewTicker(500 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			cur, err := f.instances(ctx, ns, "db")
			if err != nil {
				continue
			}
			for _, in := range cur {
				want := "replica"
				if in.pod == leader.pod {
					want = "primary"
				}
				if role, _, err := roleOf(ctx, f.member(in.cluster), ns, in.pod); err == nil && role != want {
					_ = setRole(ctx, f.member(in.cluster), ns, in.pod, want)
				}
			}
		}
	}()
	defer func() { cancel(); <-done }()
	eventually(t, waitTimeout, "status.leader "+leader.pod, func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		return err == nil && got.Status.Leader != nil && got.Status.Leader.Name == leader.pod, "", err
	})

	uids := podUIDs(ins)
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
	})
	var early []string
	eventually(t, 3*waitTimeout, "every instance replaced, the leader last, the rollout complete", func(ctx context.Context) (bool, string, error) {
		cur, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		followersLeft, leaderReplaced := 0, false
		for _, in := range cur {
			replaced := in.uid != uids[in.cluster+"/"+in.pod]
			switch {
			case in.pod == leader.pod:
				leaderReplaced = replaced
			case !replaced:
				followersLeft++
			}
		}
		if leaderReplaced && followersLeft > 0 {
			early = append(early, podSummary(cur))
		}
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return leaderReplaced && followersLeft == 0 && len(cur) == 4 && got.Status.CurrentRevision == got.Status.UpdateRevision,
			rolloutSummary(got) + " " + podSummary(cur), nil
	})
	for _, e := range early {
		t.Errorf("the leader was replaced before every follower: %s", e)
	}
	if !f.hubEvent(t, ns, "db", fleetv1.ReasonSwitchoverSkipped, leader.pod) {
		t.Errorf("no %s event naming %s", fleetv1.ReasonSwitchoverSkipped, leader.pod)
	}
}
