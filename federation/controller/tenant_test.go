package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/envelope"
)

// appliedTenantWorks returns the tenant works of namespace ns in clusters,
// reported Applied at their generation by the work agent, for a fake
// client: without them the FleetSet reconciler writes no work there
// (holdForTenants).
func appliedTenantWorks(t testing.TB, ns string, clusters ...string) []client.Object {
	t.Helper()
	var out []client.Object
	for _, c := range clusters {
		w, err := manifestwork.TenantWork(c, ns, fleetv1.PodSecurityBaseline)
		if err != nil {
			t.Fatal(err)
		}
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "test", ObservedGeneration: w.Generation})
		out = append(out, w)
	}
	return out
}

// TestTenantLevel: a namespace's tenant work is labelled with the least
// restrictive level of its FleetSet works; unknown or missing levels count
// as the default.
func TestTenantLevel(t *testing.T) {
	for _, c := range []struct {
		levels []string
		want   fleetv1.PodSecurityLevel
	}{
		{nil, fleetv1.PodSecurityBaseline},
		{[]string{"restricted"}, fleetv1.PodSecurityRestricted},
		{[]string{"restricted", "privileged", "baseline"}, fleetv1.PodSecurityPrivileged},
		{[]string{"restricted", ""}, fleetv1.PodSecurityBaseline},
		{[]string{"restricted", "bogus"}, fleetv1.PodSecurityBaseline},
	} {
		if got := manifestwork.TenantLevel(c.levels); got != c.want {
			t.Errorf("TenantLevel(%q) = %q, want %q", c.levels, got, c.want)
		}
	}
}

// TestTenantWorkEventsCoalesce: a burst of FleetSet work events in one
// cluster waits tenantCoalesce and then makes one request for the cluster;
// a tenant work's event is enqueued at once.
func TestTenantWorkEventsCoalesce(t *testing.T) {
	const delay = 300 * time.Millisecond
	h := tenantWorkHandler(delay)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	for i := range 100 {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: fmt.Sprintf("w-%d", i), Labels: envelope.OwnerLabels("db", fmt.Sprintf("fs-%d", i))}}
		h.Create(ctx, event.CreateEvent{Object: w}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: w, ObjectNew: w}, q)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests at once after 200 FleetSet work events, want none before %s", n, delay)
	}
	tw, err := manifestwork.TenantWork("west", "db", fleetv1.PodSecurityBaseline)
	if err != nil {
		t.Fatal(err)
	}
	h.Delete(ctx, event.DeleteEvent{Object: tw}, q)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d requests after a tenant work's event, want 1 at once", n)
	}
	if req, _ := q.Get(); req.Name != "west" {
		t.Fatalf("request %v, want cluster west", req)
	} else {
		q.Done(req)
	}
	time.Sleep(2 * delay)
	if n := q.Len(); n != 1 {
		t.Fatalf("%d requests %s after the burst, want 1 (cluster east)", n, 2*delay)
	}
	if req, _ := q.Get(); req.Name != "east" {
		t.Fatalf("request %v, want cluster east", req)
	}
}
