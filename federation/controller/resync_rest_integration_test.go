//go:build integration

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestResyncRenewalsAtRest counts the resync lease renewals of 100
// clusters at rest: at most one per cluster per third of the lease
// duration (issue 37 measured 3.3 times as many at 100 clusters).
func TestResyncRenewalsAtRest(t *testing.T) {
	const ns, nC, perFS = "rest", 100, 25
	const duration = 6 * time.Second // renewed every 2 s
	createNamespace(t, ns)
	var clusters []string
	for c := range nC {
		clusters = append(clusters, fmt.Sprintf("rest-%03d", c))
		createCluster(t, clusters[c], true)
	}
	h := startHub(t, duration)
	// Leave the shared apiserver as found: later tests' hubs need not renew
	// 100 leases more.
	t.Cleanup(func() {
		for f := range nC / perFS {
			_ = k8sClient.Delete(context.Background(), &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%d", f)}})
		}
		for _, c := range clusters {
			deleteCluster(t, c)
		}
	})
	for f := range nC / perFS {
		fs := sampleFleetSet(ns, fmt.Sprintf("r%d", f))
		rolling(fs)
		fs.Spec.Replicas = perFS
		fs.Spec.Topology.Subsets = nil
		for s := range perFS {
			fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{Name: fmt.Sprintf("s%d", s), Cluster: clusters[f*perFS+s],
				Replicas: ptr.To(intstr.FromInt32(1)), Domains: []fleetv1.DomainShare{{Name: "zone-a"}}})
		}
		if err := k8sClient.Create(context.Background(), fs); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "a resync lease in every cluster", func() (bool, error) {
		var l workv1.ManifestWorkList
		if err := k8sClient.List(context.Background(), &l, client.MatchingLabels{fleetv1.LabelResync: "true"}); err != nil {
			return false, err
		}
		n := 0
		for _, w := range l.Items {
			if strings.HasPrefix(w.Namespace, "rest-") {
				n++
			}
		}
		return n == nC, nil
	})
	// Renewals of these clusters only (other tests' FleetSets may hold
	// leases in theirs), from the hub's counter of successful writes.
	renewals := func() int {
		sum := 0.0
		for _, c := range clusters {
			sum += testutil.ToFloat64(leaseRenewals.WithLabelValues(c))
		}
		return int(sum)
	}
	time.Sleep(3 * time.Second) // the FleetSets settle
	const window = 8 * time.Second
	before, requestsBefore := renewals(), h.writes.snapshot()["lease"]
	time.Sleep(window)
	got, requests := renewals()-before, h.writes.snapshot()["lease"]-requestsBefore
	want := nC * int(window/(duration/3))
	fmt.Printf("BENCH resync clusters=%d lease_seconds=%.0f window_s=%.0f renewals=%d expected=%d lease_requests_of_the_hub=%d %s\n", nC, duration.Seconds(), window.Seconds(), got, want, requests, loadAvg())
	// A window cuts at most one renewal per cluster at either end.
	if got > want+nC {
		t.Errorf("%d renewals of %d clusters in %s with a %s lease, want at most %d (one per cluster per %s)", got, nC, window, duration, want+nC, duration/3)
	}
	// No lower bound: on a loaded machine renewals run late (fewer in the
	// window); TestResyncLease shows that they happen.
}
