//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// The etcd acceptance test's settings (make e2e-kind-etcd sets them).
var (
	etcdImage         = framework.EnvString("FLEETSET_E2E_ETCD_IMAGE", "fleetset-etcd:3.6.16")
	etcdArchive       = framework.EnvString("FLEETSET_E2E_ETCD_ARCHIVE", filepath.Join(framework.RepoRoot(), "bin", "images", "fleetset-etcd.tar"))
	etcdClientImage   = "fleetset-etcd-client:dev"
	etcdClientArchive = framework.EnvString("FLEETSET_E2E_ETCD_CLIENT_ARCHIVE", filepath.Join(framework.RepoRoot(), "bin", "images", "etcd-client.tar"))
	etcdCheckBin      = framework.EnvString("FLEETSET_E2E_ETCD_CHECK", filepath.Join(framework.RepoRoot(), "bin", "etcd-check"))
)

// etcdRun is the state of one acceptance run.
type etcdRun struct {
	f        *fleet
	ns       string
	clusters []string          // east, west, north
	kubecfg  map[string]string // cluster → kubeconfig
	actions  bool              // fleetset runs the sample's lifecycle actions
	driver   *driverActions    // the test runs memberJoin/memberLeave itself
	windows  []string          // etcd-check -window flags
	logDir   string
}

