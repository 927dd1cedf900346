//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	fleetsetcmd "github.com/fleetset/fleetset/cmd/kubectl-fleetset/cmd"
)

// planChange is one spec change of TestKubectlPlanMatchesApply.
type planChange struct {
	name   string
	mutate func(*fleetv1.FleetSet)
	// refused, if set, is part of the admission refusal expected.
	refused string
	// expect, if set, checks the plan itself (that the change does what
	// the step means to exercise).
	expect func(*fleetsetcmd.Plan) error
}

// TestKubectlPlanMatchesApply: for each of 13 spec changes made one after
// the other to one FleetSet (scale up and down, template changes rolled
// whole and partitioned, shares, domains, a spec move between clusters, a
// subset added and removed, a cordon, two changes admission refuses),
// `kubectl fleetset plan -f -o json` is asked first, the change is then
// applied and, once the fleet has settled, what happened is compared
// with the plan: the instances and their clusters (created, removed,
// moved), the pods replaced (rolled) and the order of their replacement,
// each subset's cluster, ordinal block, replicas and domains in status,
// the created instances' domains, and the admission refusal's message.
func TestKubectlPlanMatchesApply(t *testing.T) {
	f := theFleet
	east, west := f.members[0].name, f.members[1].name
	ns := f.newNamespace(t, "e2e-plan")
	fs := f.newFleetSet(ns, "db", 5) // east 60 %, west 40 %
	f.createFleetSet(t, fs)
	f.waitReady(t, ns, "db", 5)

	setVersion := func(v string) func(*fleetv1.FleetSet) {
		return func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: v}}
		}
	}
	subset := func(fs *fleetv1.FleetSet, name string) *fleetv1.Subset {
		for i := range fs.Spec.Topology.Subsets {
			if fs.Spec.Topology.Subsets[i].Name == name {
				return &fs.Spec.Topology.Subsets[i]
			}
		}
		t.Fatalf("no subset %s", name)
		return nil
	}
	count := func(what string, got, want int) error {
		if got != want {
			return fmt.Errorf("%d %s, want %d", got, what, want)
		}
		return nil
	}
	rollingUpdate := func(fs *fleetv1.FleetSet) *fleetv1.RollingUpdateFleetSet {
		if fs.Spec.UpdateStrategy.RollingUpdate == nil {
			fs.Spec.UpdateStrategy.RollingUpdate = &fleetv1.RollingUpdateFleetSet{}
		}
		return fs.Spec.UpdateStrategy.RollingUpdate
	}
	changes := []planChange{
		{name: "replicas 5 → 8", mutate: func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 8 },
			expect: func(p *fleetsetcmd.Plan) error { return count("created", len(p.Created), 3) }},
		{name: "template VERSION 2: every instance rolls", mutate: setVersion("2"),
			expect: func(p *fleetsetcmd.Plan) error { return count("rolled", len(p.Rolled), 8) }},
		{name: "replicas 8 → 6", mutate: func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 6 },
			expect: func(p *fleetsetcmd.Plan) error { return count("removed", len(p.Removed), 2) }},
		{name: "shares 60%:40% → 30%:70%", mutate: func(fs *fleetv1.FleetSet) {
			subset(fs, east).Replicas = ptr.To(intstr.FromString("30%"))
			subset(fs, west).Replicas = ptr.To(intstr.FromString("70%"))
		}, expect: func(p *fleetsetcmd.Plan) error {
			if len(p.Created) == 0 || len(p.Removed) == 0 {
				return fmt.Errorf("created %d, removed %d: want both", len(p.Created), len(p.Removed))
			}
			return nil
		}},
		{name: "west's domains: zone-a 50%", mutate: func(fs *fleetv1.FleetSet) {
			subset(fs, west).Domains[0].Replicas = ptr.To(intstr.FromString("50%"))
		}, expect: func(p *fleetsetcmd.Plan) error {
			return count("instances changed", len(p.Created)+len(p.Removed)+len(p.Rolled)+len(p.Moved), 0)
		}},
		{name: "rollingUpdate.partition 3 and VERSION 3: the last 3 in fleet order stay", mutate: func(fs *fleetv1.FleetSet) {
			setVersion("3")(fs)
			rollingUpdate(fs).Partition = 3
		}, expect: func(p *fleetsetcmd.Plan) error { return count("rolled", len(p.Rolled), 3) }},
		{name: "partition 0: the 3 left roll", mutate: func(fs *fleetv1.FleetSet) { rollingUpdate(fs).Partition = 0 },
			expect: func(p *fleetsetcmd.Plan) error { return count("rolled", len(p.Rolled), 3) }},
		{name: "subset " + west + " moved to cluster " + east, mutate: func(fs *fleetv1.FleetSet) { subset(fs, west).Cluster = east },
			expect: func(p *fleetsetcmd.Plan) error { return count("moved", len(p.Moved), 4) }},
		{name: "subset extra on " + west + " (2) and replicas 6 → 8", mutate: func(fs *fleetv1.FleetSet) {
			extra := *subset(fs, east).DeepCopy()
			extra.Name, extra.Cluster, extra.Replicas = "extra", west, ptr.To(intstr.FromInt32(2))
			fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, extra)
			fs.Spec.Replicas = 8
		}, expect: func(p *fleetsetcmd.Plan) error { return count("created", len(p.Created), 2) }},
		{name: "cordon " + west + ", shares 30%:30%:rest and replicas 8 → 10: extra stays at 2", mutate: func(fs *fleetv1.FleetSet) {
			// Uncordoned, extra's rest (40 %) would give it 4 of 10.
			fs.Spec.Topology.CordonedClusters = []string{west}
			subset(fs, west).Replicas = ptr.To(intstr.FromString("30%"))
			subset(fs, "extra").Replicas = nil
			fs.Spec.Replicas = 10
		}, expect: func(p *fleetsetcmd.Plan) error {
			for _, in := range p.Created {
				if in.Subset == "extra" {
					return fmt.Errorf("created %s on cordoned %s", in.Name, west)
				}
			}
			return count("created", len(p.Created), 2)
		}},
		{name: "subset extra removed", mutate: func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets = fs.Spec.Topology.Subsets[:2]
			fs.Spec.Topology.CordonedClusters = nil
		}, expect: func(p *fleetsetcmd.Plan) error { return count("removed", len(p.Removed), 2) }},
		{name: "serviceName changed: refused", mutate: func(fs *fleetv1.FleetSet) { fs.Spec.ServiceName = "other" },
			refused: "serviceName is immutable"},
		{name: "integer replicas over spec.replicas: refused", mutate: func(fs *fleetv1.FleetSet) {
			subset(fs, east).Replicas = ptr.To(intstr.FromInt32(20))
		}, refused: "explicit integer replicas must not sum over spec.replicas"},
	}
	matched := 0
	for i, c := range changes {
		ok := t.Run(fmt.Sprintf("%02d %s", i+1, c.name), func(t *testing.T) { f.planThenApply(t, ns, "db", c) })
		if ok {
			matched++
		}
	}
	t.Logf("plan matched what happened for %d of %d spec changes", matched, len(changes))
	if matched != len(changes) {
		t.Errorf("plan matched %d of %d changes", matched, len(changes))
	}
}

