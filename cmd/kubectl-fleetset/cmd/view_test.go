package cmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func pct(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }

func zones(names ...string) []fleetv1.DomainShare {
	var out []fleetv1.DomainShare
	for _, n := range names {
		out = append(out, fleetv1.DomainShare{Name: n})
	}
	return out
}

func domains(counts ...int32) []fleetv1.DomainStatus {
	var out []fleetv1.DomainStatus
	for i, c := range counts {
		out = append(out, fleetv1.DomainStatus{Name: "zone-" + string(rune('a'+i)), Replicas: c})
	}
	return out
}

// sample is manifests/samples/fleetset.yaml: replicas over east 60% and west
// 40%, three zones each, Manual partitions east 2; no status.
func sample(replicas int32) *fleetv1.FleetSet {
	abc := zones("zone-a", "zone-b", "zone-c")
	return &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mydb", Generation: 1},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Topology: fleetv1.FleetTopology{OrdinalBlockSize: 1000, Subsets: []fleetv1.Subset{
				{Name: "east", Cluster: "east", Replicas: pct("60%"), Domains: abc},
				{Name: "west", Cluster: "west", Replicas: pct("40%"), Domains: append([]fleetv1.DomainShare(nil), abc...)},
			}},
			UpdateStrategy: fleetv1.FleetSetUpdateStrategy{Type: fleetv1.ManualUpdateStrategyType,
				ManualUpdate: &fleetv1.ManualUpdate{Partitions: map[string]int32{"east": 2}}},
		},
	}
}

// withStatus returns fs with status.subsets set.
func withStatus(fs *fleetv1.FleetSet, subsets ...fleetv1.SubsetStatus) *fleetv1.FleetSet {
	fs.Status.Subsets = subsets
	return fs
}

