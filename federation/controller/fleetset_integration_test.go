//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// manifest decodes the manifest of the given kind and name from w into out.
func manifest(t testing.TB, w *workv1.ManifestWork, kind, name string, out any) {
	t.Helper()
	for _, m := range w.Spec.Workload.Manifests {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == kind && meta.Metadata.Name == name {
			if err := json.Unmarshal(m.Raw, out); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("ManifestWork %s/%s holds no %s %s", w.Namespace, w.Name, kind, name)
}

// stsSummary is what the tests check of a delivered StatefulSet.
type stsSummary struct {
	Replicas, Start, Partition int32
	Scheduler                  string
	Placement                  string
}

func summarize(t testing.TB, w *workv1.ManifestWork, name string) stsSummary {
	var sts appsv1.StatefulSet
	manifest(t, w, "StatefulSet", name, &sts)
	return stsSummary{
		Replicas:  ptr.Deref(sts.Spec.Replicas, -1),
		Start:     sts.Spec.Ordinals.Start,
		Partition: ptr.Deref(sts.Spec.UpdateStrategy.RollingUpdate.Partition, -1),
		Scheduler: sts.Spec.Template.Spec.SchedulerName,
		Placement: sts.Spec.Template.Labels[fleetv1.LabelPlacement],
	}
}

// delivered returns the StatefulSet summaries of FleetSet ns/name by
// StatefulSet name, over all its ManifestWorks.
func delivered(t testing.TB, ns, name string) map[string]stsSummary {
	out := map[string]stsSummary{}
	for _, w := range works(t, ns, name) {
		for sub := range manifestwork.OrdinalStarts(w) {
			n := manifestwork.StatefulSetName(name, sub)
			out[n] = summarize(t, w, n)
		}
	}
	return out
}

func getFleetSet(t testing.TB, ns, name string) *fleetv1.FleetSet {
	t.Helper()
	fs := &fleetv1.FleetSet{}
	if err := k8sClient.Get(context.Background(), clientKey(ns, name), fs); err != nil {
		t.Fatal(err)
	}
	return fs
}

// updateFleetSet applies mutate to the current FleetSet, retrying conflicts.
func updateFleetSet(t testing.TB, ns, name string, mutate func(*fleetv1.FleetSet)) {
	t.Helper()
	for i := 0; ; i++ {
		fs := getFleetSet(t, ns, name)
		mutate(fs)
		err := k8sClient.Update(context.Background(), fs)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || i > 10 {
			t.Fatal(err)
		}
	}
}

func condition(fs *fleetv1.FleetSet, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(fs.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestDelivery(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "d-east", true)
	createCluster(t, "d-west", true)
	createNamespace(t, "delivery")
	startHub(t, time.Minute)

	fs := sampleFleetSet("delivery", "mydb")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "d-east", "d-west"
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}

	want := map[string]stsSummary{
		"mydb-east": {Replicas: 5, Start: 0, Partition: 2, Scheduler: fleetv1.SchedulerName, Placement: "mydb-east"},
		"mydb-west": {Replicas: 4, Start: 1000, Partition: 0, Scheduler: fleetv1.SchedulerName, Placement: "mydb-west"},
	}
	eventually(t, 20*time.Second, "ManifestWorks for 9 replicas", func() (bool, error) {
		return cmp.Equal(want, delivered(t, "delivery", "mydb")), nil
	})
	ws := works(t, "delivery", "mydb")
	if len(ws) != 2 || ws["d-east"] == nil || ws["d-west"] == nil {
		t.Fatalf("works in clusters %v, want d-east and d-west", keys(ws))
	}
	var sp fleetv1.SubsetPlacement
	manifest(t, ws["d-east"], "SubsetPlacement", "mydb-east", &sp)
	// The placement carries the shares (here unset: even), not the counts.
	wantDomains := []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}
	if diff := cmp.Diff(wantDomains, sp.Spec.Domains); diff != "" {
		t.Errorf("SubsetPlacement mydb-east domains (-want,+got):\n%s", diff)
	}
	var cm corev1.ConfigMap
	manifest(t, ws["d-west"], "ConfigMap", "mydb-fleet", &cm)
	var view fleetv1.FleetView
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &view); err != nil {
		t.Fatal(err)
	}
	wantView := []fleetv1.FleetViewSubset{
		{Name: "east", Cluster: "d-east", OrdinalStart: 0, OrdinalEnd: 1000, Replicas: 5, Partition: 2},
		{Name: "west", Cluster: "d-west", OrdinalStart: 1000, OrdinalEnd: 2000, Replicas: 4},
	}
	if diff := cmp.Diff(wantView, view.Subsets); diff != "" {
		t.Errorf("fleet view in d-west (-want,+got):\n%s", diff)
	}

	// Status: ordinal blocks recorded, selector, subset count, conditions.
	eventually(t, 10*time.Second, "status with both subsets", func() (bool, error) {
		fs := getFleetSet(t, "delivery", "mydb")
		return len(fs.Status.Subsets) == 2 && fs.Status.ObservedGeneration == fs.Generation, nil
	})
	got := getFleetSet(t, "delivery", "mydb")
	if got.Status.Subsets[1].OrdinalStart != 1000 || got.Status.SubsetCount != 2 || got.Status.Selector != "app=mydb" {
		t.Errorf("status = %+v, want west at 1000, subsetCount 2, selector app=mydb", got.Status)
	}
	if c := condition(got, fleetv1.ConditionDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", c)
	}
	if c := condition(got, fleetv1.ConditionProgressing); c.Status != metav1.ConditionTrue || c.Reason != fleetv1.ReasonWaitingForFeedback {
		t.Errorf("Progressing = %+v, want True/%s", c, fleetv1.ReasonWaitingForFeedback)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers = %v, want none (deletion cascades in the background)", got.Finalizers)
	}

	// Steady state: no write to the FleetSet or its works.
	before := resourceVersions(t, "delivery", "mydb")
	time.Sleep(2 * time.Second)
	if diff := cmp.Diff(before, resourceVersions(t, "delivery", "mydb")); diff != "" {
		t.Errorf("objects written in steady state (-before,+after):\n%s", diff)
	}

	// Scale to 15 and move partitions: east 9 (partition 4), west 6 (partition 1).
	updateFleetSet(t, "delivery", "mydb", func(fs *fleetv1.FleetSet) {
		fs.Spec.Replicas = 15
		fs.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"east": 4, "west": 1}
	})
	want = map[string]stsSummary{
		"mydb-east": {Replicas: 9, Start: 0, Partition: 4, Scheduler: fleetv1.SchedulerName, Placement: "mydb-east"},
		"mydb-west": {Replicas: 6, Start: 1000, Partition: 1, Scheduler: fleetv1.SchedulerName, Placement: "mydb-west"},
	}
	eventually(t, 20*time.Second, "ManifestWorks for 15 replicas", func() (bool, error) {
		return cmp.Equal(want, delivered(t, "delivery", "mydb")), nil
	})

	// The work agent reports status: fold it into the FleetSet.
	feedback := map[string][6]any{
		"d-east": {int64(9), int64(9), int64(5), int64(9), "mydb-east-1", "mydb-east-2"},
		"d-west": {int64(6), int64(4), int64(5), int64(4), "mydb-west-1", "mydb-west-2"},
	}
	for cluster, v := range feedback {
		reportFeedback(t, cluster, "delivery", "mydb", strings.TrimPrefix(cluster, "d-"), v)
	}
	eventually(t, 10*time.Second, "feedback folded into status", func() (bool, error) {
		fs := getFleetSet(t, "delivery", "mydb")
		return fs.Status.ReadyReplicas == 13, nil
	})
	got = getFleetSet(t, "delivery", "mydb")
	rev := got.Status.UpdateRevision
	wantStatus := []fleetv1.SubsetStatus{
		{Name: "east", Cluster: "d-east", OrdinalStart: 0, Replicas: 9, Partition: 4,
			Domains:          []fleetv1.DomainStatus{{Name: "zone-a", Replicas: 3}, {Name: "zone-b", Replicas: 3}, {Name: "zone-c", Replicas: 3}},
			ObservedReplicas: 9, ReadyReplicas: 9, UpdatedReplicas: 5, AvailableReplicas: 9, CurrentRevision: "mydb-east-1", UpdateRevision: "mydb-east-2", Revision: rev, FleetRevision: rev},
		{Name: "west", Cluster: "d-west", OrdinalStart: 1000, Replicas: 6, Partition: 1,
			Domains:          []fleetv1.DomainStatus{{Name: "zone-a", Replicas: 2}, {Name: "zone-b", Replicas: 2}, {Name: "zone-c", Replicas: 2}},
			ObservedReplicas: 6, ReadyReplicas: 4, UpdatedReplicas: 5, AvailableReplicas: 4, CurrentRevision: "mydb-west-1", UpdateRevision: "mydb-west-2", Revision: rev, FleetRevision: rev},
	}
	if diff := cmp.Diff(wantStatus, got.Status.Subsets); diff != "" {
		t.Errorf("status.subsets (-want,+got):\n%s", diff)
	}
	if got.Status.Replicas != 15 || got.Status.UpdatedReplicas != 10 || got.Status.AvailableReplicas != 13 {
		t.Errorf("status totals replicas %d updated %d available %d, want 15, 10, 13", got.Status.Replicas, got.Status.UpdatedReplicas, got.Status.AvailableReplicas)
	}
	if c := condition(got, fleetv1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != fleetv1.ReasonReplicasNotReady || !strings.Contains(c.Message, "subset west on cluster d-west: 4/6 ready") {
		t.Errorf("Ready = %+v, want False/%s naming subset west on cluster d-west", c, fleetv1.ReasonReplicasNotReady)
	}
	if c := condition(got, fleetv1.ConditionProgressing); c.Status != metav1.ConditionFalse {
		t.Errorf("Progressing = %+v, want False", c)
	}

	// The agent reports the work not applied in d-west: ApplyFailed names it.
	setWorkCondition(t, "d-west", manifestwork.WorkName("delivery", "mydb"), metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed", Message: "quota exceeded"})
	eventually(t, 10*time.Second, "Degraded ApplyFailed", func() (bool, error) {
		c := condition(getFleetSet(t, "delivery", "mydb"), fleetv1.ConditionDegraded)
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonApplyFailed && strings.Contains(c.Message, "subset west on cluster d-west") && strings.Contains(c.Message, "quota exceeded"), nil
	})

	// Move subset west to a third cluster: its work in d-west is deleted.
	createCluster(t, "d-north", true)
	updateFleetSet(t, "delivery", "mydb", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].Cluster = "d-north" })
	drainAsAgent(t, "d-west", "delivery", "mydb", "mydb-west")
	eventually(t, 20*time.Second, "work moved from d-west to d-north", func() (bool, error) {
		ws := works(t, "delivery", "mydb")
		return len(ws) == 2 && ws["d-north"] != nil && ws["d-west"] == nil, nil
	})
	if s := delivered(t, "delivery", "mydb")["mydb-west"]; s.Start != 1000 {
		t.Errorf("moved subset west starts at %d, want its block 1000 kept", s.Start)
	}

	// Delete: the FleetSet goes at once, its works after it.
	if err := k8sClient.Delete(ctx, getFleetSet(t, "delivery", "mydb")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works and FleetSet deleted", func() (bool, error) {
		err := k8sClient.Get(ctx, clientKey("delivery", "mydb"), &fleetv1.FleetSet{})
		return apierrors.IsNotFound(err) && len(works(t, "delivery", "mydb")) == 0, nil
	})
	if !hasEvent(t, "delivery", "mydb", EventWorksDeleted) {
		t.Errorf("no %s event on the deleted FleetSet", EventWorksDeleted)
	}
}

