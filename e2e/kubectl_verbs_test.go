//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	fleetsetcmd "github.com/fleetset/fleetset/cmd/kubectl-fleetset/cmd"
)

// kubectlFleetset runs `kubectl fleetset args...` in process against the
// fleet's hub, with stdin in (not a terminal), and returns what it printed
// and its error.
func (f *fleet) kubectlFleetset(t *testing.T, in string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := fleetsetcmd.NewCmdFleetSet(genericiooptions.IOStreams{In: strings.NewReader(in), Out: &out, ErrOut: &out})
	root.SetArgs(append([]string{"--kubeconfig", f.cfg.HubKubeconfig}, args...))
	err := root.ExecuteContext(t.Context())
	t.Logf("kubectl fleetset %s: err %v\n%s", strings.Join(args, " "), err, out.String())
	return out.String(), err
}

// wantPrinted fails the test unless out holds every part.
func wantPrinted(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("output lacks %q:\n%s", p, out)
		}
	}
}

// TestKubectlRestart: restart without --yes (no terminal) is refused and
// changes nothing; with --yes it stamps the template and the fleet's
// rollout replaces every instance, never more than maxUnavailable (1) at
// once as the one-second samples see it.
func TestKubectlRestart(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-restart")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 4))
	before := f.waitReady(t, ns, "db", 4)

	out, err := f.kubectlFleetset(t, "", "restart", "db", "-n", ns)
	if err == nil || !strings.Contains(err.Error(), "refusing to restart every instance of fleetset db without --yes") {
		t.Fatalf("restart without --yes: %v, want a refusal", err)
	}
	wantPrinted(t, out, "Restarting fleetset "+ns+"/db replaces all 4 instances")
	if fs, err := f.getFleetSet(t.Context(), ns, "db"); err != nil || fs.Spec.Template.Annotations[fleetsetcmd.AnnotationRestartedAt] != "" {
		t.Fatalf("refused restart changed the template: %v %v", err, fs.Spec.Template.Annotations)
	}

	out, err = f.kubectlFleetset(t, "", "restart", "db", "-n", ns, "--yes")
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "fleetset.fleetset.io/db restarted: spec.template annotation kubectl.kubernetes.io/restartedAt=",
		"Fleet order: ", "Watch: kubectl fleetset status db -n "+ns+" --watch")
	fs, err := f.getFleetSet(t.Context(), ns, "db")
	if err != nil || fs.Spec.Template.Annotations[fleetsetcmd.AnnotationRestartedAt] == "" {
		t.Fatalf("no restartedAt annotation: %v", err)
	}
	uids := podUIDs(before)
	eventually(t, 3*waitTimeout, "every instance replaced and Ready, rollout complete", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, in := range ins {
			if in.uid == uids[in.cluster+"/"+in.pod] || !in.ready {
				return false, podSummary(ins), nil
			}
		}
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return len(ins) == 4 && got.Status.CurrentRevision == got.Status.UpdateRevision && got.Status.ObservedGeneration == got.Generation, rolloutSummary(got), nil
	})
}

// TestKubectlCordon: cordoning east keeps east's instances and puts a
// scale-up's on west only; uncordoning, which moves replicas back, is
// refused without --yes, and with it the division is the spec's again.
func TestKubectlCordon(t *testing.T) {
	f := theFleet
	east, west := f.members[0].name, f.members[1].name
	ns := f.newNamespace(t, "e2e-cordon")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 5)) // 60 %:40 %: east 3, west 2
	f.waitReady(t, ns, "db", 5)

	out, err := f.kubectlFleetset(t, "", "cordon", "db", east, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, fmt.Sprintf("Cluster %s hosts subset %s (3 instances)", east, east),
		fmt.Sprintf("fleetset.fleetset.io/db cordoned cluster %s (spec.topology.cordonedClusters: %s)", east, east),
		fmt.Sprintf("Undo: kubectl fleetset uncordon db %s -n %s", east, ns))
	if _, err := f.kubectlFleetset(t, "", "cordon", "db", "nowhere", "-n", ns); err == nil || !strings.Contains(err.Error(), `managedcluster "nowhere" not found`) {
		t.Errorf("cordoning an unknown cluster: %v", err)
	}

	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 10 })
	perCluster := func(ins []instance) map[string]int {
		m := map[string]int{}
		for _, in := range ins {
			m[in.cluster]++
		}
		return m
	}
	if got := perCluster(f.waitReady(t, ns, "db", 10)); got[east] != 3 || got[west] != 7 {
		t.Fatalf("scaled to 10 with %s cordoned: %v, want %s 3, %s 7", east, got, east, west)
	}

	out, err = f.kubectlFleetset(t, "", "uncordon", "db", east, "-n", ns)
	if err == nil || !strings.Contains(err.Error(), "without --yes") {
		t.Fatalf("uncordon without --yes: %v, want a refusal", err)
	}
	wantPrinted(t, out, fmt.Sprintf("subset %s on %s 3 → 6 (3 instances created)", east, east), fmt.Sprintf("subset %s on %s 7 → 4 (3 instances removed)", west, west))
	if fs, _ := f.getFleetSet(t.Context(), ns, "db"); len(fs.Spec.Topology.CordonedClusters) != 1 {
		t.Fatalf("refused uncordon changed cordonedClusters: %v", fs.Spec.Topology.CordonedClusters)
	}
	out, err = f.kubectlFleetset(t, "", "uncordon", "db", east, "-n", ns, "--yes")
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, fmt.Sprintf("fleetset.fleetset.io/db uncordoned cluster %s (spec.topology.cordonedClusters: none)", east))
	eventually(t, 2*waitTimeout, "east 6, west 4", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		got := perCluster(ins)
		return got[east] == 6 && got[west] == 4, fmt.Sprint(got), nil
	})
}

