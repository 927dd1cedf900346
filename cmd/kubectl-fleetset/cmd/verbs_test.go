package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var verbNow = time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)

// fakeHub returns a fake hub client holding objs.
func fakeHub(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{fleetv1.AddToScheme, clusterv1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// verb returns VerbOptions over hub for FleetSet default/name, its output
// and stdin.
func verb(hub client.Client, name, in string) (*VerbOptions, *bytes.Buffer) {
	var out bytes.Buffer
	o := &VerbOptions{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &out},
		Hub: hub, Namespace: "default", Name: name, Now: func() time.Time { return verbNow }}
	return o, &out
}

func rolling(fs *fleetv1.FleetSet, paused bool) *fleetv1.FleetSet {
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{Type: fleetv1.RollingUpdateStrategyType,
		RollingUpdate: &fleetv1.RollingUpdateFleetSet{Paused: paused}}
	return fs
}

func get(t *testing.T, c client.Client, name string) *fleetv1.FleetSet {
	t.Helper()
	fs := &fleetv1.FleetSet{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, fs); err != nil {
		t.Fatal(err)
	}
	return fs
}

func wantOutput(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("output lacks %q:\n%s", p, out)
		}
	}
}

func TestPauseResume(t *testing.T) {
	ctx := context.Background()
	hub := fakeHub(t, rolling(sample(9), false))
	o, out := verb(hub, "mydb", "")
	if err := o.SetPaused(ctx, true); err != nil {
		t.Fatal(err)
	}
	if ru := get(t, hub, "mydb").Spec.UpdateStrategy.RollingUpdate; ru == nil || !ru.Paused {
		t.Fatalf("not paused: %+v", ru)
	}
	wantOutput(t, out.String(), "fleetset.fleetset.io/mydb paused", "RolloutPaused", "Watch: kubectl fleetset status mydb -n default --watch", "Resume: kubectl fleetset resume mydb -n default")

	out.Reset()
	if err := o.SetPaused(ctx, true); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "already paused: nothing changed")

	out.Reset()
	if err := o.SetPaused(ctx, false); err != nil {
		t.Fatal(err)
	}
	if ru := get(t, hub, "mydb").Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.Paused {
		t.Fatalf("still paused: %+v", ru)
	}
	wantOutput(t, out.String(), "fleetset.fleetset.io/mydb resumed", "Watch:")

	out.Reset()
	if err := o.SetPaused(ctx, false); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "already resumed: nothing changed")
}

func TestPauseRefusesManualStrategy(t *testing.T) {
	hub := fakeHub(t, sample(9)) // updateStrategy Manual
	o, _ := verb(hub, "mydb", "")
	err := o.SetPaused(context.Background(), true)
	if err == nil || !strings.Contains(err.Error(), "updateStrategy Manual") {
		t.Fatalf("err = %v, want a refusal naming updateStrategy Manual", err)
	}
	if ru := get(t, hub, "mydb").Spec.UpdateStrategy.RollingUpdate; ru != nil {
		t.Fatalf("changed: %+v", ru)
	}
}

func TestPauseMissingFleetSet(t *testing.T) {
	o, _ := verb(fakeHub(t), "nope", "")
	if err := o.SetPaused(context.Background(), true); err == nil || err.Error() != `fleetset "nope" not found in namespace "default"` {
		t.Fatalf("err = %v", err)
	}
}

func TestFailback(t *testing.T) {
	ctx := context.Background()
	relocated := withStatus(sample(9),
		fleetv1.SubsetStatus{Name: "east", Cluster: "west", Failover: fleetv1.SubsetFailedOver, Epoch: 1},
		fleetv1.SubsetStatus{Name: "west", Cluster: "west"})
	relocated.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, Failback: fleetv1.FailbackManual}
	home := withStatus(sample(9), fleetv1.SubsetStatus{Name: "east", Cluster: "east"}, fleetv1.SubsetStatus{Name: "west", Cluster: "west"})
	home.Name = "athome"
	hub := fakeHub(t, relocated, home)

	o, out := verb(hub, "mydb", "")
	if err := o.Failback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get(t, hub, "mydb").Annotations[fleetv1.AnnotationFailback]; got != "2026-11-26T23:00:00Z" {
		t.Fatalf("annotation %s = %q", fleetv1.AnnotationFailback, got)
	}
	wantOutput(t, out.String(), "annotated fleetset.io/failback: failback requested for east (east→west)", "FailingBack", "Watch: kubectl fleetset status mydb -n default --watch")

	out.Reset()
	if err := o.Failback(ctx); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "failback already requested")

	o, out = verb(hub, "athome", "")
	if err := o.Failback(ctx); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "has no relocated subset: nothing to fail back, nothing changed")
	if _, ok := get(t, hub, "athome").Annotations[fleetv1.AnnotationFailback]; ok {
		t.Fatal("a FleetSet at home was annotated")
	}
}