func TestSubsetRows(t *testing.T) {
	cases := []struct {
		name string
		fs   *fleetv1.FleetSet
		want []SubsetRow
	}{
		{
			name: "replicas 9, east 60% west 40%, status as the hub folds it",
			fs: withStatus(sample(9),
				fleetv1.SubsetStatus{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Partition: 2, Domains: domains(2, 2, 1),
					ReadyReplicas: 5, UpdatedReplicas: 3, FleetRevision: "0123456789"},
				fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1),
					ReadyReplicas: 4, UpdatedReplicas: 4, FleetRevision: "0123456789"}),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Partition: 2, Domains: domains(2, 2, 1),
					Reported: true, Ready: 5, Updated: 3, Revision: "0123456789"},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1),
					Reported: true, Ready: 4, Updated: 4, Revision: "0123456789"},
			},
		},
		{
			name: "replicas 9, status without per-domain counts: the hub's division 2:2:1 and 2:1:1",
			fs: withStatus(sample(9),
				fleetv1.SubsetStatus{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Partition: 2},
				fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4}),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Partition: 2, Domains: domains(2, 2, 1), DomainsComputed: true, Reported: true},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1), DomainsComputed: true, Reported: true},
			},
		},
		{
			name: "replicas 15, no status yet: planned blocks 0 and 1000, division 9 (3:3:3) and 6 (2:2:2)",
			fs:   sample(15),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 0, Replicas: 9, Partition: 2, Domains: domains(3, 3, 3), DomainsComputed: true},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 6, Domains: domains(2, 2, 2), DomainsComputed: true},
			},
		},
		{
			name: "replicas 9, sticky starts from status: west keeps block 0, east 1000",
			fs: withStatus(sample(9),
				fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 0, Replicas: 4}),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 1000, Replicas: 5, Partition: 2, Domains: domains(2, 2, 1), DomainsComputed: true},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 0, Replicas: 4, Domains: domains(2, 1, 1), DomainsComputed: true, Reported: true},
			},
		},
		{
			name: "replicas 9, east failed over to west: fallback cluster, its own domains (west names them), epoch 1",
			fs: withStatus(sample(9),
				fleetv1.SubsetStatus{Name: "east", Cluster: "west", OrdinalStart: 0, Replicas: 5, Partition: 2, Epoch: 1,
					Failover: fleetv1.SubsetFailedOver, ReadyReplicas: 5, UpdatedReplicas: 3},
				fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1), ReadyReplicas: 4, UpdatedReplicas: 4}),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "west", OrdinalStart: 0, Replicas: 5, Partition: 2, Reported: true,
					Domains: domains(2, 2, 1), DomainsComputed: true, Ready: 5, Updated: 3, Epoch: 1, Failover: fleetv1.SubsetFailedOver},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1), Reported: true, Ready: 4, Updated: 4},
			},
		},
		{
			name: "status domains win over the computation; a subset gone from the spec is listed last",
			fs: func() *fleetv1.FleetSet {
				fs := sample(9)
				fs.Spec.Topology.Subsets = fs.Spec.Topology.Subsets[:1]
				fs.Spec.Topology.Subsets[0].Replicas = nil
				return withStatus(fs,
					fleetv1.SubsetStatus{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Domains: domains(3, 1, 1)},
					fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Rollout: fleetv1.SubsetWaiting})
			}(),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Domains: domains(3, 1, 1), Reported: true},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Reported: true, Rollout: fleetv1.SubsetWaiting},
			},
		},
		{
			name: "spread-only subset: no domains to compute",
			fs: func() *fleetv1.FleetSet {
				fs := sample(4)
				fs.Spec.Topology.Subsets[0].Domains, fs.Spec.Topology.Subsets[1].Domains = nil, nil
				return fs
			}(),
			want: []SubsetRow{
				{Name: "east", Home: "east", Cluster: "east", OrdinalStart: 0, Replicas: 2, Partition: 2},
				{Name: "west", Home: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 2},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SubsetRows(tc.fs)); diff != "" {
				t.Errorf("SubsetRows (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSubsetRowsDomainDivision checks the computed per-domain counts against
// the division docs/hub.md documents for the sample's shares (the seat
// sequence), at every size: 60%:40% of n, and each subset's zones evenly in
// the order a, b, c.
func TestSubsetRowsDomainDivision(t *testing.T) {
	// Seats of 60%:40% in order (docs/scheduler.md: a, b, a, b, a, a, b, a, b, a).
	fleet := []string{"east", "west", "east", "west", "east", "east", "west", "east", "west", "east"}
	for n := int32(0); n <= 10; n++ {
		sizes := map[string]int32{}
		for _, s := range fleet[:n] {
			sizes[s]++
		}
		rows := SubsetRows(sample(n))
		for _, r := range rows {
			if r.Replicas != sizes[r.Name] {
				t.Errorf("replicas %d: subset %s has %d replicas, want %d", n, r.Name, r.Replicas, sizes[r.Name])
			}
			// Equal shares over zone-a, zone-b, zone-c: seat k goes to zone k mod 3.
			var want [3]int32
			for k := int32(0); k < r.Replicas; k++ {
				want[k%3]++
			}
			if diff := cmp.Diff(domains(want[:]...), r.Domains); diff != "" {
				t.Errorf("replicas %d: subset %s domains (-want,+got):\n%s", n, r.Name, diff)
			}
		}
	}
}

func pod(name string, index string, node string, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleetv1.LabelSet: "mydb"}}, Spec: corev1.PodSpec{NodeName: node}}
	if index != "" {
		p.Labels[fleetv1.LabelPodIndex] = index
	}
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: s}}
	return p
}