// planThenApply plans change c to FleetSet ns/name with `kubectl fleetset
// plan -f -o json`, applies it, waits until the fleet settles, and
// compares.
func (f *fleet) planThenApply(t *testing.T, ns, name string, c planChange) {
	cur, err := f.getFleetSet(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	next := cur.DeepCopy()
	next.Status, next.ManagedFields = fleetv1.FleetSetStatus{}, nil
	c.mutate(next)
	b, err := yaml.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "fleetset.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := f.kubectlFleetset(t, "", "plan", "-f", file, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.kubectlFleetset(t, "", "plan", "-f", file, "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	p := &fleetsetcmd.Plan{}
	if err := json.Unmarshal([]byte(out), p); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, out)
	}
	if c.expect != nil {
		if err := c.expect(p); err != nil {
			t.Errorf("the plan does not exercise the step: %v\n%s", err, text)
		}
	}
	before, err := f.instances(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}

	applyErr := f.hub.Update(t.Context(), next)
	switch {
	case c.refused != "":
		if applyErr == nil {
			t.Fatalf("applied; want refused with %q (plan: %q)", c.refused, p.Refused)
		}
		if p.DryRun != "refused" || !strings.Contains(p.Refused, c.refused) {
			t.Errorf("plan says admission %s %q; want refused with %q", p.DryRun, p.Refused, c.refused)
		}
		if applyErr.Error() != p.Refused {
			t.Errorf("refusal differs:\n apply: %v\n plan:  %s", applyErr, p.Refused)
		}
		return
	case applyErr != nil:
		t.Fatalf("apply refused: %v (plan: admission %s %q)", applyErr, p.DryRun, p.Refused)
	case p.DryRun != "admitted":
		t.Fatalf("applied, but the plan says admission %s: %q", p.DryRun, p.Refused)
	}
	if p.Invalid != "" || len(p.Findings) > 0 {
		t.Fatalf("plan: invalid %q, findings %v", p.Invalid, p.Findings)
	}
	want := 0
	for _, s := range p.Subsets {
		if s.After != nil {
			want += int(s.After.Replicas)
		}
	}
	after, got := f.settle(t, ns, name, want)

	// Instances and their clusters.
	expected := map[string]string{}
	for _, in := range before {
		expected[in.pod] = in.cluster
	}
	for _, in := range p.Removed {
		delete(expected, in.Name)
	}
	for _, in := range p.Created {
		expected[in.Name] = in.Cluster
	}
	for _, m := range p.Moved {
		if expected[m.Name] != m.From {
			t.Errorf("plan moves %s from %s; it ran on %q", m.Name, m.From, expected[m.Name])
		}
		expected[m.Name] = m.To
	}
	actual := map[string]string{}
	for _, in := range after {
		actual[in.pod] = in.cluster
	}
	if d := diffMaps(expected, actual); d != "" {
		t.Errorf("instances (name → cluster), plan vs what runs:\n%s", d)
	}
	// Created instances' domains.
	zone := map[string]string{}
	for _, in := range after {
		zone[in.pod] = in.zone
	}
	for _, in := range p.Created {
		if in.Domain != "" && zone[in.Name] != in.Domain {
			t.Errorf("created %s in domain %q, plan said %s", in.Name, zone[in.Name], in.Domain)
		}
	}
	// Pods replaced in place: exactly the rolled ones.
	uidBefore := map[string]string{}
	for _, in := range before {
		uidBefore[in.cluster+"/"+in.pod] = in.uid
	}
	moved := map[string]bool{}
	for _, m := range p.Moved {
		moved[m.Name] = true
	}
	var replaced []string
	for _, in := range after {
		if u, ok := uidBefore[in.cluster+"/"+in.pod]; ok && u != in.uid && !moved[in.pod] {
			replaced = append(replaced, in.pod)
		}
	}
	var rolled []string
	for _, in := range p.Rolled {
		rolled = append(rolled, in.Name)
	}
	if d := diffSets(rolled, replaced); d != "" {
		t.Errorf("pods replaced in place, plan vs what happened:\n%s", d)
	}
	// The order: each rolled pod's replacement was created no earlier
	// than the one before it in the plan (creation timestamps, 1 s).
	var last time.Time
	lastName := ""
	for _, in := range p.Rolled {
		pod := &corev1.Pod{}
		if err := f.member(in.Cluster).c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: in.Name}, pod); err != nil {
			t.Errorf("rolled %s: %v", in.Name, err)
			continue
		}
		if created := pod.CreationTimestamp.Time; created.Before(last) {
			t.Errorf("rolled order: %s replaced at %s, before %s at %s", in.Name, created.Format(time.TimeOnly), lastName, last.Format(time.TimeOnly))
		} else {
			last, lastName = created, in.Name
		}
	}
	// Subsets in status.
	status := map[string]fleetv1.SubsetStatus{}
	for _, ss := range got.Status.Subsets {
		status[ss.Name] = ss
	}
	for _, s := range p.Subsets {
		ss, ok := status[s.Name]
		if s.After == nil {
			if ok && ss.Replicas > 0 {
				t.Errorf("subset %s: removed in the plan, status has %+v", s.Name, ss)
			}
			continue
		}
		if !ok {
			t.Errorf("subset %s: planned, not in status", s.Name)
			continue
		}
		if ss.Cluster != s.After.Cluster || ss.OrdinalStart != s.After.OrdinalStart || ss.Replicas != s.After.Replicas {
			t.Errorf("subset %s: status cluster %s ordinalStart %d replicas %d; plan %s %d %d", s.Name, ss.Cluster, ss.OrdinalStart, ss.Replicas, s.After.Cluster, s.After.OrdinalStart, s.After.Replicas)
		}
		domains := map[string]int32{}
		for _, d := range ss.Domains {
			domains[d.Name] = d.Replicas
		}
		if len(s.After.Domains) > 0 && fmt.Sprint(domains) != fmt.Sprint(s.After.Domains) {
			t.Errorf("subset %s: status domains %v, plan %v", s.Name, domains, s.After.Domains)
		}
	}
	if t.Failed() {
		t.Logf("plan:\n%s\nbefore:\n%s\nafter:\n%s", text, formatInstances(before), formatInstances(after))
	}
}