// TestEtcdOnTheFleet (kind only; make e2e-kind-etcd): the sample etcd
// (manifests/samples/etcd.yaml) over east, west and north, two clients
// (e2e/etcd, etcd's own Go client) in east and west recording puts, gets
// and CAS transactions by the members' fleet DNS names, while the steps of
// FLEETSET_E2E_ETCD_STEPS run one after the other: cut (a member cluster
// cut off, FLEETSET_E2E_ETCD_CUT, until the fleet is back to five healthy
// members), rollout-plain (a flag, the StatefulSet's own order, no roles),
// rollout-leader-last (the image tag, followers first, the leader after a
// switchover), scale (5 → 3 → 5), kill-leader-node (docker kill of the kind
// node that runs the leader, then docker start). Then etcd-check
// (porcupine) checks the history; the run prints one ETCD summary line and
// fails if the history is not linearizable, an acknowledged write is lost,
// the member list is not the fleet's instances, or a member ID ran on lost
// data. FLEETSET_E2E_ETCD_ACTIONS=driver has the test run memberJoin and
// memberLeave itself (driverActions) where the deployed fleetset predates
// the actions. FLEETSET_E2E_ETCD_ACTIONS=0 runs the sample without its lifecycle
// actions and roles (a static bootstrap): cut and scale then cannot heal
// the membership, and no role probe labels the leader, so those steps and
// rollout-leader-last are left out (their figures print as -1). Logs go to FLEETSET_E2E_ETCD_LOGS
// (default bin/etcd-e2e/<namespace>) and stay there.
func TestEtcdOnTheFleet(t *testing.T) {
	if os.Getenv("FLEETSET_E2E_ETCD") == "" {
		t.Skip("the etcd acceptance run: make e2e-kind-etcd (FLEETSET_E2E_ETCD=1)")
	}
	f := theFleet
	if _, ok := f.provider.(framework.ImageLoader); !ok {
		t.Skipf("provider %s runs no containers (kind only)", f.provider.Name())
	}
	if len(f.spare) == 0 {
		t.Skip("etcd over three members needs FLEETSET_E2E_SPARE_MEMBERS")
	}
	mode := framework.EnvString("FLEETSET_E2E_ETCD_ACTIONS", "1")
	r := &etcdRun{f: f, kubecfg: map[string]string{}, actions: mode == "1"}
	for _, p := range append(slices.Clone(f.cfg.Members), f.cfg.Spare[0]) {
		r.clusters = append(r.clusters, p.Name)
		r.kubecfg[p.Name] = p.Path
	}
	steps := strings.Split(framework.EnvString("FLEETSET_E2E_ETCD_STEPS", "switchover,cut,rollout-plain,rollout-leader-last,scale,kill-leader-node"), ",")
	switch mode {
	case "0":
		steps = slices.DeleteFunc(steps, func(s string) bool {
			return s == "cut" || s == "scale" || s == "rollout-leader-last" || s == "switchover"
		})
	case "driver":
		// No role probe: no leader-last order, no leader to switch over.
		steps = slices.DeleteFunc(steps, func(s string) bool { return s == "rollout-leader-last" || s == "switchover" })
		r.driver = &driverActions{r: r, joined: map[string]string{}, seen: map[string]bool{}, left: map[string]bool{}}
	}
	start := time.Now()
	f.loadImage(t, r.clusters, etcdArchive, etcdImage, etcdImage+"-rollout")
	f.loadImage(t, r.clusters, etcdClientArchive, etcdClientImage)
	// Registered before newNamespace's, so it runs after it: the namespace
	// goes from every member, the spare too, also when newNamespace's own
	// minute ran out waiting for the hub.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, m := range append(slices.Clone(f.members), f.spare[0]) {
			_ = m.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}})
		}
	})
	r.ns = f.newNamespace(t, "e2e-etcd")
	t.Logf("namespace %s, actions: %s", r.ns, mode)
	r.logDir = framework.EnvString("FLEETSET_E2E_ETCD_LOGS", filepath.Join(framework.RepoRoot(), "bin", "etcd-e2e", r.ns))
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.dumpPods(t)
		t.Logf("etcd run logs in %s", r.logDir)
	})
	fs := r.fleetSet(t)
	f.createFleetSet(t, fs)
	if r.driver != nil {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.driver.run(ctx, t) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	r.waitHealthy(t, 5, 8*time.Minute)

	for _, c := range []string{r.clusters[0], r.clusters[1]} {
		r.startClient(t, c)
	}
	// A history before the first fault, and a minute of the fleet's CPU
	// with the sample under its clients' load (the kind bed's budget:
	// docs/development.md, "The kind fleet's CPU").
	time.Sleep(time.Minute)
	loadUnderClients := hostLoad()
	t.Logf("host with etcd under its clients: %s", loadUnderClients)

	res := map[string]string{"cut_to_healthy_s": "-1", "rollout_gap_ms_leader_last": "-1", "rollout_gap_ms_plain": "-1", "switchover_s": "-1"}
	for _, step := range steps {
		t.Logf("step %s (%s into the run)", step, time.Since(start).Round(time.Second))
		switch step {
		case "cut":
			res["cut_to_healthy_s"] = r.cut(t)
		case "rollout-plain":
			r.rollout(t, "plain", func(fs *fleetv1.FleetSet) {
				// No roles: the role probe and the switchover action need
				// them (admission), so they go too, for this rollout.
				fs.Spec.Roles, fs.Spec.Switchover = nil, nil
				if la := fs.Spec.LifecycleActions; la != nil {
					la.RoleProbe, la.Switchover = nil, nil
				}
				bumpFlag(&fs.Spec.Template.Spec.Containers[0])
			})
		case "rollout-leader-last":
			r.rollout(t, "leader_last", func(fs *fleetv1.FleetSet) {
				fs.Spec.Roles, fs.Spec.Switchover = r.sampleRoles(t)
				if la, sample := fs.Spec.LifecycleActions, r.fleetSet(t).Spec.LifecycleActions; la != nil && sample != nil && r.actions {
					la.RoleProbe, la.Switchover = sample.RoleProbe, sample.Switchover
				}
				c := &fs.Spec.Template.Spec.Containers[0]
				if c.Image == etcdImage {
					c.Image = etcdImage + "-rollout"
				} else {
					c.Image = etcdImage
				}
			})
		case "scale":
			r.scale(t, 3)
			r.scale(t, 5)
		case "kill-leader-node":
			r.killLeaderNode(t)
		case "switchover":
			res["switchover_s"] = r.requestedSwitchover(t)
		case "":
		default:
			t.Fatalf("unknown step %q", step)
		}
		r.waitHealthy(t, 5, 10*time.Minute)
		time.Sleep(10 * time.Second)
	}
	pods := r.stopClients(t)
	out := r.check(t, pods)
	for k, v := range out {
		res[k] = v
	}
	if v, ok := out["gap_plain"]; ok {
		res["rollout_gap_ms_plain"] = v
	}
	if v, ok := out["gap_leader_last"]; ok {
		res["rollout_gap_ms_leader_last"] = v
	}
	line := fmt.Sprintf("ETCD ops=%s linearizable=%s acknowledged_lost=%s members_match=%s cut_to_healthy_s=%s rollout_gap_ms_leader_last=%s rollout_gap_ms_plain=%s switchover_s=%s leader_changes=%s",
		res["ops"], res["linearizable"], res["acknowledged_lost"], res["members_match"], res["cut_to_healthy_s"],
		res["rollout_gap_ms_leader_last"], res["rollout_gap_ms_plain"], res["switchover_s"], res["leader_changes"])
	fmt.Println(line)
	t.Logf("%s (run %s, steps %v, actions %t, unknown writes %s, reused member IDs %s)", line, time.Since(start).Round(time.Second),
		steps, r.actions, res["unknown_writes"], res["reused_ids"])
	loadLine := fmt.Sprintf("ETCD-LOAD under clients: %s\nETCD-LOAD at the end: %s", loadUnderClients, hostLoad())
	fmt.Println(loadLine)
	_ = os.WriteFile(filepath.Join(r.logDir, "summary.txt"), []byte(line+"\n"+loadLine+"\n"), 0o644)
	if res["linearizable"] != "true" || res["acknowledged_lost"] != "0" || res["members_match"] != "true" || res["reused_ids"] != "0" {
		t.Errorf("etcd acceptance failed: %s", line)
	}
	if n, _ := strconv.Atoi(res["ops"]); n < 10000 {
		t.Logf("only %d operations (the acceptance asks for 10,000)", n)
	}
}