// TestDeletionCascades checks the background cascade of a FleetSet's
// deletion to its ManifestWorks: for a FleetSet deleted while no hub ran (the
// next hub finds its works orphaned), and for one that carries the
// finalizer earlier hubs added (the hub deletes the works, then removes it).
func TestDeletionCascades(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "gc-east", true)
	createCluster(t, "gc-west", true)
	createNamespace(t, "cascade")
	newFleetSet := func(name string, finalizers ...string) *fleetv1.FleetSet {
		fs := sampleFleetSet("cascade", name)
		fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "gc-east", "gc-west"
		fs.Finalizers = finalizers
		if err := k8sClient.Create(ctx, fs); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	h := startHub(t, time.Minute)
	orphan := newFleetSet("orphan")
	legacy := newFleetSet("legacy", fleetv1.FleetSetFinalizer)
	for _, name := range []string{"orphan", "legacy"} {
		eventually(t, 20*time.Second, name+": works in both clusters", func() (bool, error) {
			return len(works(t, "cascade", name)) == 2, nil
		})
	}
	// Sibling: a live FleetSet whose works must stay.
	newFleetSet("live")
	eventually(t, 20*time.Second, "live: works in both clusters", func() (bool, error) {
		return len(works(t, "cascade", "live")) == 2, nil
	})

	// Deleted while no hub runs: the FleetSet is gone at once (no
	// finalizer) and its works stay until a hub starts.
	h.stop()
	if err := k8sClient.Delete(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "orphan: FleetSet gone", func() (bool, error) {
		return apierrors.IsNotFound(k8sClient.Get(ctx, clientKey("cascade", "orphan"), &fleetv1.FleetSet{})), nil
	})
	time.Sleep(time.Second)
	if n := len(works(t, "cascade", "orphan")); n != 2 {
		t.Fatalf("orphan: %d works with no hub running, want the 2 left as they were", n)
	}
	startHub(t, time.Minute)
	eventually(t, 20*time.Second, "orphan: works collected by the next hub", func() (bool, error) {
		return len(works(t, "cascade", "orphan")) == 0, nil
	})
	if !hasEvent(t, "cascade", "orphan", EventWorksDeleted) {
		t.Errorf("orphan: no %s event", EventWorksDeleted)
	}

	// The finalizer of earlier hubs: works deleted, then the finalizer
	// removed and the FleetSet gone.
	if err := k8sClient.Delete(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "legacy: works and FleetSet deleted", func() (bool, error) {
		err := k8sClient.Get(ctx, clientKey("cascade", "legacy"), &fleetv1.FleetSet{})
		return apierrors.IsNotFound(err) && len(works(t, "cascade", "legacy")) == 0, nil
	})
	if n := len(works(t, "cascade", "live")); n != 2 {
		t.Errorf("live: %d works, want its 2 untouched", n)
	}
}

