//go:build integration

package controller

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// markApplied reports, as the work agent would, that cluster has applied the
// FleetSet's work at its current generation.
func markApplied(t testing.TB, cluster, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: "AppliedManifestWorkComplete", Message: "applied", ObservedGeneration: w.Generation})
		return k8sClient.Status().Update(t.Context(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// leaseRenewTime returns the renewTime of the resync lease the hub last
// delivered to cluster.
func leaseRenewTime(t testing.TB, cluster string) time.Time {
	w := &workv1.ManifestWork{}
	if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: cluster, Name: fleetv1.ResyncWorkName}, w); err != nil {
		t.Fatal(err)
	}
	l, err := manifestwork.LeaseOf(w)
	if err != nil {
		t.Fatal(err)
	}
	return l.RenewTime.Time
}

// TestFailover relocates a lost cluster's subset with its identity, only
// after the cluster is fenced (toleration and lease expiry + skew), and
// brings it home on request only once the fallback cluster has applied its
// removal: epoch 0 → 1 → 2, the fleet view and events following.
func TestFailover(t *testing.T) {
	createCluster(t, "fo-east", true)
	createCluster(t, "fo-west", true)
	createNamespace(t, "failover")
	const lease, skew = 3 * time.Second, time.Second
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: lease, LeaseSkew: skew})

	fs := sampleFleetSet("failover", "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "fo-east", "fo-west"
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](2)}
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered with fencing", func() (bool, error) {
		ws := works(t, "failover", "db")
		if ws["fo-east"] == nil || ws["fo-west"] == nil {
			return false, nil
		}
		var sp fleetv1.SubsetPlacement
		manifest(t, ws["fo-east"], "SubsetPlacement", "db-east", &sp)
		return sp.Spec.Fencing != nil, nil
	})
	markApplied(t, "fo-east", "failover", "db")
	markApplied(t, "fo-west", "failover", "db")
	eventually(t, 10*time.Second, "resync leases delivered", func() (bool, error) {
		w := &workv1.ManifestWork{}
		return k8sClient.Get(t.Context(), client.ObjectKey{Namespace: "fo-east", Name: fleetv1.ResyncWorkName}, w) == nil, nil
	})

	// Cut east off: FailingOver, then relocated to west with its identity.
	setAvailable(t, "fo-east", false)
	lost := time.Now()
	eventually(t, 10*time.Second, "Degraded FailingOver naming east", func() (bool, error) {
		c := condition(getFleetSet(t, "failover", "db"), fleetv1.ConditionDegraded)
		return strings.Contains(c.Message, "subset east on cluster fo-east") && strings.Contains(c.Message, "relocating at"), nil
	})
	lastRenew := leaseRenewTime(t, "fo-east")
	eventually(t, 30*time.Second, "east relocated to west", func() (bool, error) {
		ws := works(t, "failover", "db")
		return ws["fo-east"] == nil && ws["fo-west"] != nil && manifestwork.HoldsStatefulSet(ws["fo-west"], "db-east"), nil
	})
	moved := time.Now()
	if fenced := lastRenew.Add(lease + skew); moved.Before(fenced) || moved.Before(lost.Add(2*time.Second)) {
		t.Errorf("relocated at %s, before the fence (lease %s + %s + skew %s) or the toleration", moved, lastRenew, lease, skew)
	}
	var sts appsv1.StatefulSet
	manifest(t, works(t, "failover", "db")["fo-west"], "StatefulSet", "db-east", &sts)
	if sts.Spec.Ordinals.Start != 0 || ptr.Deref(sts.Spec.Replicas, 0) != 5 {
		t.Errorf("relocated StatefulSet db-east: start %d replicas %d, want its identity: 0 and 5", sts.Spec.Ordinals.Start, ptr.Deref(sts.Spec.Replicas, 0))
	}
	// The hub writes status after the works, in the same reconcile.
	var ss fleetv1.SubsetStatus
	eventually(t, 10*time.Second, "status.subsets[east] FailedOver", func() (bool, error) {
		ss = getFleetSet(t, "failover", "db").Status.Subsets[0]
		return ss.Failover == fleetv1.SubsetFailedOver, nil
	})
	if ss.Cluster != "fo-west" || ss.Epoch != 1 {
		t.Errorf("status.subsets[east] = cluster %s epoch %d failover %q, want fo-west 1 FailedOver", ss.Cluster, ss.Epoch, ss.Failover)
	}
	var cm corev1.ConfigMap
	manifest(t, works(t, "failover", "db")["fo-west"], "ConfigMap", "db-fleet", &cm)
	var view fleetv1.FleetView
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &view); err != nil {
		t.Fatal(err)
	}
	if v := view.Subsets[0]; v.Name != "east" || v.Cluster != "fo-west" || v.Epoch != 1 {
		t.Errorf("fleet view east = %+v, want cluster fo-west epoch 1", v)
	}
	if !hasEvent(t, "failover", "db", EventFailedOver) {
		t.Errorf("no %s event", EventFailedOver)
	}

	// East returns; failback is Manual: nothing moves until requested.
	setAvailable(t, "fo-east", true)
	time.Sleep(2 * time.Second)
	if ss := getFleetSet(t, "failover", "db").Status.Subsets[0]; ss.Cluster != "fo-west" {
		t.Errorf("east moved home to %s without a failback request", ss.Cluster)
	}
	updateFleetSet(t, "failover", "db", func(fs *fleetv1.FleetSet) {
		fs.Annotations = map[string]string{fleetv1.AnnotationFailback: "now"}
	})
	eventually(t, 10*time.Second, "east removed from west first (FailingBack)", func() (bool, error) {
		ws := works(t, "failover", "db")
		ss := getFleetSet(t, "failover", "db").Status.Subsets[0]
		return ws["fo-west"] != nil && !manifestwork.HoldsStatefulSet(ws["fo-west"], "db-east") && ws["fo-east"] == nil &&
			ss.Failover == fleetv1.SubsetFailingBack, nil
	})
	time.Sleep(time.Second)
	if ws := works(t, "failover", "db"); ws["fo-east"] != nil {
		t.Fatalf("east delivered home before west applied its removal")
	}
	markApplied(t, "fo-west", "failover", "db")
	eventually(t, 10*time.Second, "east home with epoch 2", func() (bool, error) {
		ws := works(t, "failover", "db")
		got := getFleetSet(t, "failover", "db")
		ss := got.Status.Subsets[0]
		_, annotated := got.Annotations[fleetv1.AnnotationFailback]
		return ws["fo-east"] != nil && manifestwork.HoldsStatefulSet(ws["fo-east"], "db-east") &&
			ss.Cluster == "fo-east" && ss.Epoch == 2 && ss.Failover == "" && !annotated, nil
	})
	if !hasEvent(t, "failover", "db", EventFailedBack) {
		t.Errorf("no %s event", EventFailedBack)
	}
}
