package manifestwork

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/envelope"
)

// budgetFleetSet is a FleetSet of replicas instances over subsets named
// by shares (nil: an even share), with the given disruption budget (nil:
// none).
func budgetFleetSet(replicas int32, budget *intstr.IntOrString, shares map[string]*intstr.IntOrString, order ...string) *fleetv1.FleetSet {
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "mydb", UID: types.UID("uid-1")},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Topology: fleetv1.FleetTopology{OrdinalBlockSize: 1000},
		},
	}
	fs.Spec.Template.Labels = map[string]string{"app": "mydb"}
	for _, n := range order {
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{Name: n, Cluster: "c-" + n, Replicas: shares[n]})
	}
	if budget != nil {
		fs.Spec.DisruptionBudget = &fleetv1.DisruptionBudget{MaxUnavailable: *budget}
	}
	return fs
}

// plannedSubsets is the hub's plan of fs (every subset, spec order), to render.
func plannedSubsets(t *testing.T, fs *fleetv1.FleetSet) []Subset {
	t.Helper()
	subsets, _, err := plan.For(fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fromPlan(subsets)
}

// fromPlan is FromPlan of each of ps.
func fromPlan(ps []plan.Subset) []Subset {
	out := make([]Subset, len(ps))
	for i, p := range ps {
		out[i] = FromPlan(p)
	}
	return out
}

// maxUnavailableOf returns each PDB's maxUnavailable by subset, and their sum.
func maxUnavailableOf(t *testing.T, pdbs []*policyv1.PodDisruptionBudget) (map[string]int32, int32) {
	t.Helper()
	out := map[string]int32{}
	var sum int32
	for _, p := range pdbs {
		mu := p.Spec.MaxUnavailable
		if mu == nil || mu.Type != intstr.Int {
			t.Fatalf("%s: maxUnavailable %v, want an int", p.Name, mu)
		}
		out[p.Labels[fleetv1.LabelSubset]] = mu.IntVal
		sum += mu.IntVal
	}
	return out, sum
}

func TestPodDisruptionBudgets(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	cases := []struct {
		name     string
		replicas int32
		budget   *intstr.IntOrString
		shares   map[string]*intstr.IntOrString
		order    []string
		wantSum  int32
		want     map[string]int32 // nil: only the sum is checked
	}{
		{name: "1 over 3 subsets of 3", replicas: 9, budget: num(1), order: []string{"a", "b", "c"}, wantSum: 1},
		{name: "20% of 10 over 60%/40%", replicas: 10, budget: pct("20%"),
			shares: map[string]*intstr.IntOrString{"east": pct("60%"), "west": pct("40%")}, order: []string{"east", "west"},
			wantSum: 2, want: map[string]int32{"east": 1, "west": 1}},
		{name: "40% of 10 over 60%/40%: the seat sequence's first 4 seats", replicas: 10, budget: pct("40%"),
			shares: map[string]*intstr.IntOrString{"east": pct("60%"), "west": pct("40%")}, order: []string{"east", "west"},
			wantSum: 4, want: map[string]int32{"east": 2, "west": 2}},
		{name: "0: every part 0", replicas: 9, budget: num(0), order: []string{"a", "b", "c"},
			wantSum: 0, want: map[string]int32{"a": 0, "b": 0, "c": 0}},
		{name: "0%: every part 0", replicas: 9, budget: pct("0%"), order: []string{"a", "b", "c"},
			wantSum: 0, want: map[string]int32{"a": 0, "b": 0, "c": 0}},
		{name: "percent rounded down: 15% of 9 is 1", replicas: 9, budget: pct("15%"), order: []string{"a", "b", "c"}, wantSum: 1},
		{name: "percent rounded down: 99% of 9 is 8", replicas: 9, budget: pct("99%"), order: []string{"a", "b", "c"}, wantSum: 8},
		{name: "100% of 9: each subset its replicas", replicas: 9, budget: pct("100%"), order: []string{"a", "b", "c"},
			wantSum: 9, want: map[string]int32{"a": 3, "b": 3, "c": 3}},
		{name: "an int above replicas is replicas", replicas: 9, budget: num(50), order: []string{"a", "b", "c"},
			wantSum: 9, want: map[string]int32{"a": 3, "b": 3, "c": 3}},
		{name: "a subset with 0 replicas gets 0", replicas: 2, budget: pct("100%"), order: []string{"a", "b", "c"},
			wantSum: 2, want: map[string]int32{"a": 1, "b": 1, "c": 0}},
		{name: "ints: in proportion to replicas", replicas: 10, budget: num(5),
			shares: map[string]*intstr.IntOrString{"big": num(8), "small": num(2)}, order: []string{"big", "small"},
			wantSum: 5, want: map[string]int32{"big": 4, "small": 1}},
		{name: "no replicas", replicas: 0, budget: num(1), order: []string{"a", "b"},
			wantSum: 0, want: map[string]int32{"a": 0, "b": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := budgetFleetSet(tc.replicas, tc.budget, tc.shares, tc.order...)
			subsets := plannedSubsets(t, fs)
			pdbs, err := PodDisruptionBudgets(fs, subsets)
			if err != nil {
				t.Fatal(err)
			}
			if len(pdbs) != len(subsets) {
				t.Fatalf("%d PodDisruptionBudgets, want one per subset (%d)", len(pdbs), len(subsets))
			}
			got, sum := maxUnavailableOf(t, pdbs)
			if sum != tc.wantSum {
				t.Errorf("parts %v sum to %d, want %d", got, sum, tc.wantSum)
			}
			if tc.want != nil {
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("parts (-want +got):\n%s", d)
				}
			}
			for i, sp := range subsets {
				p := pdbs[i]
				if got[sp.Name] > sp.Replicas {
					t.Errorf("subset %s: part %d above its %d replicas", sp.Name, got[sp.Name], sp.Replicas)
				}
				wantMeta := metav1.ObjectMeta{Name: "mydb-" + sp.Name, Namespace: "db", Labels: map[string]string{
					fleetv1.LabelSet: "mydb", fleetv1.LabelSubset: sp.Name, fleetv1.LabelOwnerUID: "uid-1"}}
				if d := cmp.Diff(wantMeta, p.ObjectMeta); d != "" {
					t.Errorf("subset %s: metadata (-want +got):\n%s", sp.Name, d)
				}
				if p.APIVersion != "policy/v1" || p.Kind != "PodDisruptionBudget" {
					t.Errorf("subset %s: %s %s, want policy/v1 PodDisruptionBudget", sp.Name, p.APIVersion, p.Kind)
				}
				if p.Spec.MinAvailable != nil {
					t.Errorf("subset %s: minAvailable %v, want none", sp.Name, p.Spec.MinAvailable)
				}
				if pol := p.Spec.UnhealthyPodEvictionPolicy; pol == nil || *pol != policyv1.AlwaysAllow {
					t.Errorf("subset %s: unhealthyPodEvictionPolicy %v, want AlwaysAllow", sp.Name, pol)
				}
			}
		})
	}
}