// TestKubectlSwitchover: the verb checks the request against the FleetSet
// (a leader role, a switchover action, a desired instance) and writes the
// annotation fleetset.io/switchover-to only with --yes. The hub checks it
// again: with no instance reporting the leader role (kwok pods run no
// workload to say so), it refuses the request with a SwitchoverRefused
// event and removes the annotation. (A request carried out, etcd's leader
// moving to the instance asked for, is the etcd acceptance run's
// switchover step on kind.)
func TestKubectlSwitchover(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-switchover")
	fs := f.newFleetSet(ns, "db", 3)
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
	fs.Spec.LifecycleActions = &fleetv1.LifecycleActions{Switchover: &fleetv1.LifecycleAction{
		Exec: &fleetv1.ExecAction{Command: []string{"/bin/switchover"}}}}
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 3)
	plain := f.newFleetSet(ns, "plain", 1)
	f.createFleetSet(t, plain)
	noAction := f.newFleetSet(ns, "noaction", 1)
	noAction.Spec.Roles = fs.Spec.Roles
	f.createFleetSet(t, noAction)

	target := ins[len(ins)-1].pod
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"switchover", "plain", "--any", "--yes"}, `fleetset "plain" has no leader role`},
		{[]string{"switchover", "noaction", "--any", "--yes"}, `fleetset "noaction" has no switchover lifecycle action`},
		{[]string{"switchover", "db", "--to", "db-nowhere-7", "--yes"}, `"db-nowhere-7" is not an instance of fleetset "db"`},
		{[]string{"switchover", "db"}, "give exactly one of --to INSTANCE and --any"},
		{[]string{"switchover", "db", "--to", target}, "refusing to switch fleetset db's leader over without --yes"},
	} {
		if _, err := f.kubectlFleetset(t, "", append(tc.args, "-n", ns)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if got, _ := f.getFleetSet(t.Context(), ns, "db"); got.Annotations[fleetsetcmd.AnnotationSwitchoverTo] != "" {
		t.Fatalf("refused requests annotated %q", got.Annotations[fleetsetcmd.AnnotationSwitchoverTo])
	}
	out, err := f.kubectlFleetset(t, "", "switchover", "db", "--to", target, "--yes", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "annotated fleetset.io/switchover-to="+target+": switchover to instance "+target, "Watch: kubectl fleetset status db -n "+ns+" --watch")
	eventually(t, time.Minute, "the hub refused the request: annotation removed", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		a, pending := got.Annotations[fleetsetcmd.AnnotationSwitchoverTo]
		return !pending && got.Status.RequestedSwitchover == nil, fmt.Sprintf("annotation %q, status.requestedSwitchover %+v", a, got.Status.RequestedSwitchover), nil
	})
	if !f.hubEvent(t, ns, "db", "SwitchoverRefused", "0 instances report the leader role now") {
		t.Errorf("no SwitchoverRefused event saying no leader is reported")
	}
}

// TestKubectlReport: the archive holds the FleetSet, its two works and
// the SubsetPlacements they deliver from the hub, and from each member its
// StatefulSet, SubsetPlacement, pods and the member component's Leases.
func TestKubectlReport(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-report")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 3))
	f.waitReady(t, ns, "db", 3)
	file := filepath.Join(t.TempDir(), "report.tar.gz")
	args := []string{"report", "db", "-n", ns, "-f", file}
	for _, m := range f.cfg.Members {
		args = append(args, "--member-kubeconfig", m.Name+"="+m.Path)
	}
	out, err := f.kubectlFleetset(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "Wrote "+file, "2 member(s)")
	files := readTarGz(t, file)
	must := func(name string, parts ...string) {
		t.Helper()
		body, ok := files["fleetset-report-"+ns+"-db/"+name]
		if !ok {
			t.Errorf("archive lacks %s", name)
			return
		}
		for _, p := range parts {
			if !strings.Contains(body, p) {
				t.Errorf("%s lacks %q:\n%.2000s", name, p, body)
			}
		}
	}
	must("hub/fleetset.yaml", "kind: FleetSet", "name: db")
	must("hub/manifestworks.yaml", "kind: ManifestWork", "namespace: "+f.members[0].name, "namespace: "+f.members[1].name)
	must("hub/subsetplacements.yaml", "kind: SubsetPlacement", "name: db-"+f.members[0].name, "name: db-"+f.members[1].name)
	must("hub/managedclusters.yaml", "kind: ManagedCluster")
	for _, m := range f.members {
		must("members/"+m.name+"/statefulsets.yaml", "kind: StatefulSet", "name: db-"+m.name)
		must("members/"+m.name+"/subsetplacements.yaml", "kind: SubsetPlacement")
		must("members/"+m.name+"/pods.yaml", "kind: Pod", "name: db-"+m.name+"-")
		must("members/"+m.name+"/member-component/leases.yaml", "name: "+fleetv1.ResyncLeaseName)
	}
	if body := files["fleetset-report-"+ns+"-db/errors.txt"]; strings.TrimSpace(body) != "" {
		t.Logf("errors.txt:\n%s", body)
	}
}

