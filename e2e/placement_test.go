//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
)

// expected is what division says a FleetSet's instances should be: per
// subset, its cluster, count and per-domain counts.
type expected struct {
	cluster string
	count   int32
	domains map[string]int32
}

// divide computes, independently of fleetset-hub, the division of fs over its
// subsets and each subset's domains.
func divide(t *testing.T, fs *fleetv1.FleetSet) map[string]expected {
	t.Helper()
	res, err := apportion.Divide(fs.Spec.Replicas, apportion.SubsetShares(fs.Spec.Topology.Subsets))
	if err != nil {
		t.Fatalf("dividing %d over subsets: %v", fs.Spec.Replicas, err)
	}
	out := map[string]expected{}
	for i, s := range fs.Spec.Topology.Subsets {
		e := expected{cluster: s.Cluster, count: res.Assignments[i].Replicas, domains: map[string]int32{}}
		if len(s.Domains) > 0 {
			dr, err := apportion.Divide(e.count, apportion.DomainShares(s.Domains))
			if err != nil {
				t.Fatalf("dividing subset %s (%d) over its domains: %v", s.Name, e.count, err)
			}
			for j, d := range s.Domains {
				e.domains[d.Name] = dr.Assignments[j].Replicas
			}
		}
		out[s.Name] = e
	}
	return out
}

// ordinalStarts returns each subset's spec.ordinals.start as the member
// StatefulSets hold it.
func (f *fleet) ordinalStarts(ctx context.Context, fs *fleetv1.FleetSet) (map[string]int32, error) {
	out := map[string]int32{}
	for _, s := range fs.Spec.Topology.Subsets {
		sts := &appsv1.StatefulSet{}
		key := client.ObjectKey{Namespace: fs.Namespace, Name: fs.Name + "-" + s.Name}
		// A subset of 0 replicas may be applied a moment after the others
		// are Ready (its work agent's own pace): wait for it a little.
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := f.member(s.Cluster).c.Get(ctx, key, sts)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: StatefulSet %s: %w", s.Cluster, key.Name, err)
		}
		out[s.Name] = ordinalStart(sts)
	}
	return out, nil
}

// checkPlacement fails the test unless ins is exactly what division of fs
// says — per subset: its cluster, its count, its per-zone counts, the ordinal
// block [start, start+count) — and ordinals are unique fleet-wide. It returns
// the ordinal starts.
func (f *fleet) checkPlacement(t *testing.T, fs *fleetv1.FleetSet, ins []instance) map[string]int32 {
	t.Helper()
	starts, err := f.ordinalStarts(t.Context(), fs)
	if err != nil {
		t.Fatal(err)
	}
	want := divide(t, fs)
	seen := map[int]instance{}
	perSubset := map[string]int32{}
	perZone := map[string]map[string]int32{}
	for _, in := range ins {
		if prev, dup := seen[in.ordinal]; dup {
			t.Errorf("ordinal %d held twice: %s/%s and %s/%s", in.ordinal, prev.cluster, prev.pod, in.cluster, in.pod)
		}
		seen[in.ordinal] = in
		e, ok := want[in.subset]
		if !ok {
			t.Errorf("pod %s/%s belongs to unknown subset %q", in.cluster, in.pod, in.subset)
			continue
		}
		if in.cluster != e.cluster {
			t.Errorf("pod %s of subset %s runs in cluster %s, want %s", in.pod, in.subset, in.cluster, e.cluster)
		}
		if lo, hi := int(starts[in.subset]), int(starts[in.subset]+e.count); in.ordinal < lo || in.ordinal >= hi {
			t.Errorf("pod %s/%s has ordinal %d outside its subset's range [%d,%d)", in.cluster, in.pod, in.ordinal, lo, hi)
		}
		perSubset[in.subset]++
		if perZone[in.subset] == nil {
			perZone[in.subset] = map[string]int32{}
		}
		perZone[in.subset][in.zone]++
	}
	for name, e := range want {
		if perSubset[name] != e.count {
			t.Errorf("subset %s: %d instances, division says %d", name, perSubset[name], e.count)
		}
		if len(e.domains) == 0 {
			continue
		}
		for z, n := range e.domains {
			if perZone[name][z] != n {
				t.Errorf("subset %s, zone %s: %d instances, division says %d", name, z, perZone[name][z], n)
			}
		}
		for z, n := range perZone[name] {
			if _, ok := e.domains[z]; !ok {
				t.Errorf("subset %s: %d instances in zone %q, outside its domains", name, n, z)
			}
		}
	}
	if t.Failed() {
		t.Logf("placement:\n%s", formatInstances(ins))
	}
	return starts
}

