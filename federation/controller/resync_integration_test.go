//go:build integration

package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
)

// resyncLease returns the Lease in a cluster's resync work, or ok=false if
// there is no such work.
func resyncLease(t testing.TB, cluster string) (manifestwork.Lease, bool) {
	t.Helper()
	w := &workv1.ManifestWork{}
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: fleetv1.ResyncWorkName}, w)
	if apierrors.IsNotFound(err) {
		return manifestwork.Lease{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := manifestwork.LeaseOf(w)
	if err != nil {
		t.Fatal(err)
	}
	return l, true
}

func TestResyncLease(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "r-east", true)
	createCluster(t, "r-west", true)
	createCluster(t, "r-idle", true) // hosts no subset: gets no lease
	createNamespace(t, "resync")
	const duration = 3 * time.Second // renewed every second
	startHub(t, duration)

	fs := sampleFleetSet("resync", "mydb")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "r-east", "r-west"
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	var first manifestwork.Lease
	eventually(t, 20*time.Second, "resync lease in r-east", func() (bool, error) {
		var ok bool
		first, ok = resyncLease(t, "r-east")
		return ok, nil
	})
	if first.HolderIdentity != "test-hub" || first.DurationSeconds != 3 {
		t.Errorf("lease holder %q duration %d, want test-hub, 3", first.HolderIdentity, first.DurationSeconds)
	}
	w := &workv1.ManifestWork{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: "r-east", Name: fleetv1.ResyncWorkName}, w); err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	manifest(t, w, "Lease", fleetv1.ResyncLeaseName, &lease)
	if lease.Namespace != fleetv1.ResyncLeaseNamespace {
		t.Errorf("Lease namespace %q, want %q", lease.Namespace, fleetv1.ResyncLeaseNamespace)
	}
	for _, c := range w.Spec.ManifestConfigs {
		if c.UpdateStrategy == nil || c.UpdateStrategy.Type != workv1.UpdateStrategyTypeServerSideApply || !c.UpdateStrategy.ServerSideApply.Force {
			t.Errorf("resync work: %s not applied with forced server-side apply", c.ResourceIdentifier.Resource)
		}
	}

	// Renewed about every second while r-east is available.
	renewals := 0
	last := first.RenewTime
	// (6 s: a loaded machine may stretch one renewal past a second)
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		l, _ := resyncLease(t, "r-east")
		if l.RenewTime.After(last.Time) {
			renewals++
			last = l.RenewTime
		}
		time.Sleep(100 * time.Millisecond)
	}
	if renewals < 2 {
		t.Errorf("%d renewals in 6s with a 3s lease, want ≥ 2", renewals)
	}
	if l, _ := resyncLease(t, "r-east"); l.AcquireTime != first.AcquireTime {
		t.Errorf("acquireTime moved from %v to %v on renewal", first.AcquireTime, l.AcquireTime)
	}

	// r-east turns unavailable: its lease is no longer renewed; r-west's is.
	setAvailable(t, "r-east", false)
	time.Sleep(1500 * time.Millisecond) // a renewal may have been in flight
	stopped, _ := resyncLease(t, "r-east")
	westBefore, _ := resyncLease(t, "r-west")
	time.Sleep(2 * duration)
	if l, _ := resyncLease(t, "r-east"); !l.RenewTime.Equal(&stopped.RenewTime) {
		t.Errorf("lease of unavailable r-east renewed: %v → %v", stopped.RenewTime, l.RenewTime)
	}
	if l, _ := resyncLease(t, "r-west"); !l.RenewTime.After(westBefore.RenewTime.Time) {
		t.Errorf("lease of available r-west not renewed while r-east was unavailable")
	}
	if age := time.Since(stopped.RenewTime.Time); age < duration {
		t.Errorf("r-east lease age %v, want it expired (> %v)", age, duration)
	}

	// Available again: renewed at once.
	setAvailable(t, "r-east", true)
	eventually(t, 5*time.Second, "r-east lease renewed after it became available", func() (bool, error) {
		l, _ := resyncLease(t, "r-east")
		return time.Since(l.RenewTime.Time) < duration, nil
	})
	if _, ok := resyncLease(t, "r-idle"); ok {
		t.Errorf("r-idle, hosting no subset, got a resync lease")
	}

	// Nothing uses the clusters any more: the resync works go.
	if err := k8sClient.Delete(ctx, getFleetSet(t, "resync", "mydb")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "resync works deleted", func() (bool, error) {
		_, east := resyncLease(t, "r-east")
		_, west := resyncLease(t, "r-west")
		return !east && !west, nil
	})
}

