//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/api/utils/work/v1/workvalidator"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// allWorks returns every ManifestWork owned by FleetSet ns/name, fleet DNS
// works included.
func allWorks(t testing.TB, ns, name string) []workv1.ManifestWork {
	t.Helper()
	var list workv1.ManifestWorkList
	if err := k8sClient.List(context.Background(), &list, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns, fleetv1.LabelOwnerName: name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// publishMembers stores what each cluster's member publishes on the hub for
// FleetSet ns/name: instances [c*1000, c*1000+n) of subset s<c> in cluster
// c, all serving.
func publishMembers(t testing.TB, ns, name string, clusters []string, n int) {
	t.Helper()
	ctx := context.Background()
	for c, cluster := range clusters {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: fleetv1.MemberEndpointsName(ns, name),
			Labels: map[string]string{fleetv1.LabelMemberEndpoints: "true", fleetv1.LabelOwnerNamespace: ns, fleetv1.LabelOwnerName: name}},
			AddressType: discoveryv1.AddressTypeIPv4}
		for k := range n {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 100+c, k/250, k%250+1)},
				Hostname:   ptr.To(fmt.Sprintf("%s-s%d-%d", name, c, c*1000+k)),
				Conditions: discoveryv1.EndpointConditions{Serving: ptr.To(true), Terminating: ptr.To(false)}})
		}
		cur := &discoveryv1.EndpointSlice{}
		switch err := k8sClient.Get(ctx, client.ObjectKeyFromObject(s), cur); {
		case apierrors.IsNotFound(err):
			err = k8sClient.Create(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			cur.Endpoints = s.Endpoints
			if err := k8sClient.Update(ctx, cur); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fleetDNSDelivered checks every work of FleetSet ns/name against OCM's own
// manifest validator and returns, by cluster, how many fleet DNS records
// its works carry, how many works it has, and the largest work's bytes.
func fleetDNSDelivered(t testing.TB, ns, name string) (records, works map[string]int, largest int, invalid error) {
	t.Helper()
	records, works = map[string]int{}, map[string]int{}
	for _, w := range allWorks(t, ns, name) {
		size := 0
		for _, m := range w.Spec.Workload.Manifests {
			size += len(m.Raw)
			var s discoveryv1.EndpointSlice
			if err := json.Unmarshal(m.Raw, &s); err == nil && s.Kind == "EndpointSlice" {
				records[w.Namespace] += len(s.Endpoints)
			}
		}
		largest = max(largest, size)
		works[w.Namespace]++
		if err := workvalidator.ManifestValidator.ValidateManifests(w.Spec.Workload.Manifests); err != nil && invalid == nil {
			invalid = fmt.Errorf("work %s/%s (%d bytes): %w", w.Namespace, w.Name, size, err)
		}
	}
	return records, works, largest, invalid
}

// TestLargeFleet delivers a FleetSet of v1alpha1.MaxFleetDNSInstances
// (10,000) instances over 10 clusters on a real apiserver: every work the
// hub writes passes OCM's manifest validator, each cluster's works carry
// the fleet DNS records of the 9000 instances of the other clusters (in
// fleet DNS works besides the cluster's ManifestWork), and the members'
// feedback folds into a Ready FleetSet; a fleet DNS work the agent reports
// not applied is an ApplyFailed problem naming it. Scaled down to 2000 instances, the
// records go back into the clusters' ManifestWorks and the fleet DNS works
// are deleted.
func TestLargeFleet(t *testing.T) {
	const ns, name, per = "largefleet", "big", 1000
	createNamespace(t, ns)
	var clusters []string
	fs := sampleFleetSet(ns, name)
	rolling(fs)
	fs.Spec.Replicas = 10 * per
	fs.Spec.Topology.Subsets = nil
	for c := range 10 {
		cluster := fmt.Sprintf("lf-%02d", c)
		clusters = append(clusters, cluster)
		createCluster(t, cluster, true)
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{Name: fmt.Sprintf("s%d", c), Cluster: cluster,
			Replicas: ptr.To(intstr.FromString("10%")), Domains: []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}}})
	}
	publishMembers(t, ns, name, clusters, per)
	h := startHub(t, time.Minute)
	// Leave the shared apiserver as found: later tests' hubs need not
	// reconcile 60 works and renew 10 leases more.
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		for _, c := range clusters {
			deleteCluster(t, c)
		}
	})
	start := time.Now()
	if err := k8sClient.Create(context.Background(), fs); err != nil {
		t.Fatal(err)
	}

	var records, counts map[string]int
	var largest int
	eventually(t, 120*time.Second, "every cluster's works carrying the other clusters' 9000 records", func() (bool, error) {
		var invalid error
		records, counts, largest, invalid = fleetDNSDelivered(t, ns, name)
		if invalid != nil {
			t.Fatal(invalid)
		}
		for _, c := range clusters {
			if records[c] != 9*per {
				return false, nil
			}
		}
		return true, nil
	})
	delivered := time.Since(start)
	fmt.Printf("BENCH large_fleet instances=%d clusters=%d works=%d largest_work_bytes=%d ocm_limit_bytes=%d delivered_s=%.1f writes=%v %s\n",
		10*per, len(clusters), len(allWorks(t, ns, name)), largest, 500*1024, delivered.Seconds(), h.writes.snapshot(), loadAvg())
	for _, c := range clusters {
		// Buckets of 1000 ordinals, two per fleet DNS work: the cluster's
		// own bucket is empty, so 4 or 5 fleet DNS works.
		if counts[c] < 1+4 || counts[c] > 1+5 {
			t.Errorf("cluster %s holds %d works, want its ManifestWork and 4 or 5 fleet DNS works", c, counts[c])
		}
	}
	for c, w := range works(t, ns, name) {
		var s discoveryv1.EndpointSlice
		for _, m := range w.Spec.Workload.Manifests {
			if json.Unmarshal(m.Raw, &s) == nil && s.Kind == "EndpointSlice" {
				t.Errorf("the ManifestWork of cluster %s carries EndpointSlice %s; a fleet of 10,000 carries them in fleet DNS works", c, s.Name)
			}
		}
	}

	folding := time.Now()
	for c := range clusters {
		reportFeedback(t, clusters[c], ns, name, fmt.Sprintf("s%d", c), [6]any{int64(per), int64(per), int64(per), int64(per), "r1", "r1"})
	}
	eventually(t, 60*time.Second, "feedback of 10,000 instances folded", func() (bool, error) {
		got := getFleetSet(t, ns, name)
		return got.Status.ReadyReplicas == 10*per && condition(got, fleetv1.ConditionReady).Status == metav1.ConditionTrue, nil
	})
	fmt.Printf("BENCH large_fleet feedback_folded_s=%.1f (10 works' feedback → Ready) %s\n", time.Since(folding).Seconds(), loadAvg())
	got := getFleetSet(t, ns, name)
	if c := condition(got, fleetv1.ConditionDegraded); c.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v, want False", c)
	}
	if len(got.Status.Subsets) != 10 {
		t.Errorf("status holds %d subsets, want 10", len(got.Status.Subsets))
	}

	// The agent reports a fleet DNS work not applied: ApplyFailed names it.
	dnsWork := fleetv1.FleetDNSWorkName(ns, name, 0)
	setWorkCondition(t, clusters[0], dnsWork, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed", Message: "quota exceeded"})
	eventually(t, 30*time.Second, "Degraded ApplyFailed naming the fleet DNS work", func() (bool, error) {
		c := condition(getFleetSet(t, ns, name), fleetv1.ConditionDegraded)
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonApplyFailed && strings.Contains(c.Message, "cluster "+clusters[0]) &&
			strings.Contains(c.Message, dnsWork) && strings.Contains(c.Message, "quota exceeded"), nil
	})
	setWorkCondition(t, clusters[0], dnsWork, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "applied"})
	eventually(t, 30*time.Second, "Degraded False once applied", func() (bool, error) {
		return condition(getFleetSet(t, ns, name), fleetv1.ConditionDegraded).Status == metav1.ConditionFalse, nil
	})

	// Down to 2000: the records travel in the clusters' ManifestWorks again.
	shrink := time.Now()
	updateFleetSet(t, ns, name, func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 2 * per })
	publishMembers(t, ns, name, clusters, per/5)
	eventually(t, 120*time.Second, "one work per cluster carrying the other clusters' 1800 records", func() (bool, error) {
		var invalid error
		records, counts, _, invalid = fleetDNSDelivered(t, ns, name)
		if invalid != nil {
			t.Fatal(invalid)
		}
		for _, c := range clusters {
			if records[c] != 9*per/5 || counts[c] != 1 {
				return false, nil
			}
		}
		return true, nil
	})
	fmt.Printf("BENCH large_fleet shrunk_to=%d fleet_dns_works_deleted_s=%.1f %s\n", 2*per, time.Since(shrink).Seconds(), loadAvg())
	fmt.Println("BENCH large_fleet reproduce: make bench-large-fleet")
}