func TestPlacementMatchesDivision(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-placement")
	fs := f.newFleetSet(ns, "db", 9)
	f.createFleetSet(t, fs)

	ins := f.waitReady(t, ns, "db", 9)
	starts := f.checkPlacement(t, fs, ins)
	t.Logf("ordinal starts %v; placement:\n%s", starts, formatInstances(ins))

	// Ordinal blocks of different subsets do not overlap.
	var ss []int32
	for _, s := range starts {
		ss = append(ss, s)
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i] < ss[j] })
	for i := 1; i < len(ss); i++ {
		if ss[i] == ss[i-1] {
			t.Errorf("two subsets share ordinal start %d: %v", ss[i], starts)
		}
	}
	// Every pod was placed by fleetset-scheduler.
	for _, m := range f.members {
		for _, in := range ins {
			if in.cluster != m.name {
				continue
			}
			if in.node == "" {
				t.Errorf("%s/%s is not bound", in.cluster, in.pod)
			}
		}
	}
}

func TestScaleKeepsBalanceAndOrdinals(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-scale")
	fs := f.newFleetSet(ns, "db", 9)
	f.createFleetSet(t, fs)
	f.scaleThrough(t, fs, f.waitReady(t, ns, "db", 9), 5, 12)
}

// TestDomainSharesKeepOrdinalsInPlace proves that percent and unset domain
// shares, listed out of name order, place each ordinal in its seat's zone:
// the per-zone counts match division at every size of 1 → 12 → 5 → 12, a
// surviving ordinal never moves, and a deleted pod comes back in its zone.
func TestDomainSharesKeepOrdinalsInPlace(t *testing.T) {
	f := theFleet
	if len(f.zones) < 3 {
		t.Skipf("needs 3 zones, the fleet has %v", f.zones)
	}
	za, zb, zc := f.zones[0], f.zones[1], f.zones[2]
	ns := f.newNamespace(t, "e2e-shares")
	fs := f.newFleetSet(ns, "db", 1)
	subsets := fs.Spec.Topology.Subsets
	subsets[0].Domains = []fleetv1.DomainShare{{Name: zb, Replicas: intOrPercent("60%")}, {Name: za, Replicas: intOrPercent("40%")}}
	subsets[1].Domains = []fleetv1.DomainShare{{Name: zc}, {Name: za}, {Name: zb, Replicas: intOrPercent("20%")}}
	f.createFleetSet(t, fs)
	ins := f.scaleThrough(t, fs, f.waitReady(t, ns, "db", 1), 12, 5, 12)

	// Delete a pod of the 60% domain: it must come back in that zone.
	var victim instance
	for _, in := range ins {
		if in.subset == subsets[0].Name && in.zone == zb {
			victim = in
			break
		}
	}
	if victim.pod == "" {
		t.Fatalf("no instance of subset %s in zone %s", subsets[0].Name, zb)
	}
	if err := f.member(victim.cluster).c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim.pod}}); err != nil {
		t.Fatalf("deleting %s/%s: %v", victim.cluster, victim.pod, err)
	}
	var back instance
	eventually(t, waitTimeout, "pod "+victim.pod+" re-created and ready", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, in := range ins {
			if in.ordinal == victim.ordinal && in.uid != victim.uid {
				back = in
				return in.ready, fmt.Sprintf("%s on node %q, ready %v", in.pod, in.node, in.ready), nil
			}
		}
		return false, "not re-created yet", nil
	})
	t.Logf("deleted %s/%s (ordinal %d, zone %s); re-created on %s in zone %s", victim.cluster, victim.pod, victim.ordinal, victim.zone, back.node, back.zone)
	if back.cluster != victim.cluster || back.zone != victim.zone {
		t.Errorf("ordinal %d came back in %s/%s, was in %s/%s", victim.ordinal, back.cluster, back.zone, victim.cluster, victim.zone)
	}
	f.checkPlacement(t, fs, f.waitReady(t, ns, "db", 12))
}