func cluster(name string, taints ...clusterv1.Taint) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{Taints: taints}}
}

func getCluster(t *testing.T, c client.Client, name string) *clusterv1.ManagedCluster {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestOutOfService(t *testing.T) {
	ctx := context.Background()
	other := clusterv1.Taint{Key: "example.com/other", Effect: clusterv1.TaintEffectPreferNoSelect}
	fs := withStatus(sample(9), fleetv1.SubsetStatus{Name: "east", Cluster: "east", Replicas: 5}, fleetv1.SubsetStatus{Name: "west", Cluster: "west", Replicas: 4})
	hub := fakeHub(t, cluster("east", other), cluster("west"), fs)

	// Refused: the typed name does not match.
	v, out := verb(hub, "east", "west\n")
	o := &OutOfServiceOptions{VerbOptions: v}
	if err := o.Run(ctx); err == nil || !strings.Contains(err.Error(), "not confirmed: nothing changed") {
		t.Fatalf("err = %v, want not confirmed", err)
	}
	wantOutput(t, out.String(), "Cluster east hosts 1 FleetSet subsets: default/mydb east (5 replicas).", "Type the cluster's name to confirm")
	if taintIndex(getCluster(t, hub, "east")) >= 0 {
		t.Fatal("tainted without confirmation")
	}

	// Confirmed by typing the name.
	v, out = verb(hub, "east", "east\n")
	o = &OutOfServiceOptions{VerbOptions: v}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mc := getCluster(t, hub, "east")
	// timeAdded is left to OCM's webhook, which refuses a client's.
	if i := taintIndex(mc); i < 0 || mc.Spec.Taints[i].Effect != clusterv1.TaintEffectNoSelect || !mc.Spec.Taints[i].TimeAdded.IsZero() {
		t.Fatalf("taints = %+v", mc.Spec.Taints)
	}
	if len(mc.Spec.Taints) != 2 || mc.Spec.Taints[0].Key != other.Key {
		t.Fatalf("the other taint was not kept: %+v", mc.Spec.Taints)
	}
	wantOutput(t, out.String(), "managedcluster.cluster.open-cluster-management.io/east tainted fleetset.io/out-of-service:NoSelect", "Watch:", "Undo: kubectl fleetset out-of-service east --remove")

	// Again: nothing to do.
	v, out = verb(hub, "east", "")
	o = &OutOfServiceOptions{VerbOptions: v, Yes: true}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "already tainted")

	// --remove keeps the other taint.
	v, out = verb(hub, "east", "")
	o = &OutOfServiceOptions{VerbOptions: v, Remove: true}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if mc := getCluster(t, hub, "east"); len(mc.Spec.Taints) != 1 || mc.Spec.Taints[0].Key != other.Key {
		t.Fatalf("taints after --remove = %+v", mc.Spec.Taints)
	}
	wantOutput(t, out.String(), "untainted fleetset.io/out-of-service")

	// --yes: no prompt.
	v, out = verb(hub, "west", "")
	o = &OutOfServiceOptions{VerbOptions: v, Yes: true}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if taintIndex(getCluster(t, hub, "west")) < 0 {
		t.Fatal("west not tainted with --yes")
	}
	if strings.Contains(out.String(), "Type the cluster's name") {
		t.Fatalf("prompted despite --yes:\n%s", out.String())
	}

	v, _ = verb(hub, "nowhere", "")
	if err := (&OutOfServiceOptions{VerbOptions: v, Yes: true}).Run(ctx); err == nil || !strings.Contains(err.Error(), `managedcluster "nowhere" not found`) {
		t.Fatalf("err = %v", err)
	}
}

func TestStatusWatch(t *testing.T) {
	hub := fakeHub(t, withStatus(sample(9), fleetv1.SubsetStatus{Name: "east", Cluster: "east", Replicas: 5}))
	var out bytes.Buffer
	o := NewStatusOptions(nil, genericiooptions.IOStreams{Out: &out, ErrOut: &out})
	o.hub, o.name, o.namespace, o.Watch, o.Interval = hub, "mydb", "default", true, 10*time.Millisecond
	o.Now = func() time.Time { return verbNow }
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	frames := strings.Count(out.String(), "Every 10ms: kubectl fleetset status mydb -n default")
	if frames < 2 || strings.Count(out.String(), "Name:       mydb") < 2 {
		t.Fatalf("%d frames, want at least 2:\n%s", frames, out.String())
	}
	if strings.Contains(out.String(), "\x1b[2J") {
		t.Fatal("redrawn in place on a non-terminal")
	}
}
