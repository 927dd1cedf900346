//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// patchManagedCluster applies mutate to ManagedCluster name on the hub (as
// unstructured), retrying on conflicts.
func (f *fleet) patchManagedCluster(t *testing.T, name string, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	eventually(t, waitTimeout, "updating ManagedCluster "+name, func(ctx context.Context) (bool, string, error) {
		mc := &unstructured.Unstructured{}
		mc.SetGroupVersionKind(framework.ManagedClusterGVK)
		if err := f.hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, "", err
		}
		mutate(mc)
		if err := f.hub.Update(ctx, mc); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// setNoSelectTaint adds (on) or removes the NoSelect taint key on
// ManagedCluster name: OCM's Placement stops deciding a cluster with a
// NoSelect taint it does not tolerate.
func (f *fleet) setNoSelectTaint(t *testing.T, name, key string, on bool) {
	f.patchManagedCluster(t, name, func(mc *unstructured.Unstructured) {
		taints, _, _ := unstructured.NestedSlice(mc.Object, "spec", "taints")
		var kept []any
		for _, x := range taints {
			if m, ok := x.(map[string]any); ok && m["key"] == key {
				continue
			}
			kept = append(kept, x)
		}
		if on {
			// timeAdded is OCM's to set (its ManagedCluster webhook refuses it).
			kept = append(kept, map[string]any{"key": key, "effect": "NoSelect"})
		}
		_ = unstructured.SetNestedSlice(mc.Object, kept, "spec", "taints")
	})
}

// TestPlacementRefSubsetsFollowDecisions runs OCM's placement controller on
// a FleetSet whose clusters a Placement chooses (the members labelled for
// this test): one subset per decided member, named after it; then a
// NoSelect taint takes the second member out of the decisions, and its
// subset moves, two-phase and fenced, to the first member with its
// identities (pod names, ordinals) kept.
func TestPlacementRefSubsetsFollowDecisions(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "placed")
	label := "fleetset.io/e2e-" + ns
	taint := "fleetset.io/e2e-drain-" + ns
	first, second := f.members[0].name, f.members[1].name
	for _, c := range []string{first, second} {
		f.patchManagedCluster(t, c, func(mc *unstructured.Unstructured) {
			l := mc.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l[label] = "true"
			mc.SetLabels(l)
		})
	}
	t.Cleanup(func() {
		for _, c := range []string{first, second} {
			f.setNoSelectTaint(t, c, taint, false)
			f.patchManagedCluster(t, c, func(mc *unstructured.Unstructured) {
				l := mc.GetLabels()
				delete(l, label)
				mc.SetLabels(l)
			})
		}
	})
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-clusters"},
		Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}}}}}}
	if err := f.hub.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.Topology.Subsets = nil
	fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "db-clusters"}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate}
	f.createFleetSet(t, fs)
	subsetsOf := func(ctx context.Context) (string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return "", err
		}
		var parts []string
		for _, s := range got.Status.Subsets {
			parts = append(parts, fmt.Sprintf("%s@%s:%d%s", s.Name, s.Cluster, s.Replicas, s.Failover))
		}
		slices.Sort(parts)
		return strings.Join(parts, " "), nil
	}
	want := fmt.Sprintf("%s@%s:2 %s@%s:2", first, first, second, second)
	if first > second {
		want = fmt.Sprintf("%s@%s:2 %s@%s:2", second, second, first, first)
	}
	eventually(t, waitTimeout, "one subset per decided member: "+want, func(ctx context.Context) (bool, string, error) {
		got, err := subsetsOf(ctx)
		return got == want, got, err
	})
	before := f.waitReady(t, ns, "db", 4)

	f.setNoSelectTaint(t, second, taint, true)
	eventually(t, 2*waitTimeout, fmt.Sprintf("subset %s moved to %s, 4 ready", second, first), func(ctx context.Context) (bool, string, error) {
		got, err := subsetsOf(ctx)
		if err != nil || !strings.Contains(got, second+"@"+first+":2") || strings.Contains(got, "Moving") {
			return false, got, err
		}
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, got, err
		}
		ready := 0
		for _, in := range ins {
			if in.ready && in.cluster == first {
				ready++
			}
		}
		return ready == 4, fmt.Sprintf("%s; %d ready in %s", got, ready, first), nil
	})
	after, err := f.instances(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ins []instance) []string {
		var out []string
		for _, in := range ins {
			out = append(out, fmt.Sprintf("%s/%d", in.pod, in.ordinal))
		}
		slices.Sort(out)
		return out
	}
	if b, a := names(before), names(after); !slices.Equal(b, a) {
		t.Errorf("identities changed with the move: %v → %v", b, a)
	}
	var pods corev1.PodList
	for _, m := range f.members {
		if m.name != second {
			continue
		}
		if err := m.c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("%s still runs %d pods of the FleetSet", second, len(pods.Items))
		}
	}
}