// settle waits until FleetSet ns/name has observed its spec, is not
// Progressing, has want Ready instances and its pods stay the same for
// three seconds; it returns them and the FleetSet.
func (f *fleet) settle(t *testing.T, ns, name string, want int) ([]instance, *fleetv1.FleetSet) {
	t.Helper()
	var ins []instance
	var fs *fleetv1.FleetSet
	var previous string
	eventually(t, 4*waitTimeout, fmt.Sprintf("%s/%s settled at %d instances", ns, name, want), func(ctx context.Context) (bool, string, error) {
		var err error
		if fs, err = f.getFleetSet(ctx, ns, name); err != nil {
			return false, "", err
		}
		if ins, err = f.instances(ctx, ns, name); err != nil {
			return false, "", err
		}
		ready := 0
		for _, in := range ins {
			if in.ready {
				ready++
			}
		}
		p := condition(fs, fleetv1.ConditionProgressing)
		switch {
		case fs.Status.ObservedGeneration != fs.Generation:
			return false, "status not observed", nil
		case p == nil || p.Status != metav1.ConditionFalse:
			return false, rolloutSummary(fs), nil
		case len(ins) != want || ready != want || int(fs.Status.ReadyReplicas) != want:
			return false, fmt.Sprintf("%d instances, %d ready, status ready %d", len(ins), ready, fs.Status.ReadyReplicas), nil
		}
		now := podSummary(ins)
		stable := now == previous
		previous = now
		if !stable {
			time.Sleep(2 * time.Second)
		}
		return stable, "pods changing: " + now, nil
	})
	return ins, fs
}

// diffMaps lists the keys whose values differ, as key: want → got.
func diffMaps(want, got map[string]string) string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("  %s: plan %q, runs %q", k, v, got[k]))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("  %s: plan none, runs %q", k, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// diffSets lists what only one of want and got holds.
func diffSets(want, got []string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range got {
		g[s] = true
	}
	var out []string
	for s := range w {
		if !g[s] {
			out = append(out, "  plan only: "+s)
		}
	}
	for s := range g {
		if !w[s] {
			out = append(out, "  happened only: "+s)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
