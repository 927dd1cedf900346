//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// TestMemberFrozen freezes a member of the kind fleet with a Relocate
// FleetSet on it and samples, once a second, where each instance's
// containers really run: in the frozen member as containerd on its live
// nodes sees it (the member's apiserver may not answer), elsewhere as the
// apiservers say. Cases (FLEETSET_E2E_FREEZE, default both):
//
//   - control-plane: only the member's control-plane node is frozen; its
//     workers' kubelets keep the instances' containers running and nothing
//     on the member can delete them. The hub must not start a copy while
//     they run.
//   - whole: every node of the member is frozen for longer than the
//     relocation deadline, then thawed. The hub relocates; on the thaw the
//     member fences its stale copies (the thaw guard) before anything else.
//
// Each case holds the freeze FLEETSET_E2E_FREEZE_HOLD (default 4m, past the
// relocation deadline of 60 s heartbeat timeout + 20 s toleration + 30 s
// fence grace + 20 s termination grace) and fails on any sample with a pod
// name running in two clusters, except, for a whole member, in the first
// FLEETSET_E2E_THAW_WINDOW (default 5 s) after the thaw: a thawed node's
// containers run again the moment it thaws, before any process of the
// member can act (the member fences in its first sweep); those samples are
// reported apart.
func TestMemberFrozen(t *testing.T) {
	f := theFleet
	k, ok := f.provider.(*framework.Kind)
	if !ok {
		t.Skipf("the %s fleet cannot freeze a member's nodes (kind only)", f.provider.Name())
	}
	hold := framework.EnvDuration("FLEETSET_E2E_FREEZE_HOLD", 4*time.Minute)
	for _, c := range strings.Split(framework.EnvString("FLEETSET_E2E_FREEZE", "control-plane,whole"), ",") {
		proc := map[string]string{"control-plane": framework.KindControlPlane, "whole": ""}
		p, ok := proc[c]
		if !ok {
			t.Fatalf("FLEETSET_E2E_FREEZE: %q is neither control-plane nor whole", c)
		}
		t.Run(c, func(t *testing.T) { memberFrozen(t, f, k, p, hold) })
	}
}

// freezeSampler is the sampler of TestMemberFrozen: per second, the frozen
// member's running containers by node, the others' Running pods by
// apiserver.
type freezeSampler struct {
	mu      sync.Mutex
	samples int
	dual    []string
	// thawed is when a whole member was thawed; dual samples up to
	// thawWindow after it are counted in thawDual, not in dual.
	thawed, until time.Time
	thawDual      []string
	moved         time.Time // first sample with an instance of the victim elsewhere
	wg            sync.WaitGroup
	stop          context.CancelFunc
}

func memberFrozen(t *testing.T, f *fleet, k *framework.Kind, proc string, hold time.Duration) {
	ns := f.newNamespace(t, "e2e-frozen")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	// The instances run on the workers: the control-plane case freezes the
	// control-plane node only, and the workers keep them running.
	onKindWorkers(fs)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](20),
		FenceGraceSeconds: 30, Failback: fleetv1.FailbackManual}
	victim := f.members[0]
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 4)
	before, err := f.runningOrdinals(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	onNodes, _, err := k.NodeRunningPods(t.Context(), victim.name, ns)
	if err != nil {
		t.Fatal(err)
	}
	for pod := range before[victim.name] {
		if onNodes[pod] == "" {
			t.Fatalf("%s Running in %s by its apiserver but no container of it runs on its nodes (%v): the sampler cannot see it", pod, victim.name, onNodes)
		}
	}
	t.Logf("%s runs %d instances on its nodes: %v", victim.name, len(onNodes), onNodes)

	ctx, cancel := context.WithCancel(context.Background())
	s := &freezeSampler{stop: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for ctx.Err() == nil {
			s.sample(ctx, f, k, victim.name, ns, before[victim.name])
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	finish := func() { s.stop(); s.wg.Wait() }
	t.Cleanup(finish)

	frozenAt := time.Now()
	f.do(t, framework.OpPause, victim.name, proc)
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			f.do(t, framework.OpResume, victim.name, proc)
		}
	})
	time.Sleep(hold)
	thawAt := time.Now()
	if proc == "" {
		s.mu.Lock()
		s.thawed, s.until = thawAt, thawAt.Add(framework.EnvDuration("FLEETSET_E2E_THAW_WINDOW", 5*time.Second))
		s.mu.Unlock()
	}
	f.do(t, framework.OpResume, victim.name, proc)
	thawed = true
	var relocated bool
	eventually(t, 5*time.Minute, "every instance Running in exactly one cluster, the FleetSet Ready", func(ctx context.Context) (bool, string, error) {
		got, err := f.runningOrdinals(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		where := map[string][]string{}
		for m, pods := range got {
			for pod := range pods {
				where[pod] = append(where[pod], m)
			}
		}
		for pod := range before[victim.name] {
			relocated = relocated || !slices.Contains(where[pod], victim.name)
			if len(where[pod]) != 1 {
				return false, fmt.Sprintf("%s Running in %v", pod, where[pod]), nil
			}
		}
		fs, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return fs.Status.ReadyReplicas == 4, fmt.Sprintf("%d of 4 Ready", fs.Status.ReadyReplicas), nil
	})
	time.Sleep(10 * time.Second) // a few samples of the settled state
	finish()
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := "never"
	if !s.moved.IsZero() {
		moved = s.moved.Sub(frozenAt).Round(time.Second).String() + " after the freeze"
	}
	what := map[string]string{"": "every node", framework.KindControlPlane: "the control-plane node"}[proc]
	t.Logf("RESULT freeze of %s's %s for %v: a copy of its instances started elsewhere %s; settled %v after the thaw (relocated: %v); %d samples, %d with a pod name running in two clusters, %d more in the first %v after the thaw",
		victim.name, what, hold, moved, time.Since(thawAt).Round(time.Second), relocated, s.samples, len(s.dual), len(s.thawDual), s.until.Sub(s.thawed))
	for _, v := range s.thawDual {
		t.Logf("after the thaw, before the member could act: %s", v)
	}
	for _, v := range s.dual {
		t.Error(v)
	}
}

// sample records one sample: the victim's instances running on its nodes
// (containerd), every other member's Running pods (apiserver; a member that
// does not answer in 5 s is left out of that sample).
func (s *freezeSampler) sample(ctx context.Context, f *fleet, k *framework.Kind, victim, ns string, home map[string]types.UID) {
	onNodes, _, err := k.NodeRunningPods(ctx, victim, ns)
	if err != nil {
		return
	}
	now := time.Now()
	var dual []string
	moved := false
	for _, m := range f.members {
		if m.name == victim {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var pods corev1.PodList
		err := m.c.List(lctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "db"})
		cancel()
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			if _, ok := home[p.Name]; ok {
				moved = true
			}
			if node := onNodes[p.Name]; node != "" {
				dual = append(dual, fmt.Sprintf("%s: %s runs on %s node %s and in %s", now.Format(time.TimeOnly), p.Name, victim, node, m.name))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if !s.thawed.IsZero() && !now.Before(s.thawed) && now.Before(s.until) {
		s.thawDual = append(s.thawDual, dual...)
	} else {
		s.dual = append(s.dual, dual...)
	}
	if moved && s.moved.IsZero() {
		s.moved = now
	}
}
