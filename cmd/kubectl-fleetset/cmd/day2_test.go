package cmd

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// delivered9 is the sample FleetSet (9: east 5, west 4) under RollingUpdate
// with the status the hub folds.
func delivered9() *fleetv1.FleetSet {
	fs := rolling(withStatus(sample(9),
		fleetv1.SubsetStatus{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, UpdatedReplicas: 5},
		fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, UpdatedReplicas: 4}), false)
	fs.Spec.UpdateStrategy.ManualUpdate = nil
	return fs
}

func managedCluster(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestRestart(t *testing.T) {
	ctx := context.Background()
	hub := fakeHub(t, delivered9())
	o, out := verb(hub, "mydb", "")
	r := &RestartOptions{VerbOptions: o}
	err := r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "without --yes") {
		t.Fatalf("without --yes off a terminal: %v, want a refusal", err)
	}
	if a := get(t, hub, "mydb").Spec.Template.Annotations[AnnotationRestartedAt]; a != "" {
		t.Fatalf("refused, yet annotated %q", a)
	}

	// On a terminal: the name typed wrong cancels, right goes on.
	o.IsTerminal = func(io.Reader) bool { return true }
	o.In = strings.NewReader("nope\n")
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("wrong confirmation: %v", err)
	}
	o.In = strings.NewReader("mydb\n")
	out.Reset()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if a := get(t, hub, "mydb").Spec.Template.Annotations[AnnotationRestartedAt]; a != "2026-11-26T23:00:00Z" {
		t.Fatalf("annotation %q", a)
	}
	wantOutput(t, out.String(), "replaces all 9 instances", "within maxUnavailable 1, 1 subset(s) at a time",
		"fleetset.fleetset.io/mydb restarted: spec.template annotation kubectl.kubernetes.io/restartedAt=2026-11-26T23:00:00Z",
		"Fleet order: east, west (each highest ordinal first)", "Watch: kubectl fleetset status mydb -n default --watch")
}

func TestSwitchover(t *testing.T) {
	ctx := context.Background()
	withRoles := delivered9()
	withRoles.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	withRoles.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Command: []string{"/switchover"}}}}
	withRoles.Status.Leader = &fleetv1.LeaderStatus{Name: "mydb-east-0", Subset: "east", Cluster: "east"}
	for i := range withRoles.Status.Subsets {
		withRoles.Status.Subsets[i].ReadyReplicas = withRoles.Status.Subsets[i].Replicas
	}
	noRoles := delivered9()
	noRoles.Name = "plain"
	noAction := withRoles.DeepCopy()
	noAction.Name, noAction.Spec.LifecycleActions = "noaction", nil
	hub := fakeHub(t, withRoles, noRoles, noAction)
	run := func(name, to string, any, yes bool) (string, error) {
		o, out := verb(hub, name, "")
		err := (&SwitchoverOptions{VerbOptions: o, To: to, Any: any, Yes: yes}).Run(ctx)
		return out.String(), err
	}
	for _, tc := range []struct {
		name, fs, to string
		any, yes     bool
		err          string
	}{
		{"neither --to nor --any", "mydb", "", false, true, "exactly one of --to INSTANCE and --any"},
		{"both", "mydb", "mydb-west-1000", true, true, "exactly one of --to INSTANCE and --any"},
		{"no leader role", "plain", "", true, true, `fleetset "plain" has no leader role`},
		{"no switchover action", "noaction", "", true, true, `fleetset "noaction" has no switchover lifecycle action (spec.lifecycleActions.switchover)`},
		{"the leader itself", "mydb", "mydb-east-0", false, true, "mydb-east-0 is the leader already"},
		{"not an instance: ordinal past the subset", "mydb", "mydb-west-1004", false, true, `"mydb-west-1004" is not an instance of fleetset "mydb" (its instances: mydb-east-[0..4], mydb-west-[1000..1003])`},
		{"not an instance: another name", "mydb", "other-east-1", false, true, "is not an instance"},
		{"without --yes", "mydb", "mydb-west-1000", false, false, "refusing to switch fleetset mydb's leader over without --yes"},
	} {
		if _, err := run(tc.fs, tc.to, tc.any, tc.yes); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
		}
	}
	if a, ok := get(t, hub, "mydb").Annotations[AnnotationSwitchoverTo]; ok {
		t.Fatalf("annotated %q by a refused request", a)
	}
	out, err := run("mydb", "mydb-west-1000", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if a := get(t, hub, "mydb").Annotations[AnnotationSwitchoverTo]; a != "mydb-west-1000" {
		t.Fatalf("annotation %q", a)
	}
	wantOutput(t, out, "leader mydb-east-0 (subset east, cluster east); switchover to instance mydb-west-1000",
		"annotated fleetset.io/switchover-to=mydb-west-1000", "Watch: kubectl fleetset status mydb -n default --watch")
	if out, err = run("mydb", "mydb-west-1000", false, true); err != nil || !strings.Contains(out, "already requested") {
		t.Fatalf("again: %v\n%s", err, out)
	}
	if out, err = run("mydb", "", true, true); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out, "A switchover to instance mydb-west-1000 is pending; this replaces it.", "fleetset.io/switchover-to=*: switchover to an instance the workload chooses")
}

