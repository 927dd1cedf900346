//go:build integration

package roles_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/member/roles"
)

// The scheduler's identity, as its ServiceAccount authenticates.
const scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"

var (
	env *controlplane.Env
	cs  kubernetes.Interface
	cl  client.Client
)

var dbRoles = []fleetv1.Role{
	{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true},
	{Name: "replica", AccessMode: fleetv1.AccessReadOnly},
}

// TestMain starts etcd and kube-apiserver, applies the shipped RBAC and
// admission policies of manifests/scheduler, and runs the role controller
// as fleetset-scheduler's ServiceAccount, as the scheduler does
// (the member component, with only this controller, under leader
// election, over a pod informer, a controller-runtime SubsetPlacement
// cache and a controller-runtime client). There is no kubelet: the tests
// set the pods' status themselves, each pod's IP a loopback address of its
// own where a real HTTP role server listens.
func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	ctrllog.SetLogger(klog.Background())
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	env, err = controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	cs = kubernetes.NewForConfigOrDie(env.Config)
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	if cl, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, err
	}
	for _, f := range []string{"rbac.yaml", "admission.yaml"} {
		if err := controlplane.ApplyManifest(ctx, cl, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", f)); err != nil {
			return 0, err
		}
	}
	schedCfg := rest.CopyConfig(env.Config)
	schedCfg.Impersonate = rest.ImpersonationConfig{UserName: scheduler,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}}
	schedCS := kubernetes.NewForConfigOrDie(schedCfg)
	placements, err := cache.New(schedCfg, cache.Options{Scheme: scheme})
	if err != nil {
		return 0, err
	}
	if _, err := placements.GetInformer(ctx, &fleetv1.SubsetPlacement{}); err != nil {
		return 0, err
	}
	go func() { _ = placements.Start(ctx) }()
	if !placements.WaitForCacheSync(ctx) {
		return 0, fmt.Errorf("SubsetPlacement cache did not sync as %s", scheduler)
	}
	writer, err := client.New(schedCfg, client.Options{Scheme: scheme})
	if err != nil {
		return 0, err
	}
	factory := informers.NewSharedInformerFactory(schedCS, 0)
	pods := factory.Core().V1().Pods()
	pods.Informer()
	factory.Start(ctx.Done())
	host = member.Host{Client: schedCS, Pods: pods, Placements: placements, Writer: writer}
	ctxA, cancelA := context.WithCancel(ctx)
	stopReplicaA = cancelA
	if _, err := startReplica(ctxA, "replica-a"); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// host is what the test's scheduler lends the member component;
// stopReplicaA stops the replica TestMain started.
var (
	host         member.Host
	stopReplicaA context.CancelFunc
)