// TestHubRestart stops the hub while it is writing ManifestWorks for many
// FleetSets, changes them while it is down, and checks that a new hub
// converges: every FleetSet has exactly one up-to-date work per cluster,
// ordinal blocks are kept, a FleetSet deleted meanwhile is cleaned up.
func TestHubRestart(t *testing.T) {
	ctx := context.Background()
	clusters := []string{"h-1", "h-2", "h-3"}
	for _, c := range clusters {
		createCluster(t, c, true)
	}
	createNamespace(t, "restart")
	const n = 30
	h := startHub(t, time.Minute)
	for i := 0; i < n; i++ {
		fs := sampleFleetSet("restart", fmt.Sprintf("db-%02d", i))
		fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = clusters[i%3], clusters[(i+1)%3]
		if err := k8sClient.Create(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	// Stop mid-change: some works written, not all.
	eventually(t, 20*time.Second, "first ManifestWorks", func() (bool, error) {
		return h.writes.total.Load() > 5, nil
	})
	h.stop()
	var all workv1.ManifestWorkList
	if err := k8sClient.List(ctx, &all, client.MatchingLabels{fleetv1.LabelOwnerNamespace: "restart"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub stopped with %d of %d ManifestWorks written", len(all.Items), 2*n)
	startsBefore := map[string]map[string]int32{}
	for i := range all.Items {
		w := &all.Items[i]
		startsBefore[w.Labels[fleetv1.LabelOwnerName]] = manifestwork.OrdinalStarts(w)
	}

	// While the hub is down: scale every FleetSet, add a subset to db-00,
	// delete db-01.
	for i := 0; i < n; i++ {
		updateFleetSet(t, "restart", fmt.Sprintf("db-%02d", i), func(fs *fleetv1.FleetSet) {
			fs.Spec.Replicas = 12
			if i == 0 {
				fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{Name: "third", Cluster: "h-3"})
			}
		})
	}
	deleted := getFleetSet(t, "restart", "db-01")
	if err := k8sClient.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}

	startHub(t, time.Minute)
	eventually(t, 60*time.Second, "every FleetSet converged", func() (bool, error) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("db-%02d", i)
			if i == 1 {
				if err := k8sClient.Get(ctx, clientKey("restart", name), &fleetv1.FleetSet{}); !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("deleted FleetSet %s still there (%v)", name, err)
				}
				if ws := works(t, "restart", name); len(ws) != 0 {
					return false, fmt.Errorf("deleted FleetSet %s still has works in %v", name, keys(ws))
				}
				continue
			}
			fs := getFleetSet(t, "restart", name)
			if fs.Status.ObservedGeneration != fs.Generation {
				return false, fmt.Errorf("%s: status not observed", name)
			}
			subsets, _, err := plan.For(fs, previousStarts(fs, nil))
			if err != nil {
				return false, err
			}
			rev, err := rollout.Revision(fs.Spec.Template, fs.Spec.VolumeClaimTemplates)
			if err != nil {
				return false, err
			}
			delivered := make([]manifestwork.Subset, len(subsets))
			for i, sp := range subsets {
				delivered[i] = manifestwork.FromPlan(sp)
				delivered[i].Revision = rev
			}
			desired, err := manifestwork.Works(fs, delivered, nil)
			if err != nil {
				return false, err
			}
			ws := works(t, "restart", name)
			if len(ws) != len(desired) {
				return false, fmt.Errorf("%s: works in %v, want %d", name, keys(ws), len(desired))
			}
			for _, d := range desired {
				if ws[d.Namespace] == nil || !manifestwork.UpToDate(ws[d.Namespace], d) {
					return false, fmt.Errorf("%s: work in %s missing or stale", name, d.Namespace)
				}
			}
		}
		return true, nil
	})
	// Blocks assigned before the restart were kept.
	for name, starts := range startsBefore {
		if name == "db-01" {
			continue
		}
		fs := getFleetSet(t, "restart", name)
		for _, s := range fs.Status.Subsets {
			if before, ok := starts[s.Name]; ok && before != s.OrdinalStart {
				t.Errorf("%s subset %s: ordinalStart %d before the restart, %d after", name, s.Name, before, s.OrdinalStart)
			}
		}
	}
	fs := getFleetSet(t, "restart", "db-00")
	if got := fs.Status.Subsets[2]; got.Name != "third" || got.OrdinalStart != 2000 {
		t.Errorf("db-00 new subset = %s at %d, want third at 2000", got.Name, got.OrdinalStart)
	}
}
