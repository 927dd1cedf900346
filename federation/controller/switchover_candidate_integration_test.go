//go:build integration

package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// reportReady writes, as the work agent would, the statusFeedback of
// StatefulSet sts in FleetSet ns/name's work in cluster: generation and
// observedGeneration 1, replicas and readyReplicas ready of replicas. It
// keeps the work's other resource status entries (a SubsetPlacement's
// roles report).
func reportReady(t testing.TB, cluster, ns, name, sts string, replicas, ready int64) {
	t.Helper()
	v := func(n string, i int64) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(i)}}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		entry := workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", Name: sts, Namespace: ns},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				v(manifestwork.FeedbackGeneration, 1), v(manifestwork.FeedbackObservedGeneration, 1),
				v(manifestwork.FeedbackReplicas, replicas), v(manifestwork.FeedbackReadyReplicas, ready)}},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: metav1.Now()}},
		}
		kept := []workv1.ManifestCondition{entry}
		for _, m := range w.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Kind != "StatefulSet" || m.ResourceMeta.Name != sts {
				kept = append(kept, m)
			}
		}
		w.Status.ResourceStatus.Manifests = kept
		return k8sClient.Status().Update(context.Background(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSwitchoverCandidateMustBeFit (issue 48): a switchover to an instance
// is taken only when the candidate can hold the role: refused, with a
// SwitchoverRefused event naming the reason and the annotation removed,
// when its subset reports it not Ready, and when its cluster's member
// heartbeat is older than the member's timeout (cut off from the hub);
// taken once it is Ready and in contact.
func TestSwitchoverCandidateMustBeFit(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "fit-east", true)
	createCluster(t, "fit-west", true)
	createNamespace(t, "switchfit")
	memberBeat(t, "fit-east")
	stopWest := memberBeat(t, "fit-west")
	startHub(t, time.Minute)
	fs := sampleFleetSet("switchfit", "db")
	fs.Spec.Replicas = 4
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "fit-east", "fit-west"
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Command: []string{"/bin/switchover"}}}}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works in both clusters", func() (bool, error) { return len(works(t, "switchfit", "db")) == 2, nil })
	reportRoles(t, "fit-east", "switchfit", "db", "east", "db-east-0=primary,db-east-1=replica", "db-east-0")
	reportRoles(t, "fit-west", "switchfit", "db", "west", "db-west-1000=replica,db-west-1001=replica", "")
	reportReady(t, "fit-east", "switchfit", "db", "db-east", 2, 2)
	reportReady(t, "fit-west", "switchfit", "db", "db-west", 2, 1)
	eventually(t, 20*time.Second, "status.leader db-east-0", func() (bool, error) {
		l := getFleetSet(t, "switchfit", "db").Status.Leader
		return l != nil && l.Name == "db-east-0", nil
	})
	annotate := func(to string) { t.Helper(); requestSwitchover(t, "switchfit", "db", to) }
	refused := func(to, why string) {
		t.Helper()
		annotate(to)
		eventually(t, 20*time.Second, "the request for "+to+" refused: annotation removed", func() (bool, error) {
			_, ok := getFleetSet(t, "switchfit", "db").Annotations[fleetv1.AnnotationSwitchoverTo]
			return !ok, nil
		})
		if r := getFleetSet(t, "switchfit", "db").Status.RequestedSwitchover; r != nil {
			t.Errorf("refused request for %s taken: status.requestedSwitchover %+v", to, r)
		}
		if !hasEventContaining(t, "switchfit", "db", EventSwitchoverRefused, why) {
			t.Errorf("no %s event containing %q", EventSwitchoverRefused, why)
		}
	}

	// West reports 1 of 2 Ready: its instances are no candidates.
	refused("db-west-1001", `fleetset.io/switchover-to="db-west-1001" refused: candidate db-west-1001 is not known Ready: subset west on cluster fit-west reports 1 of its 2 instances Ready`)

	// West Ready, but cut off: its heartbeat stops; past the member's
	// timeout, the hub refuses.
	reportReady(t, "fit-west", "switchfit", "db", "db-west", 2, 2)
	last := stopWest()
	time.Sleep(time.Until(last.Add(beatTimeout + time.Second)))
	refused("db-west-1000", "candidate db-west-1000 is out of contact: cluster fit-west's member heartbeat was last observed")

	// In contact again: taken.
	memberBeat(t, "fit-west")
	annotate("db-west-1000")
	eventually(t, 20*time.Second, "status.requestedSwitchover for db-west-1000", func() (bool, error) {
		r := getFleetSet(t, "switchfit", "db").Status.RequestedSwitchover
		return r != nil && r.To == "db-west-1000" && r.Pod == "db-east-0", nil
	})
}
