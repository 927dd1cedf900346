//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// TestRollingUpdateAcrossTheFleet changes the template of a FleetSet of 9
// under RollingUpdate, subsetOrder naming the second subset first, and samples
// the members every second until the rollout completes: never more than
// maxUnavailable (1) instance unavailable fleet-wide, and no instance of the
// second subset in order on the new template before the whole first subset
// is. Midway it pauses the rollout (no pod changes, RolloutPaused), and cuts
// the second subset's member off from the hub while it updates
// (RolloutBlocked naming it). At the end currentRevision is updateRevision,
// every instance runs the new template, and each subset step has its event.
func TestRollingUpdateAcrossTheFleet(t *testing.T) {
	f := theFleet
	const replicas, maxUnavailable = 9, 1
	rolloutTimeout := 5 * waitTimeout
	ns := f.newNamespace(t, "e2e-rollout")
	fs := f.newFleetSet(ns, "db", replicas)
	first, second := fs.Spec.Topology.Subsets[1], fs.Spec.Topology.Subsets[0]
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{Type: fleetv1.RollingUpdateStrategyType,
		RollingUpdate: &fleetv1.RollingUpdateFleetSet{SubsetOrder: []string{first.Name}}}
	// kwok makes pods Ready at once: minReadySeconds (forwarded to the
	// StatefulSets) keeps every instance step observable for some seconds,
	// so the pause and the cut-off below land mid-rollout on a fast fleet.
	fs.Spec.MinReadySeconds = 8
	waitFor := func(timeout time.Duration, what string, cond func(*fleetv1.FleetSet) bool) *fleetv1.FleetSet {
		t.Helper()
		var got *fleetv1.FleetSet
		eventually(t, timeout, what, func(ctx context.Context) (bool, string, error) {
			var err error
			if got, err = f.getFleetSet(ctx, ns, "db"); err != nil {
				return false, "", err
			}
			return cond(got), rolloutSummary(got), nil
		})
		return got
	}
	start, last := time.Now(), time.Now()
	lap := func(what string) {
		t.Helper()
		t.Logf("%-60s +%-5v (at %v)", what, time.Since(last).Round(time.Second), time.Since(start).Round(time.Second))
		last = time.Now()
	}

	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", replicas)
	got := waitFor(waitTimeout, "creation complete: currentRevision set", func(fs *fleetv1.FleetSet) bool {
		return fs.Status.CurrentRevision != "" && fs.Status.CurrentRevision == fs.Status.UpdateRevision
	})
	rev0, size := got.Status.CurrentRevision, map[string]int{}
	for _, ss := range got.Status.Subsets {
		size[ss.Name] = int(ss.Replicas)
	}
	lap(fmt.Sprintf("%d ready, revision %s, %v", replicas, rev0, size))

	// Sample the members every second until the rollout completes.
	var mu sync.Mutex
	var samples, worst int
	var violations []string
	ctx, cancel := context.WithCancel(t.Context())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for ; ctx.Err() == nil; <-tick.C {
			ins, err := f.instances(ctx, ns, "db")
			if err != nil {
				continue
			}
			updated := map[string]int{}
			unavailable := replicas
			for _, in := range ins {
				if in.ready {
					unavailable--
				}
				if in.version == "2" {
					updated[in.subset]++
				}
			}
			mu.Lock()
			samples, worst = samples+1, max(worst, unavailable)
			if unavailable > maxUnavailable {
				violations = append(violations, fmt.Sprintf("%v: %d unavailable: %s", time.Since(start).Round(time.Second), unavailable, podSummary(ins)))
			}
			if updated[second.Name] > 0 && updated[first.Name] < size[first.Name] {
				violations = append(violations, fmt.Sprintf("%v: %s updated before %s is done: %s", time.Since(start).Round(time.Second), second.Name, first.Name, podSummary(ins)))
			}
			mu.Unlock()
		}
	}()
	stopSampling := func() { cancel(); <-sampled }
	defer stopSampling()

	// A new template: the first subset in subsetOrder updates, the other waits.
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
	})
	got = waitFor(waitTimeout, "RolloutUpdating naming subset "+first.Name, func(fs *fleetv1.FleetSet) bool {
		return fs.Status.UpdateRevision != rev0 && progressing(fs, fleetv1.ReasonRolloutUpdating, subsetOnCluster(first))
	})
	rev1 := got.Status.UpdateRevision
	if got.Status.CurrentRevision != rev0 || subsetPhase(got, second.Name) != fleetv1.SubsetWaiting {
		t.Errorf("at the start of the rollout: %s", rolloutSummary(got))
	}
	lap("template changed: revision " + rev1 + ", " + first.Name + " updating")

	// Paused once the first subset has an updated instance: the instance
	// being replaced finishes, then nothing changes.
	eventually(t, rolloutTimeout, first.Name+": an instance on the new template", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		return err == nil && countUpdated(ins, first.Name) > 0, podSummary(ins), err
	})
	lap(first.Name + ": first instance updated; pausing")
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.RollingUpdate.Paused = true })
	waitFor(waitTimeout, "RolloutPaused", func(fs *fleetv1.FleetSet) bool { return progressing(fs, fleetv1.ReasonRolloutPaused, "") })
	held := f.waitSettled(t, ns, replicas)
	lap(fmt.Sprintf("paused and settled, %d/%d of %s updated", countUpdated(held, first.Name), size[first.Name], first.Name))
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		ins, err := f.instances(t.Context(), ns, "db")
		if err == nil && podSummary(ins) != podSummary(held) {
			t.Fatalf("paused, the instances changed:\nfrom %s\nto   %s", podSummary(held), podSummary(ins))
		}
	}
	if got, err := f.getFleetSet(t.Context(), ns, "db"); err != nil || !progressing(got, fleetv1.ReasonRolloutPaused, "") {
		t.Errorf("after 20s paused: %s %v", rolloutSummary(got), err)
	}
	lap("no instance changed for 20s; unpausing")
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.RollingUpdate.Paused = false })

	// The first subset done, the second updates; cut its member off from the
	// hub: blocked, not skipped, until it is back.
	waitFor(rolloutTimeout, "RolloutUpdating naming subset "+second.Name, func(fs *fleetv1.FleetSet) bool {
		return subsetPhase(fs, first.Name) == fleetv1.SubsetUpdated && progressing(fs, fleetv1.ReasonRolloutUpdating, subsetOnCluster(second))
	})
	lap(first.Name + " updated, " + second.Name + " updating; stopping its agent")
	if !f.provider.Supports(framework.OpStop, second.Cluster, framework.DefaultAgent) {
		t.Logf("the %s fleet offers no way to stop %s's agent: the blocked rollout is not checked", f.provider.Name(), second.Cluster)
	} else {
		f.do(t, framework.OpStop, second.Cluster, framework.DefaultAgent)
		stopped := true
		t.Cleanup(func() {
			if stopped {
				f.do(t, framework.OpStart, second.Cluster, framework.DefaultAgent)
			}
		})
		waitFor(waitTimeout, "RolloutBlocked naming cluster "+second.Cluster, func(fs *fleetv1.FleetSet) bool {
			return progressing(fs, fleetv1.ReasonRolloutBlocked, fmt.Sprintf("subset %s: cluster %s is unavailable", second.Name, second.Cluster))
		})
		lap("RolloutBlocked; starting the agent again")
		f.do(t, framework.OpStart, second.Cluster, framework.DefaultAgent)
		stopped = false
	}

	got = waitFor(rolloutTimeout, "rollout complete", func(fs *fleetv1.FleetSet) bool {
		c := condition(fs, fleetv1.ConditionProgressing)
		return fs.Status.CurrentRevision == rev1 && c != nil && c.Status == metav1.ConditionFalse
	})
	lap("rollout complete")
	stopSampling()
	mu.Lock()
	t.Logf("%d samples, at most %d instance(s) unavailable (maxUnavailable %d)", samples, worst, maxUnavailable)
	for _, v := range violations {
		t.Error(v)
	}
	mu.Unlock()

	if got.Status.UpdateRevision != rev1 || got.Status.UpdatedReplicas != replicas {
		t.Errorf("complete: %s, want revision %s and %d updated", rolloutSummary(got), rev1, replicas)
	}
	for _, ss := range got.Status.Subsets {
		if ss.Rollout != fleetv1.SubsetUpdated {
			t.Errorf("subset %s rollout %q, want Updated", ss.Name, ss.Rollout)
		}
	}
	ins := f.waitReady(t, ns, "db", replicas)
	for _, in := range ins {
		if in.version != "2" {
			t.Errorf("%s/%s: VERSION %q, want the new template's 2", in.cluster, in.pod, in.version)
		}
	}
	for _, s := range []fleetv1.Subset{first, second} {
		for _, reason := range []string{"SubsetUpdating", "SubsetUpdated"} {
			eventually(t, 30*time.Second, reason+" event for "+s.Name, func(ctx context.Context) (bool, string, error) {
				var events corev1.EventList
				if err := f.hub.List(ctx, &events, client.InNamespace(ns)); err != nil {
					return false, "", err
				}
				for _, e := range events.Items {
					if e.InvolvedObject.Name == "db" && e.Reason == reason && strings.Contains(strings.ToLower(e.Message), subsetOnCluster(s)) {
						return true, "", nil
					}
				}
				var seen []string
				for _, e := range events.Items {
					seen = append(seen, e.Reason+": "+e.Message)
				}
				return false, fmt.Sprintf("%d events, none: %q", len(events.Items), seen), nil
			})
		}
	}
}