// readTarGz returns the files of a tar.gz by name.
func readTarGz(t *testing.T, file string) map[string]string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}

// TestKubectlPauseResumeFailback: pause sets rollingUpdate.paused and a
// template change then waits (Progressing RolloutPaused, no pod
// replaced); resume lets it finish; failback on a FleetSet with no
// relocated subset changes nothing and says so.
func TestKubectlPauseResumeFailback(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-pause")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 3))
	before := f.waitReady(t, ns, "db", 3)

	out, err := f.kubectlFleetset(t, "", "pause", "db", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "fleetset.fleetset.io/db paused", "Resume: kubectl fleetset resume db -n "+ns)
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].Env[0].Value = "2"
	})
	eventually(t, waitTimeout, "Progressing RolloutPaused", func(ctx context.Context) (bool, string, error) {
		fs, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		c := condition(fs, fleetv1.ConditionProgressing)
		return c != nil && c.Reason == fleetv1.ReasonRolloutPaused, rolloutSummary(fs), nil
	})
	uids := podUIDs(before)
	if ins, err := f.instances(t.Context(), ns, "db"); err != nil {
		t.Fatal(err)
	} else {
		for _, in := range ins {
			if in.uid != uids[in.cluster+"/"+in.pod] {
				t.Errorf("paused, yet %s was replaced", in.pod)
			}
		}
	}

	out, err = f.kubectlFleetset(t, "", "resume", "db", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "fleetset.fleetset.io/db resumed", "Watch: kubectl fleetset status db -n "+ns+" --watch")
	eventually(t, 3*waitTimeout, "every instance replaced, rollout complete", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, in := range ins {
			if in.uid == uids[in.cluster+"/"+in.pod] || !in.ready || in.version != "2" {
				return false, podSummary(ins), nil
			}
		}
		fs, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return len(ins) == 3 && fs.Status.CurrentRevision == fs.Status.UpdateRevision, rolloutSummary(fs), nil
	})

	out, err = f.kubectlFleetset(t, "", "failback", "db", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "has no relocated subset: nothing to fail back, nothing changed")
	if fs, _ := f.getFleetSet(t.Context(), ns, "db"); fs.Annotations[fleetv1.AnnotationFailback] != "" {
		t.Errorf("failback annotated a FleetSet with no relocated subset")
	}
}

// TestKubectlOutOfService: without --yes and with a wrong name typed the
// taint is not written; with --yes it is (NoSelect), listing the subsets
// the cluster hosts; --remove takes it off.
func TestKubectlOutOfService(t *testing.T) {
	f := theFleet
	west := f.members[1].name
	ns := f.newNamespace(t, "e2e-oos")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 2))
	f.waitReady(t, ns, "db", 2)
	tainted := func() bool {
		mc := &unstructured.Unstructured{}
		mc.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"})
		if err := f.hub.Get(context.WithoutCancel(t.Context()), client.ObjectKey{Name: west}, mc); err != nil {
			t.Fatal(err)
		}
		taints, _, _ := unstructured.NestedSlice(mc.Object, "spec", "taints")
		for _, x := range taints {
			if m, ok := x.(map[string]any); ok && m["key"] == fleetv1.TaintOutOfService && m["effect"] == "NoSelect" {
				return true
			}
		}
		return false
	}
	t.Cleanup(func() {
		if tainted() {
			_, _ = f.kubectlFleetset(t, "", "out-of-service", west, "--remove")
		}
	})
	if _, err := f.kubectlFleetset(t, "nope\n", "out-of-service", west); err == nil || !strings.Contains(err.Error(), "not confirmed: nothing changed") {
		t.Fatalf("wrong name typed: %v", err)
	}
	if tainted() {
		t.Fatal("tainted without confirmation")
	}
	out, err := f.kubectlFleetset(t, "", "out-of-service", west, "--yes")
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, ns+"/db "+west, "tainted "+fleetv1.TaintOutOfService+":NoSelect", "Undo: kubectl fleetset out-of-service "+west+" --remove")
	if !tainted() {
		t.Fatal("not tainted")
	}
	out, err = f.kubectlFleetset(t, "", "out-of-service", west, "--remove")
	if err != nil {
		t.Fatal(err)
	}
	wantPrinted(t, out, "untainted "+fleetv1.TaintOutOfService)
	if tainted() {
		t.Fatal("still tainted after --remove")
	}
}