func TestPodDisruptionBudgetsUnset(t *testing.T) {
	fs := budgetFleetSet(9, nil, nil, "a", "b", "c")
	pdbs, err := PodDisruptionBudgets(fs, plannedSubsets(t, fs))
	if err != nil || pdbs != nil {
		t.Fatalf("PodDisruptionBudgets = %v, %v; want none", pdbs, err)
	}
}

// The division is over all of the FleetSet's subsets, whichever are
// passed (one cluster's, or only the delivered ones): each subset gets the
// part it gets with all of them, and the passed parts never sum over the
// budget.
func TestPodDisruptionBudgetsDivideOverTheFleet(t *testing.T) {
	fs := budgetFleetSet(9, ptr.To(intstr.FromInt32(1)), nil, "a", "b", "c")
	subsets := plannedSubsets(t, fs)
	all, err := PodDisruptionBudgets(fs, subsets)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := maxUnavailableOf(t, all)
	var sum int32
	for _, sp := range subsets {
		one, err := PodDisruptionBudgets(fs, []Subset{sp})
		if err != nil {
			t.Fatal(err)
		}
		got, s := maxUnavailableOf(t, one)
		if len(one) != 1 || got[sp.Name] != want[sp.Name] {
			t.Errorf("subset %s alone: parts %v, want %d as with all", sp.Name, got, want[sp.Name])
		}
		sum += s
	}
	if sum != 1 {
		t.Errorf("parts rendered one subset at a time sum to %d, want 1", sum)
	}
}

// A delivered subset with fewer replicas than its part (cut to its ordinal
// block) is cut to its replicas: never more than it has.
func TestPodDisruptionBudgetsCutToDeliveredReplicas(t *testing.T) {
	fs := budgetFleetSet(9, ptr.To(intstr.FromString("100%")), nil, "a", "b", "c")
	subsets := plannedSubsets(t, fs)
	subsets[0].Replicas = 1
	pdbs, err := PodDisruptionBudgets(fs, subsets)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := maxUnavailableOf(t, pdbs); got["a"] != 1 {
		t.Errorf("subset a of 1 replica: part %d, want 1", got["a"])
	}
}