// startReplica starts, until ctx ends, one scheduler replica's member
// component running the role controller alone, under leader election as
// identity.
func startReplica(ctx context.Context, identity string) (member.Gate, error) {
	cfg := member.DefaultConfig()
	cfg.ClaimExpansion, cfg.RoleUpdates = false, false
	cfg.Identity, cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = identity, 4*time.Second, 3*time.Second, 500*time.Millisecond
	return member.New(&cfg).Start(ctx, host)
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// roleServer is an instance's role endpoint: it answers answer with code,
// or hangs when hang is set.
type roleServer struct {
	ip     string
	answer atomic.Value
	code   atomic.Int32
	hang   atomic.Bool
}

func (s *roleServer) set(role string) { s.answer.Store(role) }

func (s *roleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/role" {
		http.NotFound(w, r)
		return
	}
	if s.hang.Load() {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(int(s.code.Load()))
	_, _ = fmt.Fprintf(w, "%s\n", s.answer.Load().(string))
}

// startRoleServers starts one real HTTP server per role, each on its own
// loopback address 127.<a>.<b>.<n> (Linux routes all of 127/8 to lo), all on
// the same port, which it returns.
func startRoleServers(t *testing.T, roles ...string) ([]*roleServer, int32) {
	t.Helper()
	for range 20 {
		a, b := 100+rand.IntN(100), rand.IntN(250)
		var lns []net.Listener
		port := 0
		for i := range roles {
			ln, err := net.Listen("tcp", net.JoinHostPort(fmt.Sprintf("127.%d.%d.%d", a, b, i+1), strconv.Itoa(port)))
			if err != nil {
				break
			}
			lns = append(lns, ln)
			port = ln.Addr().(*net.TCPAddr).Port
		}
		if len(lns) < len(roles) {
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		var out []*roleServer
		for i, ln := range lns {
			rs := &roleServer{ip: ln.Addr().(*net.TCPAddr).IP.String()}
			rs.set(roles[i])
			rs.code.Store(http.StatusOK)
			srv := &http.Server{Handler: rs, ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			out = append(out, rs)
		}
		return out, int32(port)
	}
	t.Fatal("no free port on a loopback address")
	return nil, 0
}

func createPlacement(t *testing.T, ns, name string, pr *fleetv1.PlacementRoles) *fleetv1.SubsetPlacement {
	t.Helper()
	sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: fleetv1.SubsetPlacementSpec{Roles: pr}}
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	// Its StatefulSet, as the hub delivers it beside the placement (no
	// StatefulSet controller runs: createPod makes its pods).
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: appsv1.StatefulSetSpec{ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetv1.LabelPlacement: name}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{fleetv1.LabelPlacement: name}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return sp
}

// createPod creates pod <placement>-<i> of placement, with labels, as
// the StatefulSet controller does (controlled by the placement's
// StatefulSet), and, when ip is set, makes it Running with that IP (there
// is no kubelet).
func createPod(t *testing.T, ns, placement string, i int, ip string, labels map[string]string) {
	t.Helper()
	sts, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), placement, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createPodAs(t, cs, ns, fmt.Sprintf("%s-%d", placement, i), placement, ip, labels,
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: placement, UID: sts.UID, Controller: ptr.To(true)})
}

// createPodAs creates pod name labelled into placement (and labels), with
// owners, as client c, and, when ip is set, makes it Running with that IP.
func createPodAs(t *testing.T, c kubernetes.Interface, ns, name, placement, ip string, labels map[string]string, owners ...metav1.OwnerReference) {
	t.Helper()
	ctx := context.Background()
	l := map[string]string{fleetv1.LabelPlacement: placement, fleetv1.LabelSet: "db"}
	for k, v := range labels {
		l[k] = v
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l, OwnerReferences: owners},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip == "" {
		return
	}
	p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// check is a condition and what to say when it does not hold.
type check struct {
	what func() string
	cond func() bool
}

// waitFor polls cond every 100ms up to timeout, and returns how long it
// took; it fails the test with what() when it times out.
func waitFor(t *testing.T, timeout time.Duration, c check) time.Duration {
	t.Helper()
	what, cond := c.what, c.cond
	start := time.Now()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("after %s: %s", timeout, what())
	}
	return time.Since(start)
}

// podLabels returns the role and access-mode labels of each pod of ns.
func podLabels(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Labels[fleetv1.LabelRole] + "/" + p.Labels[fleetv1.LabelAccessMode]
	}
	return out
}

func labelsAre(t *testing.T, ns string, want map[string]string) check {
	var got map[string]string
	return check{func() string { return fmt.Sprintf("pod role/access-mode labels %v, want %v", got, want) },
		func() bool {
			got = podLabels(t, ns)
			for k, v := range want {
				if got[k] != v {
					return false
				}
			}
			return true
		}}
}

func statusIs(t *testing.T, ns, name, roles, leaders string) check {
	var sp fleetv1.SubsetPlacement
	return check{func() string {
		return fmt.Sprintf("status %+v (generation %d), want roles %q leaders %q", sp.Status, sp.Generation, roles, leaders)
	}, func() bool {
		if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &sp); err != nil {
			t.Fatal(err)
		}
		return sp.Status.Roles == roles && sp.Status.Leaders == leaders && sp.Status.ObservedGeneration == sp.Generation
	}}
}

