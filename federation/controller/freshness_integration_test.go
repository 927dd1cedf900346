//go:build integration

package controller

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// staleFleetSet is a client whose reads of one FleetSet return an older
// copy of it, as the cache of a hub resumed after a SIGSTOP returns until
// its informers deliver what happened meanwhile.
type staleFleetSet struct {
	client.Client
	old *fleetv1.FleetSet
}

func (s staleFleetSet) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if fs, ok := obj.(*fleetv1.FleetSet); ok && key == client.ObjectKeyFromObject(s.old) {
		s.old.DeepCopyInto(fs)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// cachedClient returns a client that reads from its own started and synced
// cache of the test apiserver (with the ManifestWork owner index, as Setup
// registers it) and writes to the apiserver.
func cachedClient(t *testing.T) client.Client {
	t.Helper()
	opts := CacheOptions()
	opts.Scheme = scheme
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.IndexField(ctx, &workv1.ManifestWork{}, WorkOwnerIndex, workOwnerOf); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cl, err := client.New(env.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestStaleFleetSetWritesNothing: a reconcile planned from a cached
// FleetSet older than the apiserver's writes no ManifestWork. The stale
// copy here predates a relocation (east's subset at home, epoch 0), as in
// the chaos run of seed 60 where a hub resumed after a 29 s SIGSTOP
// delivered a relocated subset home at its old epoch while its fallback
// cluster still ran it. The same reconcile without the live check does
// exactly that, silently: the status it plans equals the stale one, so no
// status write conflicts to tell it.
func TestStaleFleetSetWritesNothing(t *testing.T) {
	stopEast := beatingPair(t, "sf", "stale")
	h := startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})

	fs := pairFleetSet("stale", "sf", 0, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](1)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	var old *fleetv1.FleetSet
	eventually(t, 20*time.Second, "both subsets delivered at home", func() (bool, error) {
		ws := works(t, "stale", "db")
		old = getFleetSet(t, "stale", "db")
		return ws["sf-east"] != nil && ws["sf-west"] != nil && len(old.Status.Subsets) == 2 && old.Status.Subsets[0].Cluster == "sf-east", nil
	})
	markApplied(t, "sf-east", "stale", "db")
	markApplied(t, "sf-west", "stale", "db")

	stopEast()
	setAvailable(t, "sf-east", false)
	eventually(t, 30*time.Second, "east relocated to west (FailedOver, epoch 1)", func() (bool, error) {
		ws := works(t, "stale", "db")
		ss := getFleetSet(t, "stale", "db").Status.Subsets[0]
		return ws["sf-east"] == nil && ws["sf-west"] != nil && manifestwork.HoldsStatefulSet(ws["sf-west"], "db-east") &&
			ss.Cluster == "sf-west" && ss.Failover == fleetv1.SubsetFailedOver && ss.Epoch == 1, nil
	})
	// The hub stops; east is back. A reconcile that reads the pre-relocation
	// FleetSet plans east at home, epoch 0.
	h.stop()
	setAvailable(t, "sf-east", true)
	r := &FleetSetReconciler{Client: staleFleetSet{Client: cachedClient(t), old: old}, Recorder: record.NewFakeRecorder(100), APIReader: k8sClient}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}
	before := testutil.ToFloat64(staleReads)
	var res ctrl.Result
	var err error
	eventually(t, 10*time.Second, "the stale reconcile held", func() (bool, error) {
		res, err = r.Reconcile(t.Context(), req)
		return err == nil && testutil.ToFloat64(staleReads) > before, err
	})
	if res.RequeueAfter != cacheWaitDelay {
		t.Errorf("stale reconcile: result %+v, want a requeue after %v", res, cacheWaitDelay)
	}
	ws := works(t, "stale", "db")
	if ws["sf-east"] != nil {
		t.Fatalf("a reconcile of a stale FleetSet delivered to sf-east")
	}
	if !manifestwork.HoldsStatefulSet(ws["sf-west"], "db-east") {
		t.Fatalf("a reconcile of a stale FleetSet took db-east away from sf-west")
	}
	if ss := getFleetSet(t, "stale", "db").Status.Subsets[0]; ss.Cluster != "sf-west" || ss.Epoch != 1 {
		t.Errorf("status.subsets[east] = %s epoch %d, want sf-west epoch 1 unchanged", ss.Cluster, ss.Epoch)
	}

	// Without the live check the same reconcile hands east back to sf-east
	// at epoch 0 while sf-west runs it at epoch 1, and never learns of it:
	// the status it plans equals the stale one, so it writes none, and no
	// write conflicts.
	r.APIReader = nil
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Errorf("unchecked stale reconcile: %v", err)
	}
	ws = works(t, "stale", "db")
	if ws["sf-east"] == nil || !manifestwork.HoldsStatefulSet(ws["sf-east"], "db-east") {
		t.Fatalf("the unchecked stale reconcile did not deliver db-east to sf-east; the test's stale copy is not the hazard it stands for")
	}
	var sp fleetv1.SubsetPlacement
	manifest(t, ws["sf-east"], "SubsetPlacement", "db-east", &sp)
	if sp.Spec.Fencing == nil || sp.Spec.Fencing.Epoch != 0 {
		t.Errorf("unchecked stale delivery fencing = %+v, want epoch 0", sp.Spec.Fencing)
	}
}
