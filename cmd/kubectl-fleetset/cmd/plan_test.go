package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestPlan: the plan of a change to the delivered sample (9: east [0,5),
// west [1000,1004)) names the instances created, removed, moved and
// rolled, in the rollout's order.
func TestPlan(t *testing.T) {
	names := func(ins []PlanInstance) []string {
		var out []string
		for _, in := range ins {
			out = append(out, in.Name)
		}
		return out
	}
	cases := []struct {
		name                     string
		change                   func(*fleetv1.FleetSet)
		created, removed, rolled []string
		moved                    []PlanMove
		steps                    int
		notes                    string
	}{
		{name: "replicas 9 → 12", change: func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 12 },
			created: []string{"mydb-east-5", "mydb-east-6", "mydb-west-1004"}},
		{name: "replicas 9 → 6", change: func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 6 },
			removed: []string{"mydb-east-4", "mydb-west-1002", "mydb-west-1003"}},
		{name: "template image: every instance, east then west, highest first", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "db:2"}}
		}, rolled: []string{"mydb-east-4", "mydb-east-3", "mydb-east-2", "mydb-east-1", "mydb-east-0", "mydb-west-1003", "mydb-west-1002", "mydb-west-1001", "mydb-west-1000"}, steps: 9},
		{name: "template with subsetOrder west first and maxConcurrentSubsets 2: two at a time", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "db:2"}}
			fs.Spec.UpdateStrategy.RollingUpdate.SubsetOrder = []string{"west"}
			fs.Spec.UpdateStrategy.RollingUpdate.MaxConcurrentSubsets = ptr.To(int32(2))
			fs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}, rolled: []string{"mydb-west-1003", "mydb-east-4", "mydb-west-1002", "mydb-east-3", "mydb-west-1001", "mydb-east-2", "mydb-west-1000", "mydb-east-1", "mydb-east-0"}, steps: 5},
		{name: "template with rollingUpdate.partition 3: the last 3 in fleet order stay", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "db:2"}}
			fs.Spec.UpdateStrategy.RollingUpdate.Partition = 3
		}, rolled: []string{"mydb-east-4", "mydb-east-3", "mydb-east-2", "mydb-east-1", "mydb-east-0", "mydb-west-1003"}, steps: 6, notes: "partition 3"},
		{name: "west's patch only: west rolls, east does not", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[1].ImageRegistryRewrites = []fleetv1.ImageRegistryRewrite{{From: "docker.io", To: "mirror.example"}}
		}, rolled: []string{"mydb-west-1003", "mydb-west-1002", "mydb-west-1001", "mydb-west-1000"}, steps: 4},
		{name: "partition 3 lowered to 0 after a partitioned rollout: the 3 left roll, lowest last", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.UpdateStrategy.RollingUpdate.Partition = 0
		}, rolled: []string{"mydb-west-1002", "mydb-west-1001", "mydb-west-1000"}, steps: 3},
		{name: "west moved to north", change: func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].Cluster = "north" },
			moved: []PlanMove{{"mydb-west-1000", "west", "north"}, {"mydb-west-1001", "west", "north"}, {"mydb-west-1002", "west", "north"}, {"mydb-west-1003", "west", "north"}}},
		{name: "subset west removed: its instances go, east takes all 9", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets = fs.Spec.Topology.Subsets[:1]
			fs.Spec.Topology.Subsets[0].Replicas = nil
		}, created: []string{"mydb-east-5", "mydb-east-6", "mydb-east-7", "mydb-east-8"}, removed: []string{"mydb-west-1000", "mydb-west-1001", "mydb-west-1002", "mydb-west-1003"}},
		{name: "east cordoned, replicas 12: west takes the 3", change: func(fs *fleetv1.FleetSet) {
			fs.Spec.Replicas = 12
			fs.Spec.Topology.CordonedClusters = []string{"east"}
		}, created: []string{"mydb-west-1004", "mydb-west-1005", "mydb-west-1006"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := delivered9()
			cur.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "docker.io/db:1"}}
			if strings.Contains(tc.name, "template") {
				cur.Spec.Template.Spec.Containers[0].Image = "db:1"
			}
			if strings.Contains(tc.name, "partitioned rollout") {
				cur.Spec.UpdateStrategy.RollingUpdate.Partition = 3
				cur.Status.Subsets[0].UpdatedReplicas, cur.Status.Subsets[1].UpdatedReplicas = 5, 1
			}
			hub := fakeHub(t, cur)
			next := cur.DeepCopy()
			next.Status = fleetv1.FleetSetStatus{}
			tc.change(next)
			o, _ := verb(hub, "mydb", "")
			p, err := (&PlanOptions{VerbOptions: o, NoDryRun: true}).Plan(context.Background(), next)
			if err != nil {
				t.Fatal(err)
			}
			if p.Invalid != "" {
				t.Fatalf("invalid: %s", p.Invalid)
			}
			for what, d := range map[string]string{
				"created": cmp.Diff(tc.created, names(p.Created)),
				"removed": cmp.Diff(tc.removed, names(p.Removed)),
				"rolled":  cmp.Diff(tc.rolled, names(p.Rolled)),
				"moved":   cmp.Diff(tc.moved, p.Moved),
			} {
				if d != "" {
					t.Errorf("%s (-want,+got):\n%s", what, d)
				}
			}
			if tc.steps != 0 && len(p.RolloutSteps) != tc.steps {
				t.Errorf("%d rollout steps %v, want %d", len(p.RolloutSteps), p.RolloutSteps, tc.steps)
			}
			if tc.notes != "" && !strings.Contains(strings.Join(p.Notes, "\n"), tc.notes) {
				t.Errorf("notes %q lack %q", p.Notes, tc.notes)
			}
			var sb strings.Builder
			PrintPlan(&sb, p)
			if !strings.Contains(sb.String(), "SUBSET") {
				t.Errorf("text:\n%s", sb.String())
			}
		})
	}
}

// TestPlanCreate: a FleetSet not on the hub is a creation: every instance
// created, with its domain, nothing rolled.
func TestPlanCreate(t *testing.T) {
	o, _ := verb(fakeHub(t), "mydb", "")
	fs := delivered9()
	fs.Status = fleetv1.FleetSetStatus{}
	p, err := (&PlanOptions{VerbOptions: o, NoDryRun: true}).Plan(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range p.Created {
		got = append(got, in.Name+"@"+in.Cluster+"/"+in.Domain)
	}
	want := []string{"mydb-east-0@east/zone-a", "mydb-east-1@east/zone-b", "mydb-east-2@east/zone-c", "mydb-east-3@east/zone-a", "mydb-east-4@east/zone-b",
		"mydb-west-1000@west/zone-a", "mydb-west-1001@west/zone-b", "mydb-west-1002@west/zone-c", "mydb-west-1003@west/zone-a"}
	if d := cmp.Diff(want, got); d != "" || !p.Create || len(p.Rolled)+len(p.Removed)+len(p.Moved) != 0 {
		t.Errorf("create %v; created (-want,+got):\n%s\nrolled %v removed %v moved %v", p.Create, d, p.Rolled, p.Removed, p.Moved)
	}
}
