package controller

import (
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// appliedTenantWorks returns the tenant works of namespace ns in clusters,
// reported Applied at their generation by the work agent, for a fake
// client: without them the FleetSet reconciler writes no work there
// (holdForTenants).
func appliedTenantWorks(t testing.TB, ns string, clusters ...string) []client.Object {
	t.Helper()
	var out []client.Object
	for _, c := range clusters {
		w, err := manifestwork.TenantWork(c, ns, fleetv1.PodSecurityBaseline)
		if err != nil {
			t.Fatal(err)
		}
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "test", ObservedGeneration: w.Generation})
		out = append(out, w)
	}
	return out
}

// TestTenantLevel: a namespace's tenant work is labelled with the least
// restrictive level of its FleetSet works; unknown or missing levels count
// as the default.
func TestTenantLevel(t *testing.T) {
	for _, c := range []struct {
		levels []string
		want   fleetv1.PodSecurityLevel
	}{
		{nil, fleetv1.PodSecurityBaseline},
		{[]string{"restricted"}, fleetv1.PodSecurityRestricted},
		{[]string{"restricted", "privileged", "baseline"}, fleetv1.PodSecurityPrivileged},
		{[]string{"restricted", ""}, fleetv1.PodSecurityBaseline},
		{[]string{"restricted", "bogus"}, fleetv1.PodSecurityBaseline},
	} {
		if got := manifestwork.TenantLevel(c.levels); got != c.want {
			t.Errorf("TenantLevel(%q) = %q, want %q", c.levels, got, c.want)
		}
	}
}