func TestCordonUncordon(t *testing.T) {
	ctx := context.Background()
	hub := fakeHub(t, delivered9(), managedCluster("east"), managedCluster("west"))
	run := func(cluster string, cordon, yes bool) (string, error) {
		o, out := verb(hub, "mydb", "")
		err := (&CordonOptions{VerbOptions: o, Cluster: cluster, Yes: yes}).Run(ctx, cordon)
		return out.String(), err
	}
	if _, err := run("south", true, false); err == nil || !strings.Contains(err.Error(), `managedcluster "south" not found`) {
		t.Fatalf("unknown cluster: %v", err)
	}
	out, err := run("east", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, hub, "mydb").Spec.Topology.CordonedClusters; !cmp.Equal(got, []string{"east"}) {
		t.Fatalf("cordonedClusters %v", got)
	}
	wantOutput(t, out, "Cluster east hosts subset east (5 instances) of fleetset default/mydb: they keep their instances and get no new ones",
		"fleetset.fleetset.io/mydb cordoned cluster east (spec.topology.cordonedClusters: east)", "Undo: kubectl fleetset uncordon mydb east -n default")
	if out, _ = run("east", true, false); !strings.Contains(out, "already cordoned: nothing changed") {
		t.Fatalf("again:\n%s", out)
	}

	// Scaled to 12 while east is cordoned: west holds 7; uncordoning moves
	// 2 back to east, which asks for --yes.
	fs := get(t, hub, "mydb")
	fs.Spec.Replicas = 12
	fs.Status.Subsets[1].Replicas = 7
	if err := hub.Update(ctx, fs); err != nil {
		t.Fatal(err)
	}
	_, err = run("east", false, false)
	if err == nil || !strings.Contains(err.Error(), "refusing to uncordon east for fleetset mydb without --yes") {
		t.Fatalf("uncordon without --yes: %v", err)
	}
	if got := get(t, hub, "mydb").Spec.Topology.CordonedClusters; len(got) != 1 {
		t.Fatalf("refused, yet cordonedClusters %v", got)
	}
	out, err = run("east", false, true)
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out, "subset east on east 5 → 7 (2 instances created)", "subset west on west 7 → 5 (2 instances removed)",
		"fleetset.fleetset.io/mydb uncordoned cluster east (spec.topology.cordonedClusters: none)")
	if got := get(t, hub, "mydb").Spec.Topology.CordonedClusters; len(got) != 0 {
		t.Fatalf("cordonedClusters %v", got)
	}
}

func TestReport(t *testing.T) {
	hub := fakeHub(t, delivered9(), managedCluster("east"), managedCluster("west"))
	o, out := verb(hub, "mydb", "")
	file := filepath.Join(t.TempDir(), "r.tar.gz")
	r := &ReportOptions{VerbOptions: o, OutputFile: file, MemberClients: map[string]client.Client{"east": fakeHub(t)}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "fleetset-report-default-mydb/")] = string(b)
	}
	for _, name := range []string{"README.txt", "errors.txt", "hub/fleetset.yaml", "hub/manifestworks.yaml", "hub/subsetplacements.yaml", "hub/managedclusters.yaml"} {
		if _, ok := files[name]; !ok {
			t.Errorf("archive lacks %s; has %v", name, keys(files))
		}
	}
	if !strings.Contains(files["hub/fleetset.yaml"], "name: mydb") {
		t.Errorf("hub/fleetset.yaml:\n%s", files["hub/fleetset.yaml"])
	}
	if !strings.Contains(files["errors.txt"], "members not collected (no --member-kubeconfig given): west") {
		t.Errorf("errors.txt:\n%s", files["errors.txt"])
	}
	wantOutput(t, out.String(), "Wrote "+file, "1 member(s) (east)", "fleetset-report-default-mydb/hub/fleetset.yaml")
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCordonRelocated (issue 48): east was lost and its subset relocated
// to west; cordoning east changes no subset's replicas (the relocated
// instances stay on west, subset west makes no new ones), so it needs no
// confirmation, and it says where east's subset runs.
func TestCordonRelocated(t *testing.T) {
	fs := delivered9()
	fs.Status.Subsets[0].Cluster, fs.Status.Subsets[0].Failover = "west", fleetv1.SubsetFailedOver
	hub := fakeHub(t, fs, managedCluster("east"), managedCluster("west"))
	o, out := verb(hub, "mydb", "")
	if err := (&CordonOptions{VerbOptions: o, Cluster: "east"}).Run(context.Background(), true); err != nil {
		t.Fatalf("cordon east without --yes: %v\n%s", err, out)
	}
	wantOutput(t, out.String(), "Relocated away from east: subset east (5 instances on west); they keep their instances where they run and do not fail back while east is cordoned.",
		"fleetset.fleetset.io/mydb cordoned cluster east")
	if strings.Contains(out.String(), "changes the division now") {
		t.Errorf("cordoning east moves replicas:\n%s", out)
	}
}

