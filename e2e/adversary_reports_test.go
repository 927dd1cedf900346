//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestForgedHostnamesAreNotPublished is issue 48's fleet DNS row: a
// namespace editor of the FleetSet's namespace in the first member (no
// right on the hub) creates, in that member, bare pods claiming fleet DNS
// names: one named and hostnamed as an instance of the second member's
// subset, with the FleetSet's labels and subdomain the governing Service;
// and, behind a headless Service of her own labelled fleetset.io/set with
// the FleetSet's name, one hostnamed as that instance and one hostnamed
// <fleetset>-<first subset>-500 (in the first subset's ordinal block, no
// instance). Whatever admission lets through and the member's
// EndpointSlice controller lists, the first member's report on the hub
// lists none of them, the hub keeps delivering the first member the
// second member's real record of its instance (its pod's IP), and no
// member receives a record of the name that is no instance.
func TestForgedHostnamesAreNotPublished(t *testing.T) {
	f := theFleet
	if len(f.members) < 2 {
		t.Skip("two members needed")
	}
	ctx := t.Context()
	ns := f.newNamespace(t, "adv-dns")
	fs := f.newFleetSet(ns, "db", 4)
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 4)
	east, west := f.members[0].name, f.members[1].name
	var victim, local instance
	for _, in := range ins {
		switch in.cluster {
		case west:
			victim = in
		case east:
			local = in
		}
	}
	if victim.pod == "" || local.pod == "" {
		t.Fatalf("want an instance in %s and in %s: %s", east, west, formatInstances(ins))
	}
	var victimPod, localPod corev1.Pod
	if err := f.member(west).c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victim.pod}, &victimPod); err != nil {
		t.Fatal(err)
	}
	if err := f.member(east).c.Get(ctx, client.ObjectKey{Namespace: ns, Name: local.pod}, &localPod); err != nil {
		t.Fatal(err)
	}
	bogus := fmt.Sprintf("db-%s-500", local.subset)

	editor := f.memberEditor(t, f.member(east), ns, "adv-dns-editor")
	eventually(t, waitTimeout, "the editor's RoleBinding takes effect", func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		err := editor.List(ctx, &pods, client.InNamespace(ns))
		return err == nil, errString(err), nil
	})
	// Bare pods on the node of the local instance (kwok marks them
	// Running with an IP), with its tolerations.
	bare := func(name, hostname, subdomain string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{Hostname: hostname, Subdomain: subdomain, NodeName: localPod.Spec.NodeName, Tolerations: localPod.Spec.Tolerations,
				TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{Name: "db", Image: workloadImage}}}}
	}
	var tried []string
	claimed := map[string]bool{} // hostnames a pod let through claims
	try := func(what string, obj client.Object, hostname string) {
		err := editor.Create(ctx, obj)
		tried = append(tried, fmt.Sprintf("%s: %s", what, errString(err)))
		if err == nil && hostname != "" {
			claimed[hostname] = true
		}
	}
	try("pod "+victim.pod+" labelled as an instance, subdomain db", bare(victim.pod, victim.pod, "db",
		map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db-" + local.subset, fleetv1.LabelPodIndex: fmt.Sprint(victim.ordinal), "app": "db"}), victim.pod)
	try("Service adv labelled fleetset.io/set=db", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adv", Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: map[string]string{"adv": "dns"}}}, "")
	try("pod adv-0 hostname "+victim.pod+", subdomain adv", bare("adv-0", victim.pod, "adv", map[string]string{"adv": "dns"}), victim.pod)
	try("pod adv-1 hostname "+bogus+", subdomain adv", bare("adv-1", bogus, "adv", map[string]string{"adv": "dns"}), bogus)
	t.Logf("the editor's attempts in %s: %s", east, strings.Join(tried, "; "))

	// Wait until east's EndpointSlice controller lists every hostname a
	// created pod claims (the attack is live), then for the member's next
	// report to have been written from those slices.
	if len(claimed) > 0 {
		eventually(t, waitTimeout, fmt.Sprintf("%s's EndpointSlices list the forged hostnames", east), func(ctx context.Context) (bool, string, error) {
			var list discoveryv1.EndpointSliceList
			if err := f.member(east).c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
				fleetv1.LabelSet: "db", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}); err != nil {
				return false, "", err
			}
			listed := map[string]bool{}
			for _, s := range list.Items {
				for _, e := range s.Endpoints {
					if len(e.Addresses) > 0 {
						listed[ptr.Deref(e.Hostname, "")] = true
					}
				}
			}
			for h := range claimed {
				if !listed[h] {
					return false, "not yet: " + h, nil
				}
			}
			return true, "", nil
		})
	}
	report := func(ctx context.Context) ([]string, error) {
		var s discoveryv1.EndpointSlice
		if err := f.hub.Get(ctx, client.ObjectKey{Namespace: east, Name: fleetv1.MemberEndpointsName(ns, "db")}, &s); err != nil {
			return nil, err
		}
		var out []string
		for _, e := range s.Endpoints {
			out = append(out, ptr.Deref(e.Hostname, "")+"="+strings.Join(e.Addresses, ","))
		}
		return out, nil
	}
	delivered := func(ctx context.Context, member string) (map[string]string, error) {
		var list discoveryv1.EndpointSliceList
		if err := f.member(member).c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelManagedBy: fleetv1.FleetDNSManagedBy}); err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				out[ptr.Deref(e.Hostname, "")] = strings.Join(e.Addresses, ",")
			}
		}
		return out, nil
	}
	// Checked for 15 s (several slice events and reports after the
	// attack): every sample must hold.
	deadline := time.Now().Add(15 * time.Second)
	samples := 0
	for time.Now().Before(deadline) {
		rep, err := report(ctx)
		if err != nil {
			t.Fatalf("%s's report on the hub: %v", east, err)
		}
		for _, e := range rep {
			if strings.HasPrefix(e, victim.pod+"=") || strings.HasPrefix(e, bogus+"=") {
				t.Fatalf("%s's report lists a forged name: %v (attempts: %s)", east, rep, strings.Join(tried, "; "))
			}
		}
		toEast, err := delivered(ctx, east)
		if err != nil {
			t.Fatal(err)
		}
		if got := toEast[victim.pod]; got != victimPod.Status.PodIP {
			t.Fatalf("the hub delivers %s the record %s=%q, want %s's real %s (all: %v)", east, victim.pod, got, west, victimPod.Status.PodIP, toEast)
		}
		toWest, err := delivered(ctx, west)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := toWest[bogus]; ok {
			t.Fatalf("the hub delivers %s a record of %s=%s, which is no instance", west, bogus, got)
		}
		samples++
		time.Sleep(time.Second)
	}
	t.Logf("%d samples over 15 s: %s's report lists no forged name, %s keeps %s's record %s=%s, %s gets no %s",
		samples, east, east, west, victim.pod, victimPod.Status.PodIP, west, bogus)
}