// Over every size and budget, the parts sum to the budget (never more) and
// no part exceeds its subset's replicas.
func TestPodDisruptionBudgetsNeverExceed(t *testing.T) {
	shares := map[string]*intstr.IntOrString{
		"a": ptr.To(intstr.FromString("50%")), "b": ptr.To(intstr.FromInt32(3)), "c": nil, "d": ptr.To(intstr.FromString("17%"))}
	for replicas := int32(0); replicas <= 40; replicas++ {
		for _, budget := range []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(7),
			intstr.FromString("10%"), intstr.FromString("33%"), intstr.FromString("100%")} {
			fs := budgetFleetSet(replicas, &budget, shares, "a", "b", "c", "d")
			subsets := plannedSubsets(t, fs)
			pdbs, err := PodDisruptionBudgets(fs, subsets)
			if err != nil {
				t.Fatal(err)
			}
			got, sum := maxUnavailableOf(t, pdbs)
			want, _ := intstr.GetScaledValueFromIntOrPercent(&budget, int(replicas), false)
			want = min(want, int(replicas))
			if int(sum) != want {
				t.Errorf("replicas %d, budget %s: parts %v sum to %d, want %d", replicas, budget.String(), got, sum, want)
			}
			for _, sp := range subsets {
				if got[sp.Name] > sp.Replicas {
					t.Errorf("replicas %d, budget %s: subset %s part %d above its %d replicas", replicas, budget.String(), sp.Name, got[sp.Name], sp.Replicas)
				}
			}
		}
	}
}

func TestPodDisruptionBudgetsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*fleetv1.FleetSet)
	}{
		{"no selector", func(fs *fleetv1.FleetSet) { fs.Spec.Selector = nil }},
		{"negative", func(fs *fleetv1.FleetSet) { fs.Spec.DisruptionBudget.MaxUnavailable = intstr.FromInt32(-1) }},
		{"malformed percent", func(fs *fleetv1.FleetSet) { fs.Spec.DisruptionBudget.MaxUnavailable = intstr.FromString("x%") }},
		{"no percent sign", func(fs *fleetv1.FleetSet) { fs.Spec.DisruptionBudget.MaxUnavailable = intstr.FromString("3") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := budgetFleetSet(9, ptr.To(intstr.FromInt32(1)), nil, "a", "b", "c")
			subsets := plannedSubsets(t, fs)
			tc.edit(fs)
			if pdbs, err := PodDisruptionBudgets(fs, subsets); err == nil {
				t.Errorf("PodDisruptionBudgets = %v, want an error", pdbs)
			}
		})
	}
}

// Each subset's budget selects exactly its StatefulSet's pods: its selector
// is the StatefulSet's, it matches the StatefulSet's pod template, and it
// matches no other subset's pods, not even in the same cluster.
func TestPodDisruptionBudgetSelectsItsSubset(t *testing.T) {
	fs := budgetFleetSet(9, ptr.To(intstr.FromInt32(1)), nil, "a", "b", "c")
	fs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"db"}}}
	fs.Spec.Template.Labels["tier"] = "db"
	subsets := plannedSubsets(t, fs)
	for i := range subsets {
		subsets[i].Cluster = "same"
	}
	pdbs, err := PodDisruptionBudgets(fs, subsets)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		for j, sp := range subsets {
			sts, err := StatefulSet(fs, sp)
			if err != nil {
				t.Fatal(err)
			}
			if i == j {
				if d := cmp.Diff(sts.Spec.Selector, p.Spec.Selector); d != "" {
					t.Errorf("%s: selector differs from its StatefulSet's (-sts +pdb):\n%s", p.Name, d)
				}
			}
			if got := sel.Matches(k8slabels.Set(sts.Spec.Template.Labels)); got != (i == j) {
				t.Errorf("%s selects the pods of StatefulSet %s: %v, want %v", p.Name, sts.Name, got, i == j)
			}
		}
	}
	// The FleetSet's selector is copied, not shared.
	if _, ok := fs.Spec.Selector.MatchLabels[fleetv1.LabelSubset]; ok {
		t.Errorf("spec.selector changed: %v", fs.Spec.Selector.MatchLabels)
	}
}

// A rendered budget encodes as a manifest (no status, no null
// creationTimestamp), and its config is server-side apply like every
// delivered object.
func TestPodDisruptionBudgetManifestAndConfig(t *testing.T) {
	fs := budgetFleetSet(9, ptr.To(intstr.FromInt32(1)), nil, "a", "b", "c")
	pdbs, err := PodDisruptionBudgets(fs, plannedSubsets(t, fs)[:1])
	if err != nil {
		t.Fatal(err)
	}
	ms, err := envelope.Encode([]runtime.Object{pdbs[0]})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(ms[0].Raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["status"]; ok {
		t.Errorf("manifest has a status: %s", ms[0].Raw)
	}
	if m["apiVersion"] != "policy/v1" || m["kind"] != "PodDisruptionBudget" {
		t.Errorf("manifest is %v %v, want policy/v1 PodDisruptionBudget", m["apiVersion"], m["kind"])
	}
	spec := fmt.Sprint(m["spec"])
	for _, want := range []string{"maxUnavailable:1", "unhealthyPodEvictionPolicy:AlwaysAllow"} {
		if !strings.Contains(spec, want) {
			t.Errorf("manifest spec %s: missing %s", spec, want)
		}
	}
	want := workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "policy", Resource: "poddisruptionbudgets", Namespace: "db", Name: "mydb-a"},
		UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager}},
	}
	if d := cmp.Diff(want, pdbConfig("db", "mydb-a")); d != "" {
		t.Errorf("pdbConfig (-want +got):\n%s", d)
	}
}
