//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// TestSecondFleetSetCannotTakeOverFleetDNS is issue 48's fleet DNS
// takeover: a tenant with rights on the hub only creates FleetSet a
// (serviceName db, one instance in each member, ordinal blocks of 10), whose fleet DNS
// EndpointSlice db-fleet-0 in each member lists the other member's
// instance, then FleetSet b in the same namespace with the same
// serviceName, one instance in each member and one in the spare member
// (north), where a has no Service: there db is b's, its instance is
// published, and the hub delivers b's record to the members as b's own
// db-fleet-0. The member admission policy fleetset-never-adopt refuses
// that write over a's slice. Asserted, sampled every 500 ms from b's
// creation until 15 s after b reports the refusal:
//   - in every member, db-fleet-0 keeps a's labels fleetset.io/owner-uid
//     (a's identity) and fleetset.io/set=a and lists exactly a's instances
//     of the other members (hostname and address), and each member's
//     CoreDNS answers their names with their addresses (local fleet);
//   - b is Degraded, ApplyFailed, naming for every member the refused
//     EndpointSlice <ns>/db-fleet-0, fleetset-never-adopt's message and a's
//     identity.
func TestSecondFleetSetCannotTakeOverFleetDNS(t *testing.T) {
	f := theFleet
	if len(f.spare) == 0 {
		t.Skip("FLEETSET_E2E_SPARE_MEMBERS is not set: the second FleetSet needs a member where the governing Service is its own")
	}
	var servers map[string]string
	if _, ok := f.provider.(*framework.Local); ok {
		servers = f.dnsServers(t)
	}
	ns := f.newNamespace(t, "adv-slices")
	tc, user := f.hubTenant(t, ns)
	const svc = "db"
	slice := fleetv1.FleetDNSSliceName(svc, 0)
	fleetSet := func(name string, clusters ...string) *fleetv1.FleetSet {
		fs := f.newFleetSet(ns, name, int32(len(clusters)))
		fs.Spec.ServiceName = svc
		// Blocks of 10 ordinals: every instance of a and b is in fleet
		// DNS bucket 0, so both deliver their records as db-fleet-0.
		fs.Spec.Topology.OrdinalBlockSize = 10
		fs.Spec.Topology.Subsets = nil
		for _, c := range clusters {
			s := fleetv1.Subset{Name: c, Cluster: c, Replicas: ptr.To(intstr.FromInt32(1))}
			for _, z := range f.zones {
				s.Domains = append(s.Domains, fleetv1.DomainShare{Name: z})
			}
			fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, s)
		}
		return fs
	}
	create := func(fs *fleetv1.FleetSet) {
		if err := tc.Create(t.Context(), fs); err != nil {
			t.Fatalf("%s creating FleetSet %s/%s: %v", user, ns, fs.Name, err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				f.dump(t, ns, fs.Name)
			}
		})
	}
	var members []string
	for _, m := range f.members {
		members = append(members, m.name)
	}

	create(fleetSet("a", members...))
	f.waitReady(t, ns, "a", len(members))
	a, err := f.getFleetSet(t.Context(), ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	id := a.Identity()
	// intact reports whether db-fleet-0 in every member is a's and lists
	// exactly a's instances of the other members, and every member's DNS
	// answers them.
	intact := func(ctx context.Context) (bool, string, error) {
		ips, where, err := f.podIPs(ctx, ns, "a")
		if err != nil {
			return false, "", err
		}
		for _, m := range f.members {
			want := map[string]string{}
			for pod, c := range where {
				if c != m.name {
					want[pod] = ips[pod]
				}
			}
			if len(want) == 0 {
				return false, "no instance of a outside " + m.name + " yet", nil
			}
			es := &discoveryv1.EndpointSlice{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: slice}, es); err != nil {
				if apierrors.IsNotFound(err) {
					return false, m.name + ": no EndpointSlice " + slice, nil
				}
				return false, "", err
			}
			if es.Labels[fleetv1.LabelOwnerUID] != id || es.Labels[fleetv1.LabelSet] != "a" {
				return false, fmt.Sprintf("%s: EndpointSlice %s has %s=%q %s=%q, want a's (%s, a)", m.name, slice,
					fleetv1.LabelOwnerUID, es.Labels[fleetv1.LabelOwnerUID], fleetv1.LabelSet, es.Labels[fleetv1.LabelSet], id), nil
			}
			got := map[string]string{}
			for _, ep := range es.Endpoints {
				got[ptr.Deref(ep.Hostname, "")] = strings.Join(ep.Addresses, ",")
			}
			if !maps.Equal(got, want) {
				return false, fmt.Sprintf("%s: EndpointSlice %s lists %v, want a's instances elsewhere %v", m.name, slice, got, want), nil
			}
			if servers == nil {
				continue
			}
			for _, pod := range slices.Sorted(maps.Keys(want)) {
				name := pod + "." + svc + "." + ns + ".svc.cluster.local."
				ans, err := lookup(ctx, servers[m.name], name)
				if err != nil {
					return false, fmt.Sprintf("%s: resolving %s: %v", m.name, name, err), nil
				}
				if len(ans) != 1 || ans[0] != want[pod] {
					return false, fmt.Sprintf("%s answers %v for %s, at %s in %s", m.name, ans, name, want[pod], where[pod]), nil
				}
			}
		}
		return true, "", nil
	}
	eventually(t, 2*time.Minute, "a's fleet DNS slice "+slice+" in every member, resolved", intact)

	create(fleetSet("b", append(slices.Clone(members), f.spare[0].name)...))
	// refused reports whether b's Degraded condition names, for every
	// member, fleetset-never-adopt's refusal of EndpointSlice ns/db-fleet-0.
	refused := func(ctx context.Context) (bool, string, error) {
		c, detail, err := f.degraded(ctx, ns, "b")
		if err != nil || c == nil || c.Status != metav1.ConditionTrue || c.Reason != fleetv1.ReasonApplyFailed {
			return false, detail, err
		}
		for _, m := range members {
			if !strings.Contains(c.Message, "subset "+m+" on cluster "+m+": member cluster "+m+" refused") {
				return false, detail, nil
			}
		}
		want := "EndpointSlice " + ns + "/" + slice + ": "
		if n := strings.Count(c.Message, want); n < len(members) {
			return false, detail, nil
		}
		for _, w := range []string{"fleetset-never-adopt", "EndpointSlice " + ns + "/" + slice + " exists and is not this FleetSet's (label fleetset.io/owner-uid " + id} {
			if !strings.Contains(c.Message, w) {
				return false, detail, nil
			}
		}
		return true, detail, nil
	}
	start := time.Now()
	var reported time.Time
	var broken []string
	samples := 0
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		ok, detail, err := intact(ctx)
		if err == nil && !ok {
			broken = append(broken, fmt.Sprintf("%s after b: %s", time.Since(start).Round(100*time.Millisecond), detail))
		}
		samples++
		if reported.IsZero() {
			if ok, detail, err := refused(ctx); err == nil && ok {
				reported = time.Now()
				t.Logf("b reported %s after its creation: %s", reported.Sub(start).Round(100*time.Millisecond), detail)
			}
		}
		cancel()
		switch {
		case !reported.IsZero() && time.Since(reported) >= 15*time.Second:
		case reported.IsZero() && time.Since(start) >= 3*time.Minute:
			_, detail, err := f.degraded(t.Context(), ns, "b")
			t.Errorf("b never reported fleetset-never-adopt refusing EndpointSlice %s/%s in every member: %s %v", ns, slice, detail, err)
		case len(broken) > 0 && time.Since(start) >= 30*time.Second:
		default:
			time.Sleep(500 * time.Millisecond)
			continue
		}
		break
	}
	for i, b := range broken {
		if i == 5 {
			t.Errorf("... %d more", len(broken)-i)
			break
		}
		t.Errorf("a's fleet DNS taken over: %s", b)
	}
	t.Logf("%d samples of a's fleet DNS over %s, %d broken", samples, time.Since(start).Round(100*time.Millisecond), len(broken))
}