// scaleThrough checks the placement of ins, the instances of fs, then scales
// fs to each of sizes in turn. At every size the placement must match
// division (checkPlacement), no subset's ordinal start may move, and every
// ordinal that survives must be the same pod in the same subset and zone. It
// logs each size's per-zone counts and returns the last size's instances.
func (f *fleet) scaleThrough(t *testing.T, fs *fleetv1.FleetSet, ins []instance, sizes ...int32) []instance {
	t.Helper()
	starts0 := f.checkPlacement(t, fs, ins)
	t.Logf("%d replicas: %s", fs.Spec.Replicas, zoneCounts(ins))
	for _, replicas := range sizes {
		prev := ins
		f.updateFleetSet(t, fs.Namespace, fs.Name, func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = replicas })
		fs.Spec.Replicas = replicas
		ins = f.waitReady(t, fs.Namespace, fs.Name, int(replicas))
		starts := f.checkPlacement(t, fs, ins)
		t.Logf("%d -> %d replicas: %s", len(prev), replicas, zoneCounts(ins))
		for s, st := range starts {
			if st != starts0[s] {
				t.Errorf("subset %s: ordinal start moved from %d to %d", s, starts0[s], st)
			}
		}
		byOrdinal := map[int]instance{}
		for _, in := range prev {
			byOrdinal[in.ordinal] = in
		}
		for _, in := range ins {
			old, ok := byOrdinal[in.ordinal]
			if ok && (old.uid != in.uid || old.subset != in.subset || old.zone != in.zone) {
				t.Errorf("ordinal %d changed: was %s/%s (subset %s, zone %s, uid %s), now %s/%s (subset %s, zone %s, uid %s)",
					in.ordinal, old.cluster, old.pod, old.subset, old.zone, old.uid, in.cluster, in.pod, in.subset, in.zone, in.uid)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	return ins
}

// zoneCounts summarises instances as "subset{zone:n ...} ...", with each
// zone's ordinals.
func zoneCounts(ins []instance) string {
	bySubset := map[string]map[string][]int{}
	for _, in := range ins {
		if bySubset[in.subset] == nil {
			bySubset[in.subset] = map[string][]int{}
		}
		bySubset[in.subset][in.zone] = append(bySubset[in.subset][in.zone], in.ordinal)
	}
	var parts []string
	for s, zones := range bySubset {
		var zs []string
		for z, ords := range zones {
			zs = append(zs, fmt.Sprintf("%s:%d%v", z, len(ords), ords))
		}
		sort.Strings(zs)
		parts = append(parts, s+"{"+strings.Join(zs, " ")+"}")
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func TestManualPartitionsUpdateOnlyUnpartitioned(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-update")
	fs := f.newFleetSet(ns, "db", 9)
	partitions := map[string]int32{}
	for i, s := range fs.Spec.Topology.Subsets {
		partitions[s.Name] = int32(2 - i%2) // 2, 1, 2, ...
	}
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{
		Type:         fleetv1.ManualUpdateStrategyType,
		ManualUpdate: &fleetv1.ManualUpdate{Partitions: partitions},
	}
	f.createFleetSet(t, fs)
	before := f.waitReady(t, ns, "db", 9)
	f.checkPlacement(t, fs, before)
	oldRevision := map[int]string{}
	oldUID := map[int]string{}
	oldSubsetRevision := map[string]string{}
	for _, in := range before {
		oldRevision[in.ordinal], oldUID[in.ordinal] = in.revision, in.uid
		oldSubsetRevision[in.subset] = in.revision
	}

	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].Env[0].Value = "2"
	})

	// Each subset: instances below start+partition keep their pod and
	// revision; the others are re-created on the new revision.
	check := func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		var problems []string
		for _, s := range fs.Spec.Topology.Subsets {
			sts := &appsv1.StatefulSet{}
			if err := f.member(s.Cluster).c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + s.Name}, sts); err != nil {
				return false, "", err
			}
			if partitionOf(sts) != partitions[s.Name] {
				problems = append(problems, fmt.Sprintf("%s: StatefulSet partition %d, want %d", s.Name, partitionOf(sts), partitions[s.Name]))
				continue
			}
			if sts.Status.ObservedGeneration != sts.Generation || sts.Status.UpdateRevision == "" || sts.Status.UpdateRevision == oldSubsetRevision[s.Name] {
				problems = append(problems, fmt.Sprintf("%s: no new revision yet", s.Name))
				continue
			}
			limit := int(ordinalStart(sts) + partitions[s.Name])
			for _, in := range ins {
				if in.subset != s.Name {
					continue
				}
				switch {
				case in.ordinal < limit && (in.revision != oldRevision[in.ordinal] || in.uid != oldUID[in.ordinal]):
					problems = append(problems, fmt.Sprintf("partitioned %s (ordinal %d < %d) was updated to %s", in.pod, in.ordinal, limit, in.revision))
				case in.ordinal >= limit && (in.revision != sts.Status.UpdateRevision || !in.ready):
					problems = append(problems, fmt.Sprintf("%s (ordinal %d ≥ %d) on %s ready=%v, want %s", in.pod, in.ordinal, limit, in.revision, in.ready, sts.Status.UpdateRevision))
				}
			}
		}
		if len(ins) != 9 {
			problems = append(problems, fmt.Sprintf("%d instances, want 9", len(ins)))
		}
		return len(problems) == 0, strings.Join(problems, "; "), nil
	}
	eventually(t, waitTimeout, "the unpartitioned instances to update", check)
	// A partitioned instance must stay old, not merely not yet be updated.
	time.Sleep(5 * time.Second)
	ok, why, err := check(t.Context())
	if err != nil || !ok {
		t.Fatalf("after the rollout settled: %s %v", why, err)
	}
	var wantUpdated int32
	for _, s := range fs.Spec.Topology.Subsets {
		wantUpdated += divide(t, fs)[s.Name].count - partitions[s.Name]
	}
	eventually(t, waitTimeout, fmt.Sprintf("FleetSet status.updatedReplicas = %d", wantUpdated), func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return got.Status.UpdatedReplicas == wantUpdated, fmt.Sprintf("updatedReplicas %d", got.Status.UpdatedReplicas), nil
	})
}

// intOrPercent is a helper for table tests of bad specs.
func intOrPercent(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}
