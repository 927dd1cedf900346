//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// decide writes the PlacementDecision of Placement ns/name, as OCM's
// placement controller would, deciding clusters.
func decide(t testing.TB, ns, name string, clusters ...string) {
	t.Helper()
	ctx := context.Background()
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: name}}}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		if err := k8sClient.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	d.Status.Decisions = []clusterv1beta1.ClusterDecision{}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "test"})
	}
	if err := k8sClient.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// TestPlacementRef: a FleetSet whose clusters a Placement chooses gets one
// subset per decided cluster, named after it, with the listed share; a
// newly decided cluster adds a subset and re-divides; a cluster that leaves
// the decisions keeps its subset (name, ordinal block), which moves
// two-phase to a decided cluster; a Placement that decides nothing moves
// nothing and says so.
func TestPlacementRef(t *testing.T) {
	for _, c := range []string{"pl-east", "pl-west", "pl-north"} {
		createCluster(t, c, true)
	}
	createNamespace(t, "placed")
	startHub(t, time.Minute)
	decide(t, "placed", "db-clusters", "pl-east", "pl-west")
	fs := sampleFleetSet("placed", "db")
	fs.Spec.Topology.Subsets = nil
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "db-clusters",
		Shares: []fleetv1.ClusterShare{{Cluster: "pl-east", Replicas: intstr.FromInt32(6)}}}
	if err := k8sClient.Create(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	subsets := func() string {
		var parts []string
		for _, s := range getFleetSet(t, "placed", "db").Status.Subsets {
			parts = append(parts, s.Name+"@"+s.Cluster+":"+itoa(s.Replicas)+string(s.Failover))
		}
		return strings.Join(parts, " ")
	}
	eventually(t, 20*time.Second, "subsets pl-east (6) and pl-west (3), one work each", func() (bool, error) {
		ws := works(t, "placed", "db")
		return subsets() == "pl-east@pl-east:6 pl-west@pl-west:3" && ws["pl-east"] != nil && ws["pl-west"] != nil && manifestwork.HoldsStatefulSet(ws["pl-west"], "db-pl-west"), nil
	})
	if got := getFleetSet(t, "placed", "db"); len(got.Spec.Topology.Subsets) != 0 {
		t.Errorf("the hub wrote spec.topology.subsets: %v", got.Spec.Topology.Subsets)
	}

	decide(t, "placed", "db-clusters", "pl-east", "pl-north", "pl-west")
	eventually(t, 20*time.Second, "pl-north added, the rest re-divided", func() (bool, error) {
		// 6 to pl-east, the other 3 evenly (the division's own tie-break).
		got := subsets()
		if got != "pl-east@pl-east:6 pl-west@pl-west:1 pl-north@pl-north:2" && got != "pl-east@pl-east:6 pl-west@pl-west:2 pl-north@pl-north:1" {
			return false, fmt.Errorf("subsets %s", got)
		}
		return true, nil
	})
	starts := map[string]int32{}
	for _, s := range getFleetSet(t, "placed", "db").Status.Subsets {
		starts[s.Name] = s.OrdinalStart
	}

	// pl-west leaves the decisions (a NoSelect taint would do this): its
	// subset keeps its name and block and moves to the least hosted cluster
	// (pl-east and pl-north host one each: the first by name).
	decide(t, "placed", "db-clusters", "pl-east", "pl-north")
	drainAsAgent(t, "pl-west", "placed", "db", "db-pl-west")
	eventually(t, 20*time.Second, "subset pl-west on pl-east, its ordinal block kept", func() (bool, error) {
		for _, s := range getFleetSet(t, "placed", "db").Status.Subsets {
			if s.Name == "pl-west" {
				return s.Cluster == "pl-east" && s.Failover == "" && s.OrdinalStart == starts["pl-west"] && s.Epoch == 1, nil
			}
		}
		return false, nil
	})

	if !hasEvent(t, "placed", "db", EventMoved) {
		t.Errorf("no %s event for the move", EventMoved)
	}
	if w := works(t, "placed", "db")["pl-west"]; w != nil {
		t.Errorf("a work still in pl-west after its subset moved away")
	}

	decide(t, "placed", "db-clusters")
	eventually(t, 20*time.Second, "Degraded PlacementEmpty; nothing moved", func() (bool, error) {
		c := condition(getFleetSet(t, "placed", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonPlacementEmpty && strings.Contains(c.Message, "Placement placed/db-clusters decides no cluster") &&
			strings.Contains(subsets(), "pl-west@pl-east"), nil
	})
}