// waitSettled waits until FleetSet ns/db has want ready instances and every
// member StatefulSet has observed its latest spec with the partition the hub
// reports, and returns the instances.
func (f *fleet) waitSettled(t *testing.T, ns string, want int) []instance {
	t.Helper()
	var got []instance
	eventually(t, waitTimeout, "instances settled", func(ctx context.Context) (bool, string, error) {
		fs, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, ss := range fs.Status.Subsets {
			sts := &appsv1.StatefulSet{}
			if err := f.member(ss.Cluster).c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + ss.Name}, sts); err != nil {
				return false, "", err
			}
			if sts.Status.ObservedGeneration != sts.Generation || partitionOf(sts) != ss.Partition {
				return false, fmt.Sprintf("%s: partition %d, hub's %d, observedGeneration %d/%d", sts.Name, partitionOf(sts), ss.Partition, sts.Status.ObservedGeneration, sts.Generation), nil
			}
		}
		if got, err = f.instances(ctx, ns, "db"); err != nil {
			return false, "", err
		}
		ready := 0
		for _, in := range got {
			if in.ready {
				ready++
			}
		}
		return len(got) == want && ready == want, podSummary(got), nil
	})
	return got
}

// progressing says whether the FleetSet's Progressing condition has reason
// and a message containing msg.
func progressing(fs *fleetv1.FleetSet, reason, msg string) bool {
	c := condition(fs, fleetv1.ConditionProgressing)
	return c != nil && c.Reason == reason && strings.Contains(c.Message, msg)
}