// fleetSet reads manifests/samples/etcd.yaml into a FleetSet in the run's
// namespace; without actions it drops spec.lifecycleActions and the roles
// (no role probe) and bootstraps statically.
func (r *etcdRun) fleetSet(t *testing.T) *fleetv1.FleetSet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "manifests", "samples", "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["metadata"].(map[string]any)["namespace"] = r.ns
	spec := m["spec"].(map[string]any)
	if !r.actions {
		delete(spec, "lifecycleActions")
		delete(spec, "roles")
		delete(spec, "switchover")
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{}
	if err := json.Unmarshal(js, fs); err != nil {
		t.Fatal(err)
	}
	onKindWorkers(fs)
	c := &fs.Spec.Template.Spec.Containers[0]
	c.Image, c.ImagePullPolicy = etcdImage, corev1.PullNever
	if !r.actions && r.driver == nil {
		c.Env = append(c.Env, corev1.EnvVar{Name: "FLEETSET_ETCD_BOOTSTRAP", Value: "static"})
	}
	return fs
}

// hostLoad is the provider's report of the host's load and the node
// containers' CPU over the last minute (framework.LoadReporter), or "".
func hostLoad() string {
	if l, ok := theFleet.provider.(framework.LoadReporter); ok {
		return l.Load()
	}
	return ""
}

// kindControlPlaneZone is the zone of a kind member's control-plane node
// (kind-configs/member-*.yaml); the workers are the other zones.
const kindControlPlaneZone = "zone-a"

// onKindWorkers keeps fs's instances off the kind members' control-plane
// nodes, which run pods too (kind-configs/): its subsets lose the domain of
// the control-plane node's zone and its pods must not run on a
// control-plane node. Killing or freezing the node of an instance must not
// take the member's control plane (and its CoreDNS, the test's clients)
// with it, as on the clusters these tests stand for, whose control planes
// run no workload.
func onKindWorkers(fs *fleetv1.FleetSet) {
	for i := range fs.Spec.Topology.Subsets {
		s := &fs.Spec.Topology.Subsets[i]
		s.Domains = slices.DeleteFunc(s.Domains, func(d fleetv1.DomainShare) bool { return d.Name == kindControlPlaneZone })
	}
	offControlPlane(&fs.Spec.Template.Spec)
}

// offControlPlane adds to spec a required node affinity for nodes without
// the control-plane role.
func offControlPlane(spec *corev1.PodSpec) {
	req := corev1.NodeSelectorRequirement{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpDoesNotExist}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(*terms) == 0 {
		*terms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range *terms { // the terms are ORed: each needs the requirement
		(*terms)[i].MatchExpressions = append((*terms)[i].MatchExpressions, req)
	}
}

// sampleRoles returns the sample's roles and switchover (nil without
// actions: no role probe labels the pods).
func (r *etcdRun) sampleRoles(t *testing.T) ([]fleetv1.Role, *fleetv1.Switchover) {
	if !r.actions {
		return nil, nil
	}
	fs := r.fleetSet(t)
	return fs.Spec.Roles, fs.Spec.Switchover
}

// bumpFlag changes the container's --heartbeat-interval (100 ↔ 110 ms): a
// new revision of the pod template.
func bumpFlag(c *corev1.Container) {
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--heartbeat-interval="); ok {
			if v == "100" {
				c.Args[i] = "--heartbeat-interval=110"
			} else {
				c.Args[i] = "--heartbeat-interval=100"
			}
			return
		}
	}
	c.Args = append(c.Args, "--heartbeat-interval=110")
}

// etcdPod is one instance as the members see it.
type etcdPod struct {
	name, cluster, node, image string
	ready                      bool
	created                    time.Time
}

// pods lists the FleetSet's pods in every cluster that are not being
// deleted, by name.
func (r *etcdRun) pods(ctx context.Context) (map[string]etcdPod, error) {
	out := map[string]etcdPod{}
	for _, m := range append(slices.Clone(r.f.members), r.f.spare[0]) {
		var l corev1.PodList
		if err := m.c.List(ctx, &l, client.InNamespace(r.ns), client.MatchingLabels{fleetv1.LabelSet: "etcd"}); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}
			out[p.Name] = etcdPod{name: p.Name, cluster: m.name, node: p.Spec.NodeName, image: p.Spec.Containers[0].Image, ready: ready,
				created: p.CreationTimestamp.Time}
		}
	}
	return out, nil
}

