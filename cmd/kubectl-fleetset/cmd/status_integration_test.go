//go:build integration

package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// Two real control planes: the hub, with the FleetSet and ManifestWork
// CRDs, and member cluster east. Member west is a kubeconfig whose server
// does not listen.
var hubEnv, eastEnv *controlplane.Env

func TestMain(m *testing.M) {
	code := 1
	defer func() { os.Exit(code) }()
	crds, err := controlplane.OCMCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	if hubEnv, err = controlplane.Start(append([]string{"manifests/crds"}, crds...)...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer func() { _ = hubEnv.Stop() }()
	if eastEnv, err = controlplane.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer func() { _ = eastEnv.Stop() }()
	code = m.Run()
}

// newClient returns a client of cfg knowing the core, FleetSet and
// ManifestWork types.
func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1.AddToScheme, workv1.Install} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// writeKubeconfig writes a kubeconfig with one context per entry of
// contexts (name → admin rest.Config), current-context current, and
// returns its path.
func writeKubeconfig(t *testing.T, name, current string, contexts map[string]*rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for n, cfg := range contexts {
		kc.Clusters[n] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos[n] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
		kc.Contexts[n] = &clientcmdapi.Context{Cluster: n, AuthInfo: n}
	}
	kc.CurrentContext = current
	path := filepath.Join(t.TempDir(), name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs `kubectl-fleetset args...` and returns its output and error.
func run(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := NewCmdFleetSet(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String() + errOut.String(), err
}

// cells splits each line of a table section of out into its cells (columns
// are at least three blanks apart; cells hold single blanks at most). The
// section is the block of lines starting with a line whose first cell is
// header.
func cells(out, header string) [][]string {
	var rows [][]string
	in := false
	sep := regexp.MustCompile(`\s{2,}`)
	for _, line := range strings.Split(out, "\n") {
		c := sep.Split(strings.TrimSpace(line), -1)
		switch {
		case c[0] == header:
			in = true
		case in && line == "":
			return rows
		case in:
			rows = append(rows, c)
		}
	}
	return rows
}

func TestStatusCommand(t *testing.T) {
	ctx := context.Background()
	hub, east := newClient(t, hubEnv.Config), newClient(t, eastEnv.Config)
	now := time.Now()

	// Hub: the sample FleetSet in namespace demo with the status the hub
	// folds at 9 replicas, and the resync lease works of east (renewed an
	// hour ago: expired) and west (just renewed).
	b, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "fleetset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{}
	if err := yaml.Unmarshal(b, fs); err != nil {
		t.Fatal(err)
	}
	fs.Namespace = "demo"
	for _, ns := range []string{"demo", "east", "west"} {
		create(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	create(t, hub, fs)
	fs.Status = fleetv1.FleetSetStatus{
		ObservedGeneration: fs.Generation, Replicas: 9, ReadyReplicas: 8, UpdatedReplicas: 7,
		UpdateRevision: "5d1c0a9b7e", CurrentRevision: "0a1b2c3d4e", SubsetCount: 2,
		Subsets: []fleetv1.SubsetStatus{
			{Name: "east", Cluster: "east", OrdinalStart: 0, Replicas: 5, Partition: 2,
				Domains:          []fleetv1.DomainStatus{{Name: "zone-a", Replicas: 2}, {Name: "zone-b", Replicas: 2}, {Name: "zone-c", Replicas: 1}},
				ObservedReplicas: 5, ReadyReplicas: 4, UpdatedReplicas: 3, FleetRevision: "5d1c0a9b7e"},
			{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4,
				Domains:          []fleetv1.DomainStatus{{Name: "zone-a", Replicas: 2}, {Name: "zone-b", Replicas: 1}, {Name: "zone-c", Replicas: 1}},
				ObservedReplicas: 4, ReadyReplicas: 4, UpdatedReplicas: 4, FleetRevision: "5d1c0a9b7e"},
		},
	}
	apimeta.SetStatusCondition(&fs.Status.Conditions, metav1.Condition{Type: fleetv1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonReplicasNotReady, Message: "subset east on cluster east: 4/5 ready"})
	apimeta.SetStatusCondition(&fs.Status.Conditions, metav1.Condition{Type: fleetv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonComplete})
	apimeta.SetStatusCondition(&fs.Status.Conditions, metav1.Condition{Type: fleetv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonAsExpected})
	if err := hub.Status().Update(ctx, fs); err != nil {
		t.Fatal(err)
	}
	for cluster, renewed := range map[string]time.Time{"east": now.Add(-time.Hour), "west": now} {
		w, err := manifestwork.ResyncWork(cluster, manifestwork.Lease{HolderIdentity: "fleetset-hub", DurationSeconds: 60,
			AcquireTime: metav1.NewMicroTime(renewed), RenewTime: metav1.NewMicroTime(renewed)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		create(t, hub, w)
	}

	// Member east: three zones, five pods of the FleetSet (mydb-east-4 not
	// ready, mydb-east-3 not yet scheduled), one pod of another set, and
	// its resync Lease renewed 3s ago.
	create(t, east, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace}})
	for _, z := range []string{"a", "b", "c"} {
		create(t, east, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "east-" + z, Labels: map[string]string{fleetv1.DefaultTopologyKey: "zone-" + z}}})
	}
	pods := []struct {
		name, set, index, node string
		ready                  bool
	}{
		{"mydb-east-4", "mydb", "4", "east-b", false},
		{"mydb-east-2", "mydb", "2", "east-c", true},
		{"mydb-east-0", "mydb", "0", "east-a", true},
		{"mydb-east-3", "mydb", "3", "", false},
		{"mydb-east-1", "mydb", "1", "east-b", true},
		{"other-0", "other", "0", "east-a", true},
	}
	for _, p := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: p.name, Labels: map[string]string{
				fleetv1.LabelSet: p.set, fleetv1.LabelSubset: "east", fleetv1.LabelPodIndex: p.index}},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "db", Image: "registry.k8s.io/pause:3.10"}}},
		}
		create(t, east, pod)
		status := corev1.ConditionFalse
		if p.ready {
			status = corev1.ConditionTrue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		if err := east.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	create(t, east, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fleetset-hub"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-3 * time.Second)))},
	})

	hubKubeconfig := writeKubeconfig(t, "hub", "hub", map[string]*rest.Config{"hub": hubEnv.Config})
	eastKubeconfig := writeKubeconfig(t, "east", "east", map[string]*rest.Config{"east": eastEnv.Config})
	down := rest.CopyConfig(eastEnv.Config)
	down.Host = "https://127.0.0.1:1" // nothing listens
	westKubeconfig := writeKubeconfig(t, "west", "west", map[string]*rest.Config{"west": down})
	fleetKubeconfig := writeKubeconfig(t, "fleet", "hub", map[string]*rest.Config{"hub": hubEnv.Config, "east": eastEnv.Config, "west": down})

	wantSubsets := [][]string{
		{"east", "east", "[0,5)", "5", "zone-a:2 zone-b:2 zone-c:1", "4", "3", "2", "5d1c0a9b7e", "-", "0", "-", "60m (expired)"},
		{"west", "west", "[1000,1004)", "4", "zone-a:2 zone-b:1 zone-c:1", "4", "4", "0", "5d1c0a9b7e", "-", "0", "-", "re:[0-9]+s"},
	}
	wantPods := [][]string{
		{"east", "zone-a", "east-a", "mydb-east-0", "0", "True"},
		{"east", "zone-b", "east-b", "mydb-east-1", "1", "True"},
		{"east", "zone-c", "east-c", "mydb-east-2", "2", "True"},
		{"east", "<none>", "<none>", "mydb-east-3", "3", "False"},
		{"east", "zone-b", "east-b", "mydb-east-4", "4", "False"},
	}
	// match checks every cell of got against want: equal, or, for a want
	// cell "re:PATTERN", matching PATTERN.
	match := func(t *testing.T, what string, want, got [][]string) {
		t.Helper()
		ok := len(want) == len(got)
		for i := 0; ok && i < len(want); i++ {
			ok = len(want[i]) == len(got[i])
			for j := 0; ok && j < len(want[i]); j++ {
				if p, isRE := strings.CutPrefix(want[i][j], "re:"); isRE {
					ok = regexp.MustCompile("^" + p + "$").MatchString(got[i][j])
				} else {
					ok = want[i][j] == got[i][j]
				}
			}
		}
		if !ok {
			t.Errorf("%s (-want,+got):\n%s", what, cmp.Diff(want, got))
		}
	}

	t.Run("members as kubeconfig files; west unreachable", func(t *testing.T) {
		out, err := run("status", "mydb", "-n", "demo", "--kubeconfig", hubKubeconfig,
			"--member", "east="+eastKubeconfig, "--member", "west="+westKubeconfig, "--member-timeout", "5s")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("output:\n%s", out)
		for _, want := range []string{
			"Replicas:   9 desired, 9 current, 8 ready, 7 updated\n",
			"Revision:   update 5d1c0a9b7e, current 0a1b2c3d4e\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		match(t, "conditions", [][]string{
			{"Ready", "False", "ReplicasNotReady", "subset east on cluster east: 4/5 ready"},
			{"Progressing", "False", "Complete", "-"},
			{"Degraded", "False", "AsExpected", "-"},
		}, cells(out, "Conditions:"))
		match(t, "subsets", wantSubsets, cells(out, "SUBSET"))
		match(t, "pods", wantPods, cells(out, "CLUSTER"))
		match(t, "members", [][]string{
			{"east", "5", "re:([3-9]|[1-9][0-9])s", "-"},
			{"west", "-", "-", `re:unreachable: .*127\.0\.0\.1:1: connect: connection refused`},
		}, cells(out, "MEMBER"))
	})

	t.Run("members as contexts of the hub's kubeconfig; west not given", func(t *testing.T) {
		out, err := run("status", "mydb", "--namespace=demo", "--kubeconfig", fleetKubeconfig, "--context", "hub", "--member-context", "east=east")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		match(t, "subsets", wantSubsets, cells(out, "SUBSET"))
		match(t, "pods", wantPods, cells(out, "CLUSTER"))
		match(t, "members", [][]string{
			{"east", "5", "re:([3-9]|[1-9][0-9])s", "-"},
			{"west", "-", "-", "not given (--member or --member-context): its pods are not listed"},
		}, cells(out, "MEMBER"))
	})

	t.Run("no members: no pod table", func(t *testing.T) {
		out, err := run("status", "mydb", "-n", "demo", "--kubeconfig", hubKubeconfig)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		match(t, "subsets", wantSubsets, cells(out, "SUBSET"))
		match(t, "fencing", [][]string{
			{"east", "none", "-", "no member heartbeat: fencing is off there, and the hub never relocates from it"},
			{"west", "none", "-", "no member heartbeat: fencing is off there, and the hub never relocates from it"},
		}, cells(out, "FENCING"))
		if strings.Contains(out, "MEMBER") || strings.Contains(out, "POD") {
			t.Errorf("pod or member table without members:\n%s", out)
		}
	})

	t.Run("not found", func(t *testing.T) {
		_, err := run("status", "nope", "-n", "demo", "--kubeconfig", hubKubeconfig)
		if want := `fleetset "nope" not found in namespace "demo"`; err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	})

	t.Run("-o yaml prints the FleetSet", func(t *testing.T) {
		out, err := run("status", "mydb", "-n", "demo", "--kubeconfig", hubKubeconfig, "-o", "yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got := &fleetv1.FleetSet{}
		if err := yaml.UnmarshalStrict([]byte(out), got); err != nil {
			t.Fatalf("output is not a FleetSet: %v\n%s", err, out)
		}
		if got.Kind != "FleetSet" || got.APIVersion != fleetv1.GroupVersion.String() || got.Name != "mydb" || got.ManagedFields != nil {
			t.Errorf("printed %s %s %s with %d managedFields, want FleetSet fleetset.io/v1alpha1 mydb without", got.APIVersion, got.Kind, got.Name, len(got.ManagedFields))
		}
		if diff := cmp.Diff(fs.Status.Subsets, got.Status.Subsets); diff != "" {
			t.Errorf("printed status.subsets (-want,+got):\n%s", diff)
		}
	})
}