// TestSwitchoverUnfitCandidate (issue 48): the verb refuses early, naming
// why, a candidate the hub would refuse: its subset not all Ready, failing
// over, its ManagedCluster not Available, its member's heartbeat Lease
// stale (cut off) or reporting Fenced; it annotates nothing.
func TestSwitchoverUnfitCandidate(t *testing.T) {
	base := delivered9()
	base.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
	base.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"/switchover"}}}}
	base.Status.Leader = &fleetv1.LeaderStatus{Name: "mydb-east-0", Subset: "east", Cluster: "east"}
	for i := range base.Status.Subsets {
		base.Status.Subsets[i].ReadyReplicas = base.Status.Subsets[i].Replicas
	}
	available := func(name string, ok bool) *clusterv1.ManagedCluster {
		mc := managedCluster(name)
		st := metav1.ConditionTrue
		if !ok {
			st = metav1.ConditionUnknown
		}
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: st, Reason: "x", LastTransitionTime: metav1.Now()}}
		return mc
	}
	lease := func(renewed time.Duration, state string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "west", Name: fleetv1.HeartbeatLeaseName,
			Annotations: map[string]string{fleetv1.AnnotationMemberState: state, fleetv1.AnnotationMemberReason: "why"}},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: verbNow.Add(-renewed)}, LeaseDurationSeconds: ptr.To[int32](15)}}
	}
	for _, tc := range []struct {
		name string
		edit func(*fleetv1.FleetSet)
		objs []client.Object
		want string
	}{
		{"fit", nil, []client.Object{available("west", true), lease(5*time.Second, "InContact")}, ""},
		{"west 3 of 4 Ready", func(fs *fleetv1.FleetSet) { fs.Status.Subsets[1].ReadyReplicas = 3 }, nil,
			"candidate mydb-west-1000 is not known Ready: subset west on cluster west reports 3 of its 4 instances Ready"},
		{"west failing over", func(fs *fleetv1.FleetSet) { fs.Status.Subsets[1].Failover = fleetv1.SubsetFailingOver }, nil,
			"candidate mydb-west-1000 is not delivered to run: subset west is FailingOver"},
		{"west not Available", nil, []client.Object{available("west", false)}, "candidate mydb-west-1000 is out of contact: ManagedCluster west is not Available"},
		{"west cut off", nil, []client.Object{available("west", true), lease(time.Minute, "InContact")},
			"candidate mydb-west-1000 is out of contact: cluster west's member heartbeat was renewed 1m0s ago, its timeout is 15s: it is cut off from the hub"},
		{"west fenced", nil, []client.Object{available("west", true), lease(time.Second, "Fenced")},
			"candidate mydb-west-1000 is out of contact: cluster west's member reports itself Fenced (why)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := base.DeepCopy()
			if tc.edit != nil {
				tc.edit(fs)
			}
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{fleetv1.AddToScheme, clusterv1.Install, coordinationv1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			hub := fake.NewClientBuilder().WithScheme(s).WithObjects(append([]client.Object{fs}, tc.objs...)...).WithStatusSubresource(&clusterv1.ManagedCluster{}).Build()
			o, _ := verb(hub, "mydb", "")
			err := (&SwitchoverOptions{VerbOptions: o, To: "mydb-west-1000", Yes: true}).Run(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("fit candidate refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.want != "" && get(t, hub, "mydb").Annotations[AnnotationSwitchoverTo] != "":
				t.Fatalf("annotated for an unfit candidate")
			}
		})
	}
}
