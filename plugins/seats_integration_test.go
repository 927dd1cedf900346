//go:build integration

package plugins_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
)

// TestScaleStepByStepKeepsOrdinalsInTheirDomains drives real StatefulSets,
// through the real StatefulSet controller and the fleetset profile, 1→12 one
// replica at a time and then 12→5→12, for placements whose shares are
// percents, or ints mixed with percents and unset shares, or listed out of
// name order. At every size: each pod is in the domain of its ordinal, the
// pods per domain equal the hub's division (apportion.Divide over the same
// shares) at that size, and every pod that survives a step keeps its UID and
// node.
func TestScaleStepByStepKeepsOrdinalsInTheirDomains(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	cases := []struct {
		name    string
		domains []fleetv1.DomainShare
	}{
		{name: "60:40", domains: []fleetv1.DomainShare{{Name: "zone-a", Replicas: pct("60%")}, {Name: "zone-b", Replicas: pct("40%")}}},
		{name: "unordered even", domains: []fleetv1.DomainShare{{Name: "zone-c"}, {Name: "zone-a"}, {Name: "zone-b"}}},
		{name: "unordered int, percent, unset", domains: []fleetv1.DomainShare{{Name: "zone-c", Replicas: num(2)}, {Name: "zone-b", Replicas: pct("70%")}, {Name: "zone-a"}}},
	}
	nodeZone := nodeZones(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, "steps")
			sp := makePlacement(ns, "db", 0, fleetv1.DoNotSchedule, tc.domains...)
			if err := cl.Create(context.Background(), sp); err != nil {
				t.Fatal(err)
			}
			shares := apportion.DomainShares(tc.domains)
			if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "db", "db", 1, 0), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			sizes := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 5, 12}
			var prev map[int64]string // ordinal → uid/node of the previous size
			for _, n := range sizes {
				scale(t, ns, "db", n)
				pods := waitBound(t, ns, "db", int(n))
				got := zonesOf(pods, nodeZone)
				if diff := cmp.Diff(expectedDomains(t, sp, int(n)), got); diff != "" {
					t.Errorf("%d replicas: ordinal → zone (-map,+scheduled):\n%s", n, diff)
				}
				div, err := apportion.Divide(n, shares)
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]int{}
				for _, a := range div.Assignments {
					if a.Replicas > 0 {
						want[a.Name] = int(a.Replicas)
					}
				}
				if diff := cmp.Diff(want, countByZone(got)); diff != "" {
					t.Errorf("%d replicas: pods per zone differ from the hub's division (-division,+scheduled):\n%s", n, diff)
				}
				now := map[int64]string{}
				for o, p := range pods {
					now[o] = string(p.UID) + "@" + p.Spec.NodeName
					if was, ok := prev[o]; ok && was != now[o] {
						t.Errorf("%d replicas: ordinal %d moved or was re-created: %s → %s", n, o, was, now[o])
					}
				}
				prev = now
				t.Logf("%2d replicas: %v", n, countByZone(got))
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestSpreadOnlyPlacement: a placement without domains (what the hub writes
// for a subset without domains) is admitted and its pods schedule, spread
// over every value of the topology key the nodes carry, within one pod of
// each other; no pod lands on a node without the key.
func TestSpreadOnlyPlacement(t *testing.T) {
	nodeZone := nodeZones(t)
	zones := map[string]bool{}
	for _, z := range nodeZone {
		zones[z] = true
	}
	ns := newNamespace(t, "spread")
	if err := cl.Create(context.Background(), makePlacement(ns, "db", 0, fleetv1.DoNotSchedule)); err != nil {
		t.Fatalf("creating a SubsetPlacement without domains: %v", err)
	}
	n := 2*len(zones) + 1
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "db", "db", int32(n), 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	counts := countByZone(zonesOf(waitBound(t, ns, "db", n), nodeZone))
	lo, hi := n, 0
	for z := range zones {
		lo, hi = min(lo, counts[z]), max(hi, counts[z])
	}
	if hi-lo > 1 || counts[""] != 0 {
		t.Errorf("%d pods over zones %v: %v, want within one pod of each other and none off-zone", n, zones, counts)
	}
	t.Logf("%d pods: %v", n, counts)
}
