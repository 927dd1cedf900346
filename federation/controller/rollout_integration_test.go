//go:build integration

package controller

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// rolloutState returns, per StatefulSet of FleetSet ns/name, its delivered
// partition and fleet revision annotation, as "partition@revision".
func rolloutState(t testing.TB, ns, name string) map[string]string {
	out := map[string]string{}
	for _, w := range works(t, ns, name) {
		for sub := range manifestwork.OrdinalStarts(w) {
			n := manifestwork.StatefulSetName(name, sub)
			var sts appsv1.StatefulSet
			manifest(t, w, "StatefulSet", n, &sts)
			out[n] = strings.Join([]string{itoa(ptr.Deref(sts.Spec.UpdateStrategy.RollingUpdate.Partition, -1)), sts.Annotations[fleetv1.AnnotationRevision]}, "@")
		}
	}
	return out
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// allUpdated reports, as the work agents would once every instance of a
// subset runs the delivered template, n replicas all ready, updated and
// available.
func allUpdated(t testing.TB, cluster, ns, name, subset string, n int64) {
	reportFeedback(t, cluster, ns, name, subset, [6]any{n, n, n, n, "rev-a", "rev-a"})
}

// TestRollingUpdate drives a fleet rollout with fed-back status on a real
// apiserver: a template change releases the subsets one at a time in
// subsetOrder (west before east), holding the others at partition =
// replicas; a subset moves on only when its StatefulSet reports the new
// fleet revision updated and available; an unavailable cluster blocks the
// rollout (RolloutBlocked naming it) without skipping it; paused holds it;
// completion sets currentRevision; one event per subset step.
func TestRollingUpdate(t *testing.T) {
	createCluster(t, "ru-east", true)
	createCluster(t, "ru-west", true)
	createNamespace(t, "rollout")
	startHub(t, time.Minute)

	fs := sampleFleetSet("rollout", "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "ru-east", "ru-west"
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{Type: fleetv1.RollingUpdateStrategyType,
		RollingUpdate: &fleetv1.RollingUpdateFleetSet{SubsetOrder: []string{"west"}}}
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) { return len(works(t, "rollout", "db")) == 2, nil })
	allUpdated(t, "ru-east", "rollout", "db", "east", 5)
	allUpdated(t, "ru-west", "rollout", "db", "west", 4)
	var rev0 string
	eventually(t, 20*time.Second, "creation complete: currentRevision set", func() (bool, error) {
		got := getFleetSet(t, "rollout", "db")
		rev0 = got.Status.CurrentRevision
		return rev0 != "" && rev0 == got.Status.UpdateRevision && got.Status.UpdatedReplicas == 9, nil
	})

	// A new template: west (first in subsetOrder) is released, east held whole.
	updateFleetSet(t, "rollout", "db", func(fs *fleetv1.FleetSet) { fs.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9" })
	var rev1 string
	eventually(t, 20*time.Second, "west released, east held", func() (bool, error) {
		got := getFleetSet(t, "rollout", "db")
		rev1 = got.Status.UpdateRevision
		return rev1 != rev0 && cmp.Equal(rolloutState(t, "rollout", "db"), map[string]string{"db-west": "0@" + rev1, "db-east": "5@" + rev1}), nil
	})
	got := getFleetSet(t, "rollout", "db")
	if c := condition(got, fleetv1.ConditionProgressing); c.Reason != fleetv1.ReasonRolloutUpdating || !strings.Contains(c.Message, "subset west on cluster ru-west") {
		t.Errorf("Progressing = %+v, want %s naming subset west on cluster ru-west", c, fleetv1.ReasonRolloutUpdating)
	}
	if got.Status.CurrentRevision != rev0 || got.Status.UpdatedReplicas != 0 {
		t.Errorf("currentRevision %q updatedReplicas %d, want %q and 0", got.Status.CurrentRevision, got.Status.UpdatedReplicas, rev0)
	}

	// West halfway (2 of 4 updated): east still held.
	reportFeedback(t, "ru-west", "rollout", "db", "west", [6]any{int64(4), int64(4), int64(2), int64(4), "rev-a", "rev-b"})
	eventually(t, 10*time.Second, "2 instances counted updated", func() (bool, error) {
		return getFleetSet(t, "rollout", "db").Status.UpdatedReplicas == 2, nil
	})
	if s := rolloutState(t, "rollout", "db")["db-east"]; s != "5@"+rev1 {
		t.Errorf("east %s while west is updating, want held at 5@%s", s, rev1)
	}

	// Paused: west is held after its 2 updated instances.
	updateFleetSet(t, "rollout", "db", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.RollingUpdate.Paused = true })
	eventually(t, 10*time.Second, "paused: west held at 2", func() (bool, error) {
		got := getFleetSet(t, "rollout", "db")
		return condition(got, fleetv1.ConditionProgressing).Reason == fleetv1.ReasonRolloutPaused &&
			rolloutState(t, "rollout", "db")["db-west"] == "2@"+rev1, nil
	})
	updateFleetSet(t, "rollout", "db", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.RollingUpdate.Paused = false })

	// West's cluster becomes unavailable mid-rollout: blocked, not skipped.
	setAvailable(t, "ru-west", false)
	eventually(t, 10*time.Second, "RolloutBlocked naming west", func() (bool, error) {
		c := condition(getFleetSet(t, "rollout", "db"), fleetv1.ConditionProgressing)
		return c.Reason == fleetv1.ReasonRolloutBlocked && strings.Contains(c.Message, "subset west: cluster ru-west is unavailable"), nil
	})
	if s := rolloutState(t, "rollout", "db")["db-east"]; s != "5@"+rev1 {
		t.Errorf("east %s while west is blocked, want held at 5@%s", s, rev1)
	}
	setAvailable(t, "ru-west", true)

	// West done: east is released.
	allUpdated(t, "ru-west", "rollout", "db", "west", 4)
	eventually(t, 10*time.Second, "east released", func() (bool, error) {
		return rolloutState(t, "rollout", "db")["db-east"] == "0@"+rev1, nil
	})
	allUpdated(t, "ru-east", "rollout", "db", "east", 5)
	eventually(t, 10*time.Second, "rollout complete", func() (bool, error) {
		got := getFleetSet(t, "rollout", "db")
		return got.Status.CurrentRevision == rev1 && got.Status.UpdatedReplicas == 9 &&
			condition(got, fleetv1.ConditionProgressing).Status == metav1.ConditionFalse, nil
	})
	// Rollback is reverting the template: the old revision rolls out again,
	// through the same order (west first, east held).
	updateFleetSet(t, "rollout", "db", func(fs *fleetv1.FleetSet) { fs.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10" })
	eventually(t, 20*time.Second, "rollback: west released, east held", func() (bool, error) {
		got := getFleetSet(t, "rollout", "db")
		return got.Status.UpdateRevision == rev0 && got.Status.CurrentRevision == rev1 &&
			cmp.Equal(rolloutState(t, "rollout", "db"), map[string]string{"db-west": "0@" + rev0, "db-east": "5@" + rev0}), nil
	})
	for _, reason := range []string{EventSubsetUpdating, EventSubsetUpdated} {
		if !hasEvent(t, "rollout", "db", reason) {
			t.Errorf("no %s event", reason)
		}
	}
}
