//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// TestPlacementRefLongClusterName (issue 48): a Placement decides a
// cluster whose name makes the subset's StatefulSet name db-<cluster> 53
// characters, over the 52 that keep its pods' names and revision label
// within 63 (the StatefulSet controller would create no pod, ever). The
// hub creates no such subset: the other cluster's subset takes every
// replica, Degraded SubsetNameTooLong names the field, the cluster and
// the limit, with a Warning event, and no work holds the StatefulSet.
// Admission refuses the same cluster named in placementRef.shares.
func TestPlacementRefLongClusterName(t *testing.T) {
	long := "pl-" + strings.Repeat("x", 47) // db-<long>: 53 characters
	for _, c := range []string{"pl-short", long} {
		createCluster(t, c, true)
	}
	createNamespace(t, "placedlong")
	startHub(t, time.Minute)
	decide(t, "placedlong", "db-clusters", "pl-short", long)

	bad := sampleFleetSet("placedlong", "db")
	bad.Spec.Topology.Subsets = nil
	bad.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	bad.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "db-clusters",
		Shares: []fleetv1.ClusterShare{{Cluster: long, Replicas: intstr.FromInt32(2)}}}
	err := k8sClient.Create(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "spec.topology.placementRef.shares[].cluster: <fleetset>-<cluster> must be at most 52 characters") {
		t.Fatalf("a share naming a cluster too long for the FleetSet's name: %v, want refused at admission", err)
	}

	fs := sampleFleetSet("placedlong", "db")
	fs.Spec.Topology.Subsets = nil
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "db-clusters"}
	if err := k8sClient.Create(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	want := "spec.topology.placementRef: Placement placedlong/db-clusters decides cluster " + long + ", and its subset's StatefulSet name db-" + long + " would be 53 characters, over 52"
	eventually(t, 20*time.Second, "only subset pl-short, with every replica; Degraded SubsetNameTooLong", func() (bool, error) {
		got := getFleetSet(t, "placedlong", "db")
		c := apimeta.FindStatusCondition(got.Status.Conditions, fleetv1.ConditionDegraded)
		return len(got.Status.Subsets) == 1 && got.Status.Subsets[0].Name == "pl-short" && got.Status.Subsets[0].Replicas == fs.Spec.Replicas &&
			c != nil && strings.Contains(c.Message, want), nil
	})
	if !hasEventContaining(t, "placedlong", "db", fleetv1.ReasonSubsetNameTooLong, want) {
		t.Errorf("no %s event", fleetv1.ReasonSubsetNameTooLong)
	}
	if w := works(t, "placedlong", "db")[long]; w != nil && manifestwork.HoldsStatefulSet(w, "db-"+long) {
		t.Errorf("cluster %s's work holds StatefulSet db-%s, whose pods cannot be created", long, long)
	}
}
