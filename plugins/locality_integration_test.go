//go:build integration

package plugins_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestBoundPodsCarryTheirDomain drives real StatefulSets through the real
// StatefulSet controller and the shipped fleetset profile: every bound pod
// carries fleetset.io/domain, set at PreBind so already there when the pod
// is seen bound, equal to its node's zone and to its ordinal's domain (the
// placement's seat sequence); for a placement without domains, to its
// node's zone. A deleted pod comes back labelled again.
func TestBoundPodsCarryTheirDomain(t *testing.T) {
	nodeZone := nodeZones(t)
	ctx := context.Background()
	ns := newNamespace(t, "locality")
	weighted := makePlacement(ns, "db", 1000, fleetv1.DoNotSchedule,
		fleetv1.DomainShare{Name: "zone-c", Replicas: ptr.To(intstr.FromString("50%"))},
		fleetv1.DomainShare{Name: "zone-a"}, fleetv1.DomainShare{Name: "zone-b"})
	weighted.Spec.Cluster = "east" // the hub says where it delivered the placement
	spread := makePlacement(ns, "cache", 0, fleetv1.DoNotSchedule)
	for _, sp := range []*fleetv1.SubsetPlacement{weighted, spread} {
		if err := cl.Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, makeStatefulSet(ns, "db", "db", 8, 1000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, makeStatefulSet(ns, "cache", "cache", 5, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	want := expectedDomains(t, weighted, 8)
	pods := waitBound(t, ns, "db", 8)
	for o, p := range pods {
		label, zone := p.Labels[fleetv1.LabelDomain], nodeZone[p.Spec.NodeName]
		if label != zone || label != want[o] {
			t.Errorf("db ordinal %d on %s (zone %q): %s=%q, want %q (the ordinal's domain, the node's zone)", o, p.Spec.NodeName, zone, fleetv1.LabelDomain, label, want[o])
		}
		if c := p.Labels[fleetv1.LabelCluster]; c != "east" {
			t.Errorf("db ordinal %d: %s=%q, want the placement's cluster east", o, fleetv1.LabelCluster, c)
		}
	}
	for o, p := range waitBound(t, ns, "cache", 5) {
		if label, zone := p.Labels[fleetv1.LabelDomain], nodeZone[p.Spec.NodeName]; label == "" || label != zone {
			t.Errorf("cache ordinal %d on %s (zone %q): %s=%q, want the node's zone", o, p.Spec.NodeName, zone, fleetv1.LabelDomain, label)
		}
		if c, ok := p.Labels[fleetv1.LabelCluster]; ok {
			t.Errorf("cache ordinal %d: %s=%q from a placement without spec.cluster", o, fleetv1.LabelCluster, c)
		}
	}

	// A re-created pod is labelled again, before it is bound.
	victim := pods[1003]
	if err := cs.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	var p *v1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		var err error
		p, err = cs.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		return err == nil && p.UID != victim.UID && p.Spec.NodeName != "", nil
	}); err != nil {
		t.Fatalf("pod %s was not re-created and bound: %v", victim.Name, err)
	}
	if got := p.Labels[fleetv1.LabelDomain]; got != want[1003] || got != nodeZone[p.Spec.NodeName] {
		t.Errorf("re-created %s on %s: %s=%q, want %q", p.Name, p.Spec.NodeName, fleetv1.LabelDomain, got, want[1003])
	}
	t.Logf("db: %v", countByZone(want))
}

// TestBindingCarriesLocality: in the shipped profile the locality is on
// every bound pod twice, as labels (PreBind's PATCH) and as annotations
// (SubsetPlacement's Binding); in a profile with localityMetadata
// Annotations, as annotations only, equal to the ordinal's domain and its
// node's zone: the apiserver copied them from the Binding that bound the
// pod, and no PATCH wrote labels.
func TestBindingCarriesLocality(t *testing.T) {
	nodeZone := nodeZones(t)
	ctx := context.Background()
	for _, tc := range []struct {
		scheduler string
		labels    bool
	}{
		{scheduler: "fleetset-scheduler", labels: true},
		{scheduler: annotationsScheduler, labels: false},
	} {
		t.Run(tc.scheduler, func(t *testing.T) {
			ns := newNamespace(t, "binding")
			sp := makePlacement(ns, "db", 1000, fleetv1.DoNotSchedule,
				fleetv1.DomainShare{Name: "zone-b", Replicas: ptr.To(intstr.FromString("50%"))},
				fleetv1.DomainShare{Name: "zone-a"}, fleetv1.DomainShare{Name: "zone-c"})
			sp.Spec.Cluster = "west"
			if err := cl.Create(ctx, sp); err != nil {
				t.Fatal(err)
			}
			sts := makeStatefulSet(ns, "db", "db", 6, 1000)
			sts.Spec.Template.Spec.SchedulerName = tc.scheduler
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			want := expectedDomains(t, sp, 6)
			for o, p := range waitBound(t, ns, "db", 6) {
				zone := nodeZone[p.Spec.NodeName]
				if got := p.Annotations[fleetv1.LabelDomain]; got != want[o] || got != zone {
					t.Errorf("ordinal %d on %s (zone %q): annotation %s=%q, want %q", o, p.Spec.NodeName, zone, fleetv1.LabelDomain, got, want[o])
				}
				if got := p.Annotations[fleetv1.LabelCluster]; got != "west" {
					t.Errorf("ordinal %d: annotation %s=%q, want west", o, fleetv1.LabelCluster, got)
				}
				label, labelled := p.Labels[fleetv1.LabelDomain]
				_, clusterLabelled := p.Labels[fleetv1.LabelCluster]
				switch {
				case tc.labels && (label != want[o] || p.Labels[fleetv1.LabelCluster] != "west"):
					t.Errorf("ordinal %d: labels %v, want %s=%s and %s=west", o, p.Labels, fleetv1.LabelDomain, want[o], fleetv1.LabelCluster)
				case !tc.labels && (labelled || clusterLabelled):
					t.Errorf("ordinal %d: labels %v: a locality label was written with localityMetadata Annotations", o, p.Labels)
				}
			}
		})
	}
}