func subsetOnCluster(s fleetv1.Subset) string {
	return fmt.Sprintf("subset %s on cluster %s", s.Name, s.Cluster)
}

func subsetPhase(fs *fleetv1.FleetSet, name string) fleetv1.SubsetRolloutPhase {
	for _, ss := range fs.Status.Subsets {
		if ss.Name == name {
			return ss.Rollout
		}
	}
	return ""
}

func countUpdated(ins []instance, subset string) int {
	n := 0
	for _, in := range ins {
		if in.subset == subset && in.version == "2" {
			n++
		}
	}
	return n
}

// rolloutSummary is the FleetSet's rollout state on one line.
func rolloutSummary(fs *fleetv1.FleetSet) string {
	if fs == nil {
		return "no FleetSet"
	}
	s := fmt.Sprintf("revision %s current %s updated %d;", fs.Status.UpdateRevision, fs.Status.CurrentRevision, fs.Status.UpdatedReplicas)
	for _, ss := range fs.Status.Subsets {
		s += fmt.Sprintf(" %s=%s(partition %d)", ss.Name, ss.Rollout, ss.Partition)
	}
	if c := condition(fs, fleetv1.ConditionProgressing); c != nil {
		s += fmt.Sprintf("; Progressing=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return s
}

// podSummary lists the instances as pod:version[:uid prefix][!] (! not ready).
func podSummary(ins []instance) string {
	var b strings.Builder
	for _, in := range ins {
		fmt.Fprintf(&b, " %s:v%s:%.8s", in.pod, in.version, in.uid)
		if !in.ready {
			b.WriteString("!")
		}
	}
	return strings.TrimSpace(b.String())
}
