package tenancy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

func binding(ns, set string, bound bool) clusterv1beta2.ManagedClusterSetBinding {
	b := clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	status := metav1.ConditionFalse
	if bound {
		status = metav1.ConditionTrue
	}
	b.Status.Conditions = []metav1.Condition{{Type: clusterv1beta2.ClusterSetBindingBoundType, Status: status}}
	return b
}

func exclusiveSet(name string) clusterv1beta2.ManagedClusterSet {
	return clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func labelSet(name string, sel *metav1.LabelSelector) clusterv1beta2.ManagedClusterSet {
	s := clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Spec.ClusterSelector = clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: sel}
	return s
}

func cluster(name string, l map[string]string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func TestClusterSetsAdmits(t *testing.T) {
	east := cluster("east", map[string]string{clusterv1beta2.ClusterSetLabel: "prod", "region": "us"})
	west := cluster("west", map[string]string{clusterv1beta2.ClusterSetLabel: "default", "region": "eu"})
	sets := []clusterv1beta2.ManagedClusterSet{
		exclusiveSet("prod"), exclusiveSet("default"),
		labelSet("global", &metav1.LabelSelector{}),
		labelSet("us", &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}),
		labelSet("broken", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}),
	}
	cases := []struct {
		name     string
		bindings []clusterv1beta2.ManagedClusterSetBinding
		cluster  *clusterv1.ManagedCluster
		want     bool
		via      string
	}{
		{"no binding", nil, east, false, ""},
		{"exclusive set bound", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "prod", true)}, east, true, "prod"},
		{"other set bound", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "prod", true)}, west, false, ""},
		{"binding not Bound", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "prod", false)}, east, false, ""},
		{"binding of another namespace", []clusterv1beta2.ManagedClusterSetBinding{binding("team-b", "prod", true)}, east, false, ""},
		{"global holds every cluster", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "global", true)}, west, true, "global"},
		{"label selector set", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "us", true)}, east, true, "us"},
		{"label selector set, other region", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "us", true)}, west, false, ""},
		{"set missing", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "gone", true)}, east, false, ""},
		{"invalid selector selects nothing", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "broken", true)}, east, false, ""},
		{"two sets", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "us", true), binding("team-a", "prod", true)}, east, true, "prod,us"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := NewClusterSets("team-a", tc.bindings, sets)
			got, via := cs.Admits(tc.cluster)
			if got != tc.want || strings.Join(via, ",") != tc.via {
				t.Errorf("Admits(%s) = %v via %v, want %v via %q", tc.cluster.Name, got, via, tc.want, tc.via)
			}
		})
	}
}

func TestClusterSetsRefusal(t *testing.T) {
	east := cluster("east", map[string]string{clusterv1beta2.ClusterSetLabel: "prod"})
	cs := NewClusterSets("team-a", []clusterv1beta2.ManagedClusterSetBinding{binding("team-a", "dev", true), binding("team-a", "qa", false)},
		[]clusterv1beta2.ManagedClusterSet{exclusiveSet("dev"), exclusiveSet("prod")})
	msg := cs.Refusal("spec.topology.subsets[0].cluster", "east", east)
	for _, want := range []string{"spec.topology.subsets[0].cluster", "cluster east", "namespace team-a", "bound: dev", "not Bound: qa", "east is in set prod", "ManagedClusterSetBinding"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Refusal = %q, want it to contain %q", msg, want)
		}
	}
	if msg := NewClusterSets("team-a", nil, nil).Refusal("f", "east", nil); !strings.Contains(msg, "no ManagedClusterSetBinding there is Bound") {
		t.Errorf("Refusal without bindings = %q", msg)
	}
}