// etcdctl runs etcdctl in pod p (its etcd container) and returns its
// output.
func (r *etcdRun) etcdctl(ctx context.Context, p etcdPod, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	full := append([]string{"--kubeconfig", r.kubecfg[p.cluster], "-n", r.ns, "exec", p.name, "-c", "etcd", "--",
		"etcdctl", "--dial-timeout=3s", "--command-timeout=8s"}, args...)
	out, err := exec.CommandContext(ctx, "kubectl", full...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("etcdctl %s in %s: %v: %s", strings.Join(args, " "), p.name, err, out)
	}
	return string(out), nil
}

// healthy reports whether n instances are Ready, the member list (asked
// of a Ready instance, linearizable) has exactly those n members, all
// started, and every member answers endpoint health; every instance must
// have been created after since (when not zero: a rollout replaced it).
func (r *etcdRun) healthy(ctx context.Context, n int, since time.Time) (bool, string, error) {
	pods, err := r.pods(ctx)
	if err != nil {
		return false, "", err
	}
	var ready []etcdPod
	for _, p := range pods {
		if p.ready && !p.created.Before(since.Truncate(time.Second)) {
			ready = append(ready, p)
		}
	}
	if len(ready) != n || len(pods) != n {
		return false, fmt.Sprintf("%d of %d pods ready (want %d)", len(ready), len(pods), n), nil
	}
	out, err := r.etcdctl(ctx, ready[0], "member", "list", "-w", "simple")
	if err != nil {
		return false, err.Error(), nil
	}
	names := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(l, ", ")
		if len(f) < 5 || f[4] == "" {
			return false, "member not started: " + l, nil
		}
		names[f[2]] = true
	}
	for _, p := range ready {
		if !names[p.name] {
			return false, fmt.Sprintf("%s not in the member list %v", p.name, names), nil
		}
	}
	if len(names) != n {
		return false, fmt.Sprintf("%d members, want %d", len(names), n), nil
	}
	if _, err := r.etcdctl(ctx, ready[0], "endpoint", "health", "--cluster"); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

func (r *etcdRun) waitHealthy(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d healthy etcd members", n), func(ctx context.Context) (bool, string, error) {
		return r.healthy(ctx, n, time.Time{})
	})
}

// leader returns the instance holding the leader role, from etcdctl
// endpoint status --cluster.
func (r *etcdRun) leader(ctx context.Context) (etcdPod, error) {
	pods, err := r.pods(ctx)
	if err != nil {
		return etcdPod{}, err
	}
	for _, p := range pods {
		if !p.ready {
			continue
		}
		// With a member down etcdctl fails but prints the others.
		out, _ := r.etcdctl(ctx, p, "endpoint", "status", "--cluster", "-w", "simple")
		for _, l := range strings.Split(out, "\n") {
			f := strings.Split(l, ", ")
			if len(f) > 9 && f[8] == "true" {
				host := strings.TrimPrefix(f[0], "http://")
				name, _, _ := strings.Cut(host, ".")
				if lp, ok := pods[name]; ok {
					return lp, nil
				}
			}
		}
	}
	return etcdPod{}, errors.New("no leader found")
}

// startClient runs the acceptance client in cluster c, on its
// control-plane node (which holds no etcd member, so killing a member's
// node never kills a client).
func (r *etcdRun) startClient(t *testing.T, c string) {
	t.Helper()
	var eps []string
	for _, n := range []string{"etcd-east-0", "etcd-east-1", "etcd-west-1000", "etcd-west-1001", "etcd-north-2000"} {
		eps = append(eps, fmt.Sprintf("http://%s.etcd.%s.svc.cluster.local:2379", n, r.ns))
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "client-" + c},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{"node-role.kubernetes.io/control-plane": ""},
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "client", Image: etcdClientImage, ImagePullPolicy: corev1.PullNever,
				Args: []string{"-endpoints=" + strings.Join(eps, ","), "-name=client-" + c, "-prefix=" + r.ns + "/",
					"-max-duration=90m", "-workers=4", "-interval=30ms", fmt.Sprintf("-monitor=%t", c == r.clusters[0])},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
		},
	}
	if err := r.f.member(c).c.Create(t.Context(), p); err != nil {
		t.Fatalf("%s: client: %v", c, err)
	}
}

// stopClients puts the stop key, waits for both clients to finish, saves
// their logs and returns the log files.
func (r *etcdRun) stopClients(t *testing.T) []string {
	t.Helper()
	eventually(t, 3*time.Minute, "the stop key written", func(ctx context.Context) (bool, string, error) {
		l, err := r.leader(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if _, err := r.etcdctl(ctx, l, "put", "fleetset-acceptance/stop", "1"); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	var files []string
	for _, c := range []string{r.clusters[0], r.clusters[1]} {
		eventually(t, 15*time.Minute, "client-"+c+" done", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := r.f.member(c).c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "client-" + c}, p); err != nil {
				return false, "", err
			}
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase), nil
		})
		out, err := exec.Command("kubectl", "--kubeconfig", r.kubecfg[c], "-n", r.ns, "logs", "client-"+c).Output()
		if err != nil {
			t.Fatalf("client-%s logs: %v", c, err)
		}
		p := filepath.Join(r.logDir, "client-"+c+".jsonl")
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := wholeHistory(out); err != nil {
			t.Fatalf("client-%s's history (%s) is not whole, so no verdict can be drawn from it: %v", c, p, err)
		}
		files = append(files, p)
	}
	return files
}

