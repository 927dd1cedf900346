//go:build integration

package plugins_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// samplePlacement is a valid SubsetPlacement over zone-a, zone-b and zone-c
// whose shares are a percent, an int and unset.
func samplePlacement(ns, name string) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.SubsetPlacementSpec{Domains: []fleetv1.DomainShare{
			{Name: "zone-a", Replicas: ptr.To(intstr.FromString("50%"))},
			{Name: "zone-b", Replicas: ptr.To(intstr.FromInt32(2))},
			{Name: "zone-c"},
		}},
	}
}

// manyDomains returns n domains d-00, d-01, ..., each with share(i).
func manyDomains(n int, share func(i int) *intstr.IntOrString) []fleetv1.DomainShare {
	ds := make([]fleetv1.DomainShare, n)
	for i := range ds {
		ds[i] = fleetv1.DomainShare{Name: fmt.Sprintf("d-%02d", i), Replicas: share(i)}
	}
	return ds
}

// TestSubsetPlacementAdmission checks, on a real kube-apiserver with the
// shipped CRD, that the SubsetPlacement schema refuses each bad spec with a
// message naming the field, and accepts the valid shapes: percent, int and
// unset shares, no domains at all, domains not in name order, and 64 domains
// (which also keeps the CEL rules' cost at the list's bound in check).
func TestSubsetPlacementAdmission(t *testing.T) {
	ctx := context.Background()
	nsObj, err := cs.CoreV1().Namespaces().Create(ctx,
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "admission-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	const shareMsg = "replicas must be a non-negative integer or a percent between 0% and 100%"
	const sumMsg = "domains: explicit percents must not sum over 100%"
	cases := []struct {
		name   string
		mutate func(sp *fleetv1.SubsetPlacement)
		// field must appear in the apiserver's message, and so must msg.
		field, msg string
	}{
		{"negative int replicas", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[1].Replicas = num(-1) },
			"spec.domains[1].replicas", shareMsg},
		{"percent over 100%", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("150%") },
			"spec.domains[0].replicas", shareMsg},
		{"percent 101%", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("101%") },
			"spec.domains[0].replicas", shareMsg},
		{"percent sign first", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("%50") },
			"spec.domains[0].replicas", shareMsg},
		{"number as a string without %", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("50") },
			"spec.domains[0].replicas", shareMsg},
		{"letters before %", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[2].Replicas = pct("abc%") },
			"spec.domains[2].replicas", shareMsg},
		{"negative percent", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("-5%") },
			"spec.domains[0].replicas", shareMsg},
		{"fractional percent", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("33.3%") },
			"spec.domains[0].replicas", shareMsg},
		{"empty string share", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Replicas = pct("") },
			"spec.domains[0].replicas", shareMsg},
		// The sum rule sits on spec, so the apiserver reports it at spec; its
		// message names domains.
		{"percents sum over 100%", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[2].Replicas = pct("51%") },
			"spec: Invalid value", sumMsg},
		{"three percents sum over 100%", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Replicas, sp.Spec.Domains[1].Replicas, sp.Spec.Domains[2].Replicas = pct("40%"), pct("40%"), pct("21%")
		}, "spec: Invalid value", sumMsg},
		{"duplicate domain names", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[2].Name = "zone-a" },
			"spec.domains[2]", "Duplicate value"},
		{"domain name not a label value", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Name = "zone a" },
			"spec.domains[0].name", "name must be a valid label value"},
		{"domain name ending in '-'", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[1].Name = "zone-" },
			"spec.domains[1].name", "name must be a valid label value"},
		{"domain name over 63 characters", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Name = strings.Repeat("z", 64) },
			"spec.domains[0].name", "Too long"},
		{"empty domain name", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains[0].Name = "" },
			"spec.domains[0].name", "at least 1 chars long"},
		{"topologyKey with a space", func(sp *fleetv1.SubsetPlacement) { sp.Spec.TopologyKey = "zone key" },
			"spec.topologyKey", "topologyKey must be a qualified label key"},
		{"topologyKey with an upper-case prefix", func(sp *fleetv1.SubsetPlacement) { sp.Spec.TopologyKey = "Example.com/zone" },
			"spec.topologyKey", "topologyKey must be a qualified label key"},
		{"topologyKey with an empty prefix", func(sp *fleetv1.SubsetPlacement) { sp.Spec.TopologyKey = "/zone" },
			"spec.topologyKey", "topologyKey must be a qualified label key"},
		{"topologyKey name over 63 characters", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.TopologyKey = "example.com/" + strings.Repeat("k", 64)
		}, "spec.topologyKey", "topologyKey must be a qualified label key"},
		{"topologyKey prefix over 253 characters", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.TopologyKey = strings.Repeat("p", 254) + "/zone"
		}, "spec.topologyKey", "its prefix must be at most 253 characters"},
		{"negative ordinalStart", func(sp *fleetv1.SubsetPlacement) { sp.Spec.OrdinalStart = -1 },
			"spec.ordinalStart", "greater than or equal to 0"},
		{"unknown whenUnsatisfiable", func(sp *fleetv1.SubsetPlacement) { sp.Spec.WhenUnsatisfiable = "Sometimes" },
			"spec.whenUnsatisfiable", "Unsupported value"},
		{"65 domains", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains = manyDomains(65, func(int) *intstr.IntOrString { return nil })
		}, "spec.domains", "must have at most 64 items"},
	}
	if len(cases) < 10 {
		t.Fatalf("only %d bad specs", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := samplePlacement(ns, fmt.Sprintf("bad-%02d", i))
			tc.mutate(sp)
			err := cl.Create(ctx, sp)
			if err == nil {
				_ = cl.Delete(ctx, sp)
				t.Fatalf("Create() accepted a SubsetPlacement with %s", tc.name)
			}
			for _, want := range []string{tc.field, tc.msg} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Create() error = %q, want it to contain %q", err, want)
				}
			}
		})
	}

	// The valid shapes are accepted and stored as written: shares keep their
	// type, domains keep their order.
	valid := []struct {
		name   string
		mutate func(sp *fleetv1.SubsetPlacement)
	}{
		{"percent, int and unset shares", func(sp *fleetv1.SubsetPlacement) {}},
		{"percents summing to 100%", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Replicas, sp.Spec.Domains[1].Replicas, sp.Spec.Domains[2].Replicas = pct("60%"), pct("40%"), pct("0%")
		}},
		{"100% and unset", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Replicas, sp.Spec.Domains[1].Replicas = pct("100%"), nil
		}},
		{"ints only, with 0", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Replicas, sp.Spec.Domains[1].Replicas, sp.Spec.Domains[2].Replicas = num(3), num(0), num(250)
		}},
		{"ints do not count toward the percent sum", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Replicas, sp.Spec.Domains[1].Replicas, sp.Spec.Domains[2].Replicas = pct("100%"), num(200), pct("0%")
		}},
		{"unset shares", func(sp *fleetv1.SubsetPlacement) {
			for i := range sp.Spec.Domains {
				sp.Spec.Domains[i].Replicas = nil
			}
		}},
		{"no domains", func(sp *fleetv1.SubsetPlacement) { sp.Spec.Domains = nil }},
		{"domains not in name order", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains = []fleetv1.DomainShare{{Name: "zone-c", Replicas: num(2)}, {Name: "zone-a", Replicas: pct("70%")}, {Name: "zone-b"}}
		}},
		{"label-value domain names, custom key, ScheduleAnyway, ordinalStart", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains[0].Name, sp.Spec.Domains[1].Name = "Rack_1.a", strings.Repeat("r", 63)
			sp.Spec.TopologyKey = "example.com/rack"
			sp.Spec.WhenUnsatisfiable = fleetv1.ScheduleAnyway
			sp.Spec.OrdinalStart = 1000
		}},
		{"topologyKey with a 253-character prefix", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.TopologyKey = strings.Repeat("p", 253) + "/zone"
		}},
		{"64 domains with percents", func(sp *fleetv1.SubsetPlacement) {
			sp.Spec.Domains = manyDomains(64, func(i int) *intstr.IntOrString {
				if i%2 == 0 {
					return pct("3%") // 32 × 3% = 96%
				}
				return num(int32(i))
			})
		}},
	}
	for i, tc := range valid {
		t.Run("valid/"+tc.name, func(t *testing.T) {
			sp := samplePlacement(ns, fmt.Sprintf("good-%02d", i))
			tc.mutate(sp)
			want := append([]fleetv1.DomainShare(nil), sp.Spec.Domains...)
			if err := cl.Create(ctx, sp); err != nil {
				t.Fatalf("Create() refused a valid SubsetPlacement: %v", err)
			}
			got := &fleetv1.SubsetPlacement{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(sp), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Spec.Domains); diff != "" {
				t.Errorf("stored domains (-written,+stored):\n%s", diff)
			}
		})
	}

	// Unset topologyKey and whenUnsatisfiable are defaulted.
	got := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"}}
	if err := cl.Create(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.TopologyKey != v1.LabelTopologyZone || got.Spec.WhenUnsatisfiable != fleetv1.DoNotSchedule {
		t.Errorf("defaults: topologyKey %q, whenUnsatisfiable %q; want %q, %q", got.Spec.TopologyKey, got.Spec.WhenUnsatisfiable, v1.LabelTopologyZone, fleetv1.DoNotSchedule)
	}

	// The rules hold on update too.
	upd := got.DeepCopy()
	upd.Spec.Domains = []fleetv1.DomainShare{{Name: "zone-a", Replicas: pct("80%")}, {Name: "zone-b", Replicas: pct("30%")}}
	if err := cl.Update(ctx, upd); err == nil || !strings.Contains(err.Error(), sumMsg) {
		t.Errorf("Update() to percents summing to 110%%: error = %v, want one containing %q", err, sumMsg)
	}
}