// events returns the reasons of the events.k8s.io events on pod.
func events(t *testing.T, ns, pod string) []string {
	t.Helper()
	list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

func hasEvent(t *testing.T, ns, pod, reason string) check {
	var got []string
	return check{func() string { return fmt.Sprintf("events on pod %s: %q, want one %s", pod, got, reason) },
		func() bool {
			got = events(t, ns, pod)
			for _, e := range got {
				if len(e) > len(reason) && e[:len(reason)+1] == reason+":" {
					return true
				}
			}
			return false
		}}
}

// TestRoleProbe: the member probes each instance's real role server every
// periodSeconds and labels the pod with the role it answers, moving the
// label when the role moves; an unknown role and a failing probe (an error
// status, a timeout) leave the label as it is, each with a Warning event;
// the placement's status sums the roles up.
func TestRoleProbe(t *testing.T) {
	ns := newNamespace(t, "probe")
	servers, port := startRoleServers(t, "primary", "replica", "replica")
	const period = time.Second
	createPlacement(t, ns, "db", &fleetv1.PlacementRoles{Roles: dbRoles, Probe: &fleetv1.RoleProbe{
		HTTPGet: fleetv1.RoleProbeHTTPGet{Port: port, Path: "/v1/role"}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 2}})
	for i, s := range servers {
		createPod(t, ns, "db", i, s.ip, nil)
	}
	took := waitFor(t, 10*time.Second, labelsAre(t, ns, map[string]string{"db-0": "primary/ReadWrite", "db-1": "replica/ReadOnly", "db-2": "replica/ReadOnly"}))
	t.Logf("pods labelled with their roles %s after they started running", took.Round(10*time.Millisecond))
	took = waitFor(t, 5*time.Second, statusIs(t, ns, "db", "db-0=primary,db-1=replica,db-2=replica", "db-0"))
	t.Logf("status roles and leaders %s later", took.Round(10*time.Millisecond))

	// A switchover: the label moves within a period (plus the patch).
	servers[0].set("replica")
	servers[1].set("primary")
	took = waitFor(t, 5*time.Second, labelsAre(t, ns, map[string]string{"db-0": "replica/ReadOnly", "db-1": "primary/ReadWrite"}))
	t.Logf("switchover: labels moved %s after the role servers changed (period %s)", took.Round(10*time.Millisecond), period)
	if took > period+time.Second {
		t.Errorf("the labels followed the roles after %s, want within the period %s (and 1s of slack)", took, period)
	}
	waitFor(t, 3*time.Second, statusIs(t, ns, "db", "db-0=replica,db-1=primary,db-2=replica", "db-1"))

	// An unknown role: an event, the label left as it is.
	servers[2].set("witness")
	waitFor(t, 5*time.Second, hasEvent(t, ns, "db-2", roles.ReasonUnknownRole))
	time.Sleep(2 * period)
	if got := podLabels(t, ns)["db-2"]; got != "replica/ReadOnly" {
		t.Errorf("db-2 answering an unknown role: labels %s, want replica/ReadOnly kept", got)
	}
	if n := len(events(t, ns, "db-2")); n != 1 {
		t.Errorf("db-2 answering an unknown role for 3 periods: %d events, want 1", n)
	}

	// A failing probe (503 on db-1, no answer within the timeout on db-0):
	// after failureThreshold failures an event; the last role is kept.
	servers[1].code.Store(http.StatusServiceUnavailable)
	servers[0].hang.Store(true)
	took = waitFor(t, 10*time.Second, hasEvent(t, ns, "db-1", roles.ReasonRoleProbeFailed))
	t.Logf("RoleProbeFailed on db-1 %s after it began answering 503", took.Round(10*time.Millisecond))
	waitFor(t, 10*time.Second, hasEvent(t, ns, "db-0", roles.ReasonRoleProbeFailed))
	time.Sleep(2 * period)
	waitFor(t, time.Second, labelsAre(t, ns, map[string]string{"db-0": "replica/ReadOnly", "db-1": "primary/ReadWrite", "db-2": "replica/ReadOnly"}))
	waitFor(t, time.Second, statusIs(t, ns, "db", "db-0=replica,db-1=primary,db-2=replica", "db-1"))
	for _, p := range []string{"db-0", "db-1"} {
		n := 0
		for _, e := range events(t, ns, p) {
			if len(e) > len(roles.ReasonRoleProbeFailed) && e[:len(roles.ReasonRoleProbeFailed)] == roles.ReasonRoleProbeFailed {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s failing for several periods: %d RoleProbeFailed events, want 1", p, n)
		}
	}

	// Back: db-0 answers primary again and takes the label and the lead.
	servers[0].hang.Store(false)
	servers[0].set("primary")
	servers[1].code.Store(http.StatusOK)
	servers[1].set("replica")
	waitFor(t, 5*time.Second, labelsAre(t, ns, map[string]string{"db-0": "primary/ReadWrite", "db-1": "replica/ReadOnly"}))
	waitFor(t, 3*time.Second, statusIs(t, ns, "db", "db-0=primary,db-1=replica,db-2=replica", "db-0"))
}

// TestLabelContract: without a probe, the workload labels its own pods
// fleetset.io/role (as a ServiceAccount allowed to patch its pods, under the
// add-on's admission policy) and the member sums the labels up in the
// placement's status within a second or two; pods that are not running are
// left out, and a placement without roles gets no status.
func TestLabelContract(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "contract")
	createPlacement(t, ns, "db", &fleetv1.PlacementRoles{Roles: dbRoles})
	createPlacement(t, ns, "plain", nil)
	createPod(t, ns, "db", 0, "127.0.0.1", nil)
	createPod(t, ns, "db", 1, "127.0.0.1", nil)
	createPod(t, ns, "db", 2, "", map[string]string{fleetv1.LabelRole: "primary"}) // Pending
	createPod(t, ns, "plain", 0, "127.0.0.1", map[string]string{fleetv1.LabelRole: "primary"})

	// The workload's identity: patch on its pods, nothing else.
	workload := "system:serviceaccount:" + ns + ":db"
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "db-role-label"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "db-role-label"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "db"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "db-role-label"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: workload, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	wl := kubernetes.NewForConfigOrDie(cfg)
	// The RBAC authorizer sees the new binding a moment later (2026-11-27
	// CI: the first patch was forbidden): wait until it allows the patch.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := wl.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "patch", Resource: "pods", Name: "db-0"}}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	}); err != nil {
		t.Fatalf("the workload's RoleBinding did not take effect within 10s: %v", err)
	}
	label := func(pod, role string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fleetv1.LabelRole, role)
		if _, err := wl.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("the workload labelling its pod %s %s=%s: %v", pod, fleetv1.LabelRole, role, err)
		}
	}
	label("db-0", "primary")
	took := waitFor(t, 5*time.Second, statusIs(t, ns, "db", "db-0=primary", "db-0"))
	t.Logf("a role the workload set shows in the placement's status %s later", took.Round(10*time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("status followed the label after %s, want within 2s", took)
	}
	label("db-1", "replica")
	waitFor(t, 3*time.Second, statusIs(t, ns, "db", "db-0=primary,db-1=replica", "db-0"))
	// A switchover by the workload; a role outside spec.roles is not counted.
	label("db-0", "witness")
	label("db-1", "primary")
	waitFor(t, 3*time.Second, statusIs(t, ns, "db", "db-1=primary", "db-1"))

	var plain fleetv1.SubsetPlacement
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: "plain"}, &plain); err != nil {
		t.Fatal(err)
	}
	if plain.Status != (fleetv1.SubsetPlacementStatus{}) {
		t.Errorf("placement without roles: status %+v, want none", plain.Status)
	}
	// Roles removed: the status is cleared.
	if err := cl.Patch(ctx, &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"roles":null}}`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, statusIs(t, ns, "db", "", ""))
}

// TestForgedPodIsNeverLeader (issue 48): pods labelled into a placement
// with roles and a probe, Running, whose role servers answer the leader
// role, are never probed, labelled nor counted unless the placement's
// StatefulSet controls them: a bare pod created with the placement, set
// and pod-index labels, and one with an ownerReference naming the StatefulSet with another UID
// that also carries fleetset.io/role=primary itself. The status names the
// real instances only, and its leader is the real one.
func TestForgedPodIsNeverLeader(t *testing.T) {
	ns := newNamespace(t, "forged")
	servers, port := startRoleServers(t, "primary", "replica", "primary", "primary")
	createPlacement(t, ns, "db", &fleetv1.PlacementRoles{Roles: dbRoles, Probe: &fleetv1.RoleProbe{
		HTTPGet: fleetv1.RoleProbeHTTPGet{Port: port, Path: "/v1/role"}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 2}})
	// The forged pods are written by a cluster administrator: the add-on's
	// admission policy refuses them from a namespace editor
	// (fleetset-pod-labels, TestPodLabelsAdmission), so they stand for a pod
	// that got past that first layer (a cluster without the add-on's
	// policies, an administrator's mistake): the member must still not
	// trust its labels.
	// The forged pods first: the real ones' events then sync the status
	// with the forged ones in the cache.
	createPodAs(t, cs, ns, "db-7", "db", servers[2].ip, map[string]string{fleetv1.LabelPodIndex: "7"})
	createPodAs(t, cs, ns, "db-5", "db", servers[3].ip, map[string]string{fleetv1.LabelPodIndex: "5", fleetv1.LabelRole: "primary", fleetv1.LabelAccessMode: "ReadWrite"},
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "0b7c2f5e-0000-4000-8000-000000000000", Controller: ptr.To(true)})
	createPod(t, ns, "db", 0, servers[0].ip, nil)
	createPod(t, ns, "db", 1, servers[1].ip, nil)
	waitFor(t, 10*time.Second, statusIs(t, ns, "db", "db-0=primary,db-1=replica", "db-0"))
	time.Sleep(3 * time.Second) // three probe periods
	waitFor(t, time.Second, statusIs(t, ns, "db", "db-0=primary,db-1=replica", "db-0"))
	if got := podLabels(t, ns)["db-7"]; got != "/" {
		t.Errorf("the forged pod db-7 was labelled %s: it was probed", got)
	}
}

// holder returns the holder of the member controllers' Lease.
func holder(t *testing.T) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(context.Background(), fleetv1.MemberControllersLeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestOneReplicaRunsTheControllers starts a second scheduler replica's
// member component beside TestMain's: the first keeps the Lease and the
// second runs no controller; when the first stops, the second takes the
// Lease and its role controller follows the workload's labels. It runs
// last: it stops TestMain's replica.
func TestOneReplicaRunsTheControllers(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "replicas")
	createPlacement(t, ns, "db", &fleetv1.PlacementRoles{Roles: dbRoles})
	createPod(t, ns, "db", 0, "127.0.0.1", nil)
	createPod(t, ns, "db", 1, "127.0.0.1", nil)
	label := func(pod, role string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fleetv1.LabelRole, role)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	if _, err := startReplica(ctxB, "replica-b"); err != nil {
		t.Fatal(err)
	}
	label("db-0", "primary")
	waitFor(t, 5*time.Second, statusIs(t, ns, "db", "db-0=primary", "db-0"))
	// Four retry periods of replica b: it has not taken the Lease.
	time.Sleep(2 * time.Second)
	if h := holder(t); h != "replica-a" {
		t.Fatalf("Lease %s held by %q with both replicas up, want replica-a (which started first)", fleetv1.MemberControllersLeaseName, h)
	}

	stopReplicaA()
	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return holder(t) == "replica-b", nil
	}); err != nil {
		t.Fatalf("replica-b did not take the Lease within 10s of replica-a stopping (holder %q)", holder(t))
	}
	t.Logf("replica-b took the Lease %s after replica-a stopped", time.Since(start).Round(10*time.Millisecond))
	label("db-0", "replica")
	label("db-1", "primary")
	took := waitFor(t, 5*time.Second, statusIs(t, ns, "db", "db-0=replica,db-1=primary", "db-1"))
	t.Logf("replica-b's role controller followed a switchover %s after it", took.Round(10*time.Millisecond))
}