// wholeHistory checks that a client's log holds every operation it made:
// as many "o" lines as its closing summary counts. The history is read with
// `kubectl logs`, which returns only the kubelet's current log file: a log
// rotated past the kubelet's containerLogMaxSize (kind-configs/ raise it to
// 200 MiB) has lost its beginning, and porcupine would call the rest
// Illegal (reads of values whose writes are gone).
func wholeHistory(log []byte) error {
	var ops int
	summary := -1
	for _, line := range bytes.Split(log, []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte(`{"o":`)):
			ops++
		case bytes.HasPrefix(line, []byte(`{"summary":`)):
			var s struct {
				Summary struct {
					Ops int `json:"ops"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(line, &s); err != nil {
				return fmt.Errorf("summary line %q: %w", line, err)
			}
			summary = s.Summary.Ops
		}
	}
	switch {
	case summary < 0:
		return fmt.Errorf("no summary line (%d operations logged)", ops)
	case ops != summary:
		return fmt.Errorf("%d operations logged, the client's summary counts %d (a rotated container log loses its beginning)", ops, summary)
	}
	return nil
}

var checkField = regexp.MustCompile(`(\w+)=(\S*)`)

// check runs etcd-check on the clients' logs with the fleet's instances
// and the rollout windows, and returns its fields (and gap_<window>).
func (r *etcdRun) check(t *testing.T, files []string) map[string]string {
	t.Helper()
	pods, err := r.pods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	args := append([]string{"-members", strings.Join(names, ","), "-viz", filepath.Join(r.logDir, "porcupine.html")}, r.windows...)
	out, err := exec.Command(etcdCheckBin, append(args, files...)...).CombinedOutput()
	_ = os.WriteFile(filepath.Join(r.logDir, "check.txt"), out, 0o644)
	t.Logf("etcd-check: %s", out)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("etcd-check: %v", err)
	}
	res := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "CHECK "):
			for _, m := range checkField.FindAllStringSubmatch(l, -1) {
				res[m[1]] = m[2]
			}
		case strings.HasPrefix(l, "GAP "):
			var name string
			var ms int64
			if _, err := fmt.Sscanf(l, "GAP %s ms=%d", &name, &ms); err == nil {
				res["gap_"+name] = strconv.FormatInt(ms, 10)
			}
		}
	}
	if res["ops"] == "" {
		t.Fatalf("etcd-check printed no CHECK line")
	}
	return res
}

// updateFleetSet applies mutate to the FleetSet, retrying on conflicts.
func (r *etcdRun) updateFleetSet(t *testing.T, mutate func(*fleetv1.FleetSet)) {
	t.Helper()
	eventually(t, time.Minute, "FleetSet updated", func(ctx context.Context) (bool, string, error) {
		fs := &fleetv1.FleetSet{}
		if err := r.f.hub.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: "etcd"}, fs); err != nil {
			return false, "", err
		}
		mutate(fs)
		if err := r.f.hub.Update(ctx, fs); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// rollout changes the template with mutate and waits until every instance
// runs it and the fleet is healthy; the window of the rollout is named
// name for etcd-check's longest write gap.
func (r *etcdRun) rollout(t *testing.T, name string, mutate func(*fleetv1.FleetSet)) {
	t.Helper()
	begin := time.Now()
	r.updateFleetSet(t, mutate)
	// Every pod replaced (created after the update), Ready, in the cluster.
	eventually(t, 15*time.Minute, "rollout "+name, func(ctx context.Context) (bool, string, error) {
		return r.healthy(ctx, 5, begin)
	})
	end := time.Now()
	r.windows = append(r.windows, fmt.Sprintf("-window=%s=%d,%d", name, begin.UnixNano(), end.UnixNano()))
	t.Logf("rollout %s took %s", name, end.Sub(begin).Round(time.Second))
}

// scale sets spec.replicas to n and waits for n healthy members.
func (r *etcdRun) scale(t *testing.T, n int32) {
	t.Helper()
	begin := time.Now()
	if r.driver != nil {
		r.driver.leaveBeforeScaleDown(t, n)
	}
	r.updateFleetSet(t, func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = n })
	r.waitHealthy(t, int(n), 10*time.Minute)
	t.Logf("scale to %d took %s", n, time.Since(begin).Round(time.Second))
}

// cut cuts FLEETSET_E2E_ETCD_CUT (default west) off, waits for five
// healthy members (the lost cluster's subset relocated, its members left
// and joined again), heals the cut and returns the seconds from the cut to
// healthy ("-1" if the provider cannot cut).
func (r *etcdRun) cut(t *testing.T) string {
	t.Helper()
	// By default the member without a client: a member that loses its
	// subset (relocated, failback Manual) holds no fleet DNS records of the
	// FleetSet any more (docs/fleet-dns.md), so a client there could not
	// find the members again after the heal.
	c := framework.EnvString("FLEETSET_E2E_ETCD_CUT", r.clusters[len(r.clusters)-1])
	ctx := framework.WithLogf(t.Context(), t.Logf)
	begin := time.Now()
	err := framework.Do(ctx, r.f.provider, framework.Action{Op: framework.OpCut, Cluster: c})
	if errors.Is(err, framework.ErrUnsupported) {
		t.Logf("cut: the %s provider cannot cut a member off; step left out", r.f.provider.Name())
		return "-1"
	}
	if err != nil {
		t.Fatalf("cut %s: %v", c, err)
	}
	defer func() {
		if err := framework.Do(context.WithoutCancel(ctx), r.f.provider, framework.Action{Op: framework.OpHeal, Cluster: c}); err != nil {
			t.Errorf("heal %s: %v", c, err)
		}
	}()
	eventually(t, 15*time.Minute, "5 healthy members outside "+c, func(ctx context.Context) (bool, string, error) {
		pods, err := r.pods(ctx)
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.cluster == c {
				return false, p.name + " still in " + c, nil
			}
		}
		return r.healthy(ctx, 5, time.Time{})
	})
	s := time.Since(begin).Seconds()
	t.Logf("cut %s: 5 healthy members after %.0f s", c, s)
	return strconv.Itoa(int(s))
}

// killLeaderNode kills (docker kill) the kind node that runs the leader,
// waits for a new leader, then starts the node again.
func (r *etcdRun) killLeaderNode(t *testing.T) {
	t.Helper()
	var l etcdPod
	eventually(t, 2*time.Minute, "the leader", func(ctx context.Context) (bool, string, error) {
		var err error
		l, err = r.leader(ctx)
		return err == nil, fmt.Sprint(err), nil
	})
	t.Logf("killing node %s (cluster %s), which runs the leader %s", l.node, l.cluster, l.name)
	if out, err := exec.Command("docker", "kill", l.node).CombinedOutput(); err != nil {
		t.Fatalf("docker kill %s: %v: %s", l.node, err, out)
	}
	begin := time.Now()
	started := false
	restart := func() {
		if started {
			return
		}
		started = true
		if out, err := exec.Command("docker", "start", l.node).CombinedOutput(); err != nil {
			t.Errorf("docker start %s: %v: %s", l.node, err, out)
		}
	}
	defer restart()
	eventually(t, 3*time.Minute, "a new leader", func(ctx context.Context) (bool, string, error) {
		nl, err := r.leader(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		return nl.name != l.name, "leader " + nl.name, nil
	})
	t.Logf("new leader after %s", time.Since(begin).Round(time.Second))
	time.Sleep(30 * time.Second)
	restart()
}

// leaderAndFleetSet returns etcd's leader and the FleetSet as the hub
// holds it; why says what is missing when there is no leader (to wait).
func (r *etcdRun) leaderAndFleetSet(ctx context.Context) (etcdPod, *fleetv1.FleetSet, string, error) {
	l, err := r.leader(ctx)
	if err != nil {
		return etcdPod{}, nil, err.Error(), nil
	}
	fs, err := r.f.getFleetSet(ctx, r.ns, "etcd")
	return l, fs, "", err
}

// requestedSwitchover asks, as an operator does (kubectl fleetset
// switchover --to), for the leader role to move to an instance in another
// cluster, and returns how long until etcd's leader was that instance and
// the hub had ended the request (annotation and
// status.requestedSwitchover gone, a SwitchoverDone event), in seconds.
func (r *etcdRun) requestedSwitchover(t *testing.T) string {
	t.Helper()
	var from, to etcdPod
	eventually(t, 2*time.Minute, "the leader, reported to the hub, and a ready instance in another cluster", func(ctx context.Context) (bool, string, error) {
		l, fs, why, err := r.leaderAndFleetSet(ctx)
		if why != "" || err != nil {
			return false, why, err
		}
		if fs.Status.Leader == nil || fs.Status.Leader.Name != l.name {
			return false, fmt.Sprintf("etcd's leader %s, status.leader %+v", l.name, fs.Status.Leader), nil
		}
		pods, err := r.pods(ctx)
		if err != nil {
			return false, "", err
		}
		for _, name := range slices.Sorted(maps.Keys(pods)) {
			if p := pods[name]; p.ready && p.cluster != l.cluster {
				from, to = l, p
				return true, "", nil
			}
		}
		return false, "no ready instance outside " + l.cluster, nil
	})
	begin := time.Now()
	out, err := r.f.kubectlFleetset(t, "", "switchover", "etcd", "--to", to.name, "--yes", "-n", r.ns)
	if err != nil {
		t.Fatalf("kubectl fleetset switchover: %v\n%s", err, out)
	}
	t.Logf("asked leader %s (%s) to hand its role to %s (%s)", from.name, from.cluster, to.name, to.cluster)
	eventually(t, 3*time.Minute, "etcd's leader "+to.name+" and the request ended", func(ctx context.Context) (bool, string, error) {
		l, fs, why, err := r.leaderAndFleetSet(ctx)
		if why != "" || err != nil {
			return false, why, err
		}
		_, pending := fs.Annotations[fleetv1.AnnotationSwitchoverTo]
		return l.name == to.name && !pending && fs.Status.RequestedSwitchover == nil,
			fmt.Sprintf("etcd's leader %s, annotation pending %t, status.requestedSwitchover %+v", l.name, pending, fs.Status.RequestedSwitchover), nil
	})
	took := time.Since(begin)
	// The hub records the event once the status that ends the request is
	// written, through client-go's asynchronous broadcaster: it may reach
	// the apiserver a moment after the status this test saw.
	eventually(t, 30*time.Second, "a SwitchoverDone event naming "+to.name, func(context.Context) (bool, string, error) {
		return r.f.hubEvent(t, r.ns, "etcd", "SwitchoverDone", "to "+to.name), "", nil
	})
	t.Logf("requested switchover done in %s: etcd's leader is %s", took.Round(100*time.Millisecond), to.name)
	return strconv.FormatFloat(took.Seconds(), 'f', 1, 64)
}

// dumpPods saves every member's pods and the etcd containers' logs (and
// the previous containers') into the log directory.
func (r *etcdRun) dumpPods(t *testing.T) {
	if load := hostLoad(); load != "" {
		_ = os.WriteFile(filepath.Join(r.logDir, "host-load.txt"), []byte(load+"\n"), 0o644)
		t.Logf("host: %s", load)
	}
	for _, c := range r.clusters {
		out, _ := exec.Command("kubectl", "--kubeconfig", r.kubecfg[c], "-n", r.ns, "get", "pods,pvc", "-o", "wide").CombinedOutput()
		_ = os.WriteFile(filepath.Join(r.logDir, c+"-pods.txt"), out, 0o644)
		out, _ = exec.Command("kubectl", "--kubeconfig", r.kubecfg[c], "-n", r.ns, "get", "pods", "-o", "yaml").CombinedOutput()
		_ = os.WriteFile(filepath.Join(r.logDir, c+"-pods.yaml"), out, 0o644)
		names, _ := exec.Command("kubectl", "--kubeconfig", r.kubecfg[c], "-n", r.ns, "get", "pods", "-l", fleetv1.LabelSet+"=etcd",
			"-o", "jsonpath={.items[*].metadata.name}").Output()
		for _, p := range strings.Fields(string(names)) {
			for _, prev := range []bool{false, true} {
				args := []string{"--kubeconfig", r.kubecfg[c], "-n", r.ns, "logs", p, "-c", "etcd"}
				suffix := ""
				if prev {
					args, suffix = append(args, "--previous"), ".previous"
				}
				if out, err := exec.Command("kubectl", args...).Output(); err == nil {
					_ = os.WriteFile(filepath.Join(r.logDir, c+"-"+p+suffix+".log"), out, 0o644)
				}
			}
		}
	}
}

// driverActions stands in for fleetset's member component where the
// deployed fleetset predates the lifecycle actions
// (FLEETSET_E2E_ETCD_ACTIONS=driver): the test runs the sample's memberJoin
// and memberLeave itself, through kubectl exec with the contract's
// environment, at the points the contract names: memberJoin once an
// instance runs on a claim that has not joined (FirstStart the first time,
// Relocated — after memberLeave Relocated — on a new claim of an instance
// that joined before, Rejoin after a scale-down); memberLeave ScaledDown
// before a scale-down.
type driverActions struct {
	r      *etcdRun
	mu     sync.Mutex
	joined map[string]string // claim UID → instance
	seen   map[string]bool   // instances that joined once
	left   map[string]bool   // instances that left by scale-down
}

var fleetMembers = []string{"etcd-east-0", "etcd-east-1", "etcd-west-1000", "etcd-west-1001", "etcd-north-2000"}

// action runs fleetset-etcd's action in pod p with the contract's
// environment plus extra, and returns its stdout and stderr.
func (d *driverActions) action(ctx context.Context, p etcdPod, action string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var fqdns []string
	for _, n := range fleetMembers {
		fqdns = append(fqdns, fmt.Sprintf("%s.etcd.%s.svc.cluster.local", n, d.r.ns))
	}
	env := append([]string{"FLEETSET_ACTION=" + action, "FLEETSET_INSTANCE_NAME=" + p.name,
		fmt.Sprintf("FLEETSET_INSTANCE_FQDN=%s.etcd.%s.svc.cluster.local", p.name, d.r.ns),
		"FLEETSET_MEMBERS=" + strings.Join(fleetMembers, ","), "FLEETSET_MEMBER_FQDNS=" + strings.Join(fqdns, ",")}, extra...)
	script := map[string]string{"memberJoin": "member-join", "memberLeave": "member-leave"}[action]
	args := append([]string{"--kubeconfig", d.r.kubecfg[p.cluster], "-n", d.r.ns, "exec", p.name, "-c", "etcd", "--", "env"}, env...)
	out, err := exec.CommandContext(ctx, "kubectl", append(args, "fleetset-etcd", script)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// claim returns the UID of instance p's claim.
func (d *driverActions) claim(ctx context.Context, p etcdPod) (string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	var c client.Client
	for _, m := range append(slices.Clone(d.r.f.members), d.r.f.spare[0]) {
		if m.name == p.cluster {
			c = m.c
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: d.r.ns, Name: "data-" + p.name}, pvc); err != nil {
		return "", err
	}
	return string(pvc.UID), nil
}

// run joins every instance that runs on a claim that has not joined, every
// two seconds, until ctx ends; instances join concurrently, one action at
// a time each.
func (d *driverActions) run(ctx context.Context, t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := map[string]bool{}
	for ctx.Err() == nil {
		pods, err := d.r.pods(ctx)
		if err == nil {
			for _, p := range pods {
				d.mu.Lock()
				b := busy[p.name]
				d.mu.Unlock()
				if b {
					continue
				}
				uid, err := d.claim(ctx, p)
				if err != nil {
					continue
				}
				d.mu.Lock()
				_, done := d.joined[uid]
				if !done {
					busy[p.name] = true
				}
				d.mu.Unlock()
				if done {
					continue
				}
				wg.Go(func() {
					d.join(ctx, t, p, uid)
					d.mu.Lock()
					delete(busy, p.name)
					d.mu.Unlock()
				})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// join runs memberJoin for instance p on claim uid (after memberLeave
// Relocated when the instance joined before on another claim).
func (d *driverActions) join(ctx context.Context, t *testing.T, p etcdPod, uid string) {
	d.mu.Lock()
	reason := "FirstStart"
	switch {
	case d.left[p.name]:
		reason = "Rejoin"
	case d.seen[p.name]:
		reason = "Relocated"
	}
	d.mu.Unlock()
	if reason == "Relocated" {
		out, err := d.action(ctx, p, "memberLeave", "FLEETSET_LEAVE_REASON=Relocated")
		t.Logf("driver: memberLeave Relocated %s (%s): %q %v", p.name, p.cluster, lastLines(out, 2), err)
		if err != nil {
			return
		}
	}
	out, err := d.action(ctx, p, "memberJoin", "FLEETSET_JOIN_REASON="+reason)
	t.Logf("driver: memberJoin %s %s (%s): %q %v", reason, p.name, p.cluster, lastLines(out, 2), err)
	if err == nil {
		d.mu.Lock()
		d.joined[uid], d.seen[p.name] = p.name, true
		delete(d.left, p.name)
		d.mu.Unlock()
	}
}

// leaveBeforeScaleDown runs memberLeave ScaledDown in every instance that
// a scale to n removes (the highest ordinals of each subset: the sample
// divides 3 as one per subset) and forgets their claims' joins.
func (d *driverActions) leaveBeforeScaleDown(t *testing.T, n int32) {
	t.Helper()
	if n != 3 {
		return
	}
	for _, name := range []string{"etcd-east-1", "etcd-west-1001"} {
		eventually(t, 3*time.Minute, "memberLeave ScaledDown "+name, func(ctx context.Context) (bool, string, error) {
			pods, err := d.r.pods(ctx)
			if err != nil {
				return false, "", err
			}
			p, ok := pods[name]
			if !ok {
				return false, "no pod", nil
			}
			out, err := d.action(ctx, p, "memberLeave", "FLEETSET_LEAVE_REASON=ScaledDown")
			t.Logf("driver: memberLeave ScaledDown %s: %q %v", name, lastLines(out, 2), err)
			if err != nil {
				return false, out, nil
			}
			d.mu.Lock()
			for uid, in := range d.joined {
				if in == name {
					delete(d.joined, uid)
				}
			}
			d.left[name] = true
			d.mu.Unlock()
			return true, "", nil
		})
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}