func TestClusterProblems(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "p-east", true)
	createNamespace(t, "problems")
	startHub(t, time.Minute)

	fs := sampleFleetSet("problems", "mydb")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "p-east", "p-west"
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Degraded ClusterNotFound naming subset west and cluster p-west", func() (bool, error) {
		c := condition(getFleetSet(t, "problems", "mydb"), fleetv1.ConditionDegraded)
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonClusterNotFound && strings.Contains(c.Message, "subset west on cluster p-west"), nil
	})
	// p-east's work is written once the namespace's tenant work there is
	// applied.
	eventually(t, 20*time.Second, "the work in p-east", func() (bool, error) { return works(t, "problems", "mydb")["p-east"] != nil, nil })
	if ws := works(t, "problems", "mydb"); len(ws) != 1 || ws["p-east"] == nil {
		t.Errorf("works in %v, want only p-east", keys(ws))
	}
	if !hasEvent(t, "problems", "mydb", fleetv1.ReasonClusterNotFound) {
		t.Errorf("no %s event", fleetv1.ReasonClusterNotFound)
	}

	// The cluster joins, unavailable: the work is written, Degraded says so.
	createCluster(t, "p-west", false)
	eventually(t, 20*time.Second, "Degraded ClusterUnavailable and a work in p-west", func() (bool, error) {
		c := condition(getFleetSet(t, "problems", "mydb"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonClusterUnavailable && strings.Contains(c.Message, "subset west on cluster p-west") && works(t, "problems", "mydb")["p-west"] != nil, nil
	})
	setAvailable(t, "p-west", true)
	eventually(t, 20*time.Second, "Degraded False", func() (bool, error) {
		return condition(getFleetSet(t, "problems", "mydb"), fleetv1.ConditionDegraded).Status == metav1.ConditionFalse, nil
	})
}

// reportFeedback writes, as a work agent would after applying the work's
// current spec, statusFeedback for the StatefulSet <fleetset>-<subset> into
// the work's status: replicas, readyReplicas, updatedReplicas,
// availableReplicas, currentRevision, updateRevision from v, and the fleet
// revision annotation of the StatefulSet as rendered, with observedGeneration
// = generation.
func reportFeedback(t testing.TB, cluster, ns, name, subset string, v [6]any) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return writeFeedback(t, cluster, ns, name, subset, v) }); err != nil {
		t.Fatal(err)
	}
}