func TestPodRowsSorted(t *testing.T) {
	east := []corev1.Pod{
		pod("mydb-east-2", "2", "east-c", true),
		pod("mydb-east-0", "0", "east-a", true),
		pod("mydb-east-1", "1", "east-b", false),
		pod("stray", "", "east-a", true),
	}
	pending := pod("mydb-east-3", "3", "", false)
	pending.Status.Conditions = nil
	east = append(east, pending)
	west := []corev1.Pod{
		pod("mydb-west-1000", "1000", "west-a", true),
		pod("mydb-east-1", "1", "west-b", true), // relocated subset, old copy not yet gone
		pod("bad-index", "x", "west-a", true),
	}
	rows := append(PodRows("east", east, map[string]string{"east-a": "zone-a", "east-b": "zone-b", "east-c": "zone-c"}),
		PodRows("west", west, map[string]string{"west-a": "zone-a"})...)
	SortPodRows(rows)
	want := []PodRow{
		{Cluster: "east", Zone: "zone-a", Node: "east-a", Pod: "mydb-east-0", Ordinal: 0, Ready: true},
		{Cluster: "east", Zone: "zone-b", Node: "east-b", Pod: "mydb-east-1", Ordinal: 1},
		{Cluster: "west", Zone: "", Node: "west-b", Pod: "mydb-east-1", Ordinal: 1, Ready: true},
		{Cluster: "east", Zone: "zone-c", Node: "east-c", Pod: "mydb-east-2", Ordinal: 2, Ready: true},
		{Cluster: "east", Pod: "mydb-east-3", Ordinal: 3},
		{Cluster: "west", Zone: "zone-a", Node: "west-a", Pod: "mydb-west-1000", Ordinal: 1000, Ready: true},
		{Cluster: "east", Zone: "zone-a", Node: "east-a", Pod: "stray", Ordinal: -1, Ready: true},
		{Cluster: "west", Zone: "zone-a", Node: "west-a", Pod: "bad-index", Ordinal: -1, Ready: true},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("pod rows (-want,+got):\n%s", diff)
	}
}

// TestInstances: the instances are the fleet view's (pod, cluster, domain,
// DNS name, by ordinal); a relocated subset's run in its fallback cluster,
// in their own domains where the fallback's subsets name them all and with
// no domain otherwise; a fleet over the fleet view's bound lists none and
// says so.
func TestInstances(t *testing.T) {
	fs := withStatus(sample(9),
		fleetv1.SubsetStatus{Name: "east", Cluster: "west", OrdinalStart: 0, Replicas: 5},
		fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4})
	got, err := Instances(fs)
	if err != nil {
		t.Fatal(err)
	}
	st := &Status{FleetSet: fs, ShowInstances: true, Instances: got}
	var b strings.Builder
	tw := printers.GetNewTabWriter(&b)
	printInstances(tw, st)
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `INSTANCE         CLUSTER   DOMAIN   DNS
mydb-east-0      west      zone-a   mydb-east-0.mydb.default.svc
mydb-east-1      west      zone-b   mydb-east-1.mydb.default.svc
mydb-east-2      west      zone-c   mydb-east-2.mydb.default.svc
mydb-east-3      west      zone-a   mydb-east-3.mydb.default.svc
mydb-east-4      west      zone-b   mydb-east-4.mydb.default.svc
mydb-west-1000   west      zone-a   mydb-west-1000.mydb.default.svc
mydb-west-1001   west      zone-b   mydb-west-1001.mydb.default.svc
mydb-west-1002   west      zone-c   mydb-west-1002.mydb.default.svc
mydb-west-1003   west      zone-a   mydb-west-1003.mydb.default.svc
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("instance table (-want,+got):\n%s", diff)
	}

	// West names only zone-a and zone-b: east, relocated there, is spread
	// only (no domain), west keeps its own.
	fs.Spec.Topology.Subsets[1].Domains = fs.Spec.Topology.Subsets[1].Domains[:2]
	if got, err = Instances(fs); err != nil {
		t.Fatal(err)
	}
	for _, in := range got {
		if want := in.Subset == "west"; (in.Domain != "") != want {
			t.Errorf("instance %s in cluster %s: domain %q; want one: %v", in.Name, in.Cluster, in.Domain, want)
		}
	}

	big := sample(fleetv1.MaxFleetViewInstances + 1)
	if got, err := Instances(big); err != nil || got != nil {
		t.Errorf("Instances(%d replicas) = %d instances, %v; want none", big.Spec.Replicas, len(got), err)
	}
	if notes := printInstances(&b, &Status{FleetSet: big, ShowInstances: true}); len(notes) != 1 || !strings.Contains(notes[0], "instances not listed") {
		t.Errorf("notes for a fleet over the bound = %q", notes)
	}
}
