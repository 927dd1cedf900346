//go:build integration

package controller

import (
	"testing"
	"time"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestHostNetworkWithHTTPCallsIsRefused (issue 48): a FleetSet whose
// template sets hostNetwork (allowed by the platform: a privileged
// namespace) and whose memberJoin is an HTTP action is refused on the hub,
// Degraded InvalidSpec naming the action's field and hostNetwork, with an
// event, and nothing is delivered: the member would send the request to the
// node's address. The same FleetSet with an exec action is delivered.
func TestHostNetworkWithHTTPCallsIsRefused(t *testing.T) {
	createCluster(t, "hn-east", true)
	createCluster(t, "hn-west", true)
	createNamespace(t, "hn-tenant")
	labelNamespace(t, "hn-tenant", labelPodSecurityLevel, "privileged")
	startHub(t, time.Minute)

	fs := sampleFleetSet("hn-tenant", "hostnet")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "hn-east", "hn-west"
	fs.Spec.PodSecurityLevel = fleetv1.PodSecurityPrivileged
	fs.Spec.Template.Spec.HostNetwork = true
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{MemberJoin: &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: 8080, Path: "/join"}}}
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	degradedWith(t, "hn-tenant", "hostnet", fleetv1.ReasonInvalidSpec, "sets hostNetwork", "spec.lifecycleActions.memberJoin.httpGet")
	if ws := works(t, "hn-tenant", "hostnet"); len(ws) != 0 {
		t.Fatalf("a FleetSet with hostNetwork and an HTTP action was delivered to %v", keys(ws))
	}
	if !hasEvent(t, "hn-tenant", "hostnet", fleetv1.ReasonInvalidSpec) {
		t.Errorf("no %s event", fleetv1.ReasonInvalidSpec)
	}

	updateFleetSet(t, "hn-tenant", "hostnet", func(fs *fleetv1.FleetSet) {
		fs.Spec.LifecycleActions.MemberJoin = &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"/join.sh"}}}
	})
	eventually(t, 20*time.Second, "works in both clusters once the action is exec", func() (bool, error) {
		return len(works(t, "hn-tenant", "hostnet")) == 2, nil
	})
}