func writeFeedback(t testing.TB, cluster, ns, name, subset string, v [6]any) error {
	ctx := context.Background()
	w := &workv1.ManifestWork{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
		return err
	}
	var sts appsv1.StatefulSet
	manifest(t, w, "StatefulSet", manifestwork.StatefulSetName(name, subset), &sts)
	names := []string{manifestwork.FeedbackReplicas, manifestwork.FeedbackReadyReplicas, manifestwork.FeedbackUpdatedReplicas, manifestwork.FeedbackAvailableReplicas, manifestwork.FeedbackCurrentRevision, manifestwork.FeedbackUpdateRevision,
		manifestwork.FeedbackFleetRevision, manifestwork.FeedbackGeneration, manifestwork.FeedbackObservedGeneration}
	v9 := []any{v[0], v[1], v[2], v[3], v[4], v[5], sts.Annotations[fleetv1.AnnotationRevision], int64(1), int64(1)}
	var values []workv1.FeedbackValue
	for i, n := range names {
		fv := workv1.FeedbackValue{Name: n}
		switch x := v9[i].(type) {
		case int64:
			fv.Value = workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(x)}
		case string:
			fv.Value = workv1.FieldValue{Type: workv1.String, String: ptr.To(x)}
		}
		values = append(values, fv)
	}
	now := metav1.Now()
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Ordinal: 4, Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", Name: manifestwork.StatefulSetName(name, subset), Namespace: ns},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: now}},
	}}
	apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "applied"})
	return k8sClient.Status().Update(ctx, w)
}

func setWorkCondition(t testing.TB, cluster, name string, c metav1.Condition) {
	t.Helper()
	w := &workv1.ManifestWork{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
		t.Fatal(err)
	}
	apimeta.SetStatusCondition(&w.Status.Conditions, c)
	if err := k8sClient.Status().Update(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// resourceVersions returns the resourceVersion of the FleetSet and its works.
func resourceVersions(t testing.TB, ns, name string) map[string]string {
	out := map[string]string{"FleetSet": getFleetSet(t, ns, name).ResourceVersion}
	for c, w := range works(t, ns, name) {
		out["ManifestWork "+c] = w.ResourceVersion
	}
	return out
}

// hasEvent reports whether an event with reason about the named object
// appears within 10 s: the recorder writes events asynchronously, after the
// reconcile that emitted them.
func hasEvent(t testing.TB, ns, name, reason string) bool {
	return hasEventContaining(t, ns, name, reason, "")
}

// hasEventContaining is hasEvent for an event whose message contains
// substr.
func hasEventContaining(t testing.TB, ns, name, reason, substr string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list corev1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, substr) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
