//go:build integration

package membership_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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
	"github.com/fleetset/fleetset/member/membership"
)

// The scheduler's identity, as its ServiceAccount authenticates.
const scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"

var (
	// envConfig is the apiserver's admin config.
	envConfig *rest.Config
	cs        kubernetes.Interface
	schedCS   kubernetes.Interface
	cl        client.Client
	exec      = &recorder{}
)

// recorder is the member component's Executor in these tests: there is no
// kubelet, so no pods/exec stream. Each call first asks the apiserver
// whether fleetset-scheduler's ServiceAccount may create pods/exec in the
// pod's namespace (the shipped RBAC; a refusal fails the call as the real
// stream would), records the call, and answers with the test's answer
// function for the action (FLEETSET_ACTION).
type recorder struct {
	mu     sync.Mutex
	calls  []call
	answer func(c call) (string, error)
}

// call is one exec: the pod, container and the environment and command of
// its argv (env NAME=VALUE ... command...).
type call struct {
	Namespace, Pod, Container string
	Env                       map[string]string
	Command                   []string
}

func (r *recorder) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, _ io.Writer) error {
	for _, verb := range []string{"create", "get"} {
		sar, err := schedCS.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Resource: "pods", Subresource: "exec", Name: pod}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("pods/exec %s refused to %s: %s", verb, scheduler, sar.Status.Reason)
		}
	}
	c := call{Namespace: ns, Pod: pod, Container: container, Env: map[string]string{}}
	if len(argv) == 0 || argv[0] != "env" {
		return fmt.Errorf("argv %q does not start with env", argv)
	}
	i := 1
	for ; i < len(argv); i++ {
		k, v, ok := strings.Cut(argv[i], "=")
		if !ok || !strings.HasPrefix(k, "FLEETSET_") {
			break
		}
		c.Env[k] = v
	}
	c.Command = argv[i:]
	r.mu.Lock()
	r.calls = append(r.calls, c)
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		return nil
	}
	out, err := answer(c)
	_, _ = io.WriteString(stdout, out)
	return err
}

func (r *recorder) setAnswer(f func(c call) (string, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = f
}

// callsIn returns the calls made in namespace ns, in order.
func (r *recorder) callsIn(ns string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.Namespace == ns {
			out = append(out, c)
		}
	}
	return out
}

// TestMain starts etcd and kube-apiserver, applies the shipped RBAC and
// admission policies of manifests/scheduler, and runs the member component
// as fleetset-scheduler's ServiceAccount with the roles and lifecycle
// action controllers, over a pod informer, a SubsetPlacement cache and a
// controller-runtime client, with the recording Executor. There is no
// kubelet: the tests set the pods' status themselves.
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
	env, err := controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	cs = kubernetes.NewForConfigOrDie(env.Config)
	envConfig = env.Config
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
	schedCS = kubernetes.NewForConfigOrDie(schedCfg)
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
	cfg := member.DefaultConfig()
	cfg.ClaimExpansion, cfg.RoleUpdates, cfg.LeaderElect, cfg.FleetDNS = false, false, false, false
	host := member.Host{Client: schedCS, Pods: pods, Placements: placements, Writer: writer, ActionExecutor: exec}
	if _, err := member.New(&cfg).Start(ctx, host); err != nil {
		return 0, err
	}
	return m.Run(), nil
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

var dbRoles = []fleetv1.Role{
	{Name: "leader", AccessMode: fleetv1.AccessReadWrite, IsLeader: true},
	{Name: "follower", AccessMode: fleetv1.AccessReadOnly},
}

func action(cmd ...string) *fleetv1.LifecycleAction {
	return &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Container: "db", Command: cmd}}
}

// createPlacement creates SubsetPlacement db-east in ns with actions pa
// (and roles, when roles is set).
func createPlacement(t *testing.T, ns string, pa *fleetv1.PlacementActions, roles bool) {
	t.Helper()
	sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: fleetv1.SubsetPlacementSpec{Actions: pa}}
	if roles {
		sp.Spec.Roles = &fleetv1.PlacementRoles{Roles: dbRoles}
	}
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
}

// createStatefulSet creates StatefulSet db-east (labelled fleetset.io/set)
// with replicas: its desired ordinals are the ones that may join. No
// StatefulSet controller runs; the tests create the pods.
func createStatefulSet(t *testing.T, ns string, replicas int32) {
	t.Helper()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetv1.LabelPlacement: "db-east"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{fleetv1.LabelPlacement: "db-east"}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "etcd"}}}}}}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createClaim creates claim data-db-east-<i> with annotations.
func createClaim(t *testing.T, ns string, i int, annotations map[string]string) {
	t.Helper()
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("data-db-east-%d", i), Annotations: annotations},
		Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createPod creates pod db-east-<i> (containers db and sidecar, the
// member-joined readiness gate, claim data-db-east-<i> when claim) and
// makes it Running, its containers running, Ready as ready says (there is
// no kubelet). It returns the pod's UID.
func createPod(t *testing.T, ns string, i int, claim, ready bool) types.UID {
	t.Helper()
	ctx := context.Background()
	// Controlled by StatefulSet db-east, as its controller makes them (a
	// test that did not create it gets one of 2 replicas).
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db-east", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		createStatefulSet(t, ns, 2)
		sts, err = cs.AppsV1().StatefulSets(ns).Get(ctx, "db-east", metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return createPodAs(t, cs, ns, fmt.Sprintf("db-east-%d", i), fmt.Sprint(i), claim, ready,
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: sts.UID, Controller: ptr.To(true)})
}

// createPodAs creates pod name (labelled into db-east with pod-index
// index, with owners) as c, and makes it Running as createPod does.
func createPodAs(t *testing.T, c kubernetes.Interface, ns, name, index string, claim, ready bool, owners ...metav1.OwnerReference) types.UID {
	t.Helper()
	ctx := context.Background()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, Labels: map[string]string{
		fleetv1.LabelPlacement: "db-east", fleetv1.LabelSet: "db", "apps.kubernetes.io/pod-index": index}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "etcd"}, {Name: "sidecar", Image: "pause"}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: fleetv1.ConditionMemberJoined}}}}
	if claim {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}}}
	}
	p, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readyStatus := v1.ConditionFalse
	if ready {
		readyStatus = v1.ConditionTrue
	}
	now := metav1.Now()
	p.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: fmt.Sprintf("10.0.%d.%s", len(owners), index),
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: readyStatus, LastTransitionTime: now}},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "db", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}},
			{Name: "sidecar", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return p.UID
}

func waitFor(t *testing.T, timeout time.Duration, what func() string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("after %s: %s", timeout, what())
	}
}

func pod(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func claim(t *testing.T, ns, name string) *v1.PersistentVolumeClaim {
	t.Helper()
	c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func placementStatus(t *testing.T, ns string) fleetv1.PlacementActionsStatus {
	t.Helper()
	var sp fleetv1.SubsetPlacement
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}, &sp); err != nil {
		t.Fatal(err)
	}
	if sp.Status.Actions == nil {
		return fleetv1.PlacementActionsStatus{}
	}
	return *sp.Status.Actions
}

func events(t *testing.T, ns string) []string {
	t.Helper()
	list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason+": "+e.Note)
	}
	return out
}

func hasEvent(t *testing.T, ns, regarding, reason string) func() bool {
	return func() bool {
		return slices.ContainsFunc(events(t, ns), func(e string) bool { return strings.HasPrefix(e, regarding+" "+reason+":") })
	}
}

// actionsOf returns the FLEETSET_ACTION of each call in ns, as
// "<action>/<pod>[/<reason>]".
func actionsOf(ns string) []string {
	var out []string
	for _, c := range exec.callsIn(ns) {
		s := c.Env[fleetv1.EnvAction] + "/" + c.Pod
		if r := c.Env[fleetv1.EnvJoinReason] + c.Env[fleetv1.EnvLeaveReason]; r != "" {
			s += "/" + r
		}
		out = append(out, s)
	}
	return out
}

func members(fs string, ordinals ...int) []string {
	var out []string
	for _, o := range ordinals {
		out = append(out, fmt.Sprintf("%s-%d", fs, o))
	}
	return out
}

// TestMemberJoin: a first start runs memberJoin once in the pod's own
// container with reason FirstStart and the fleet's environment; the member
// then sets the readiness gate's condition True and marks the claim joined
// (the pod's UID, the epoch) and status.actions.joined. The same instance
// re-created on its joined claim (a restart) gets the condition at once,
// without running the action again.
func TestMemberJoin(t *testing.T) {
	ns := newNamespace(t, "join")
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1),
		Actions: fleetv1.LifecycleActions{MemberJoin: action("/join.sh")}}, false)
	createStatefulSet(t, ns, 1)
	createClaim(t, ns, 0, nil)
	uid := createPod(t, ns, 0, true, false)
	joined := func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-0")) }
	waitFor(t, 10*time.Second, func() string {
		return fmt.Sprintf("pod conditions %+v, calls %v", pod(t, ns, "db-east-0").Status.Conditions, actionsOf(ns))
	}, joined)
	calls := exec.callsIn(ns)
	if len(calls) != 1 {
		t.Fatalf("want one memberJoin, got %v", actionsOf(ns))
	}
	c := calls[0]
	want := map[string]string{
		"FLEETSET_ACTION": "memberJoin", "FLEETSET_INSTANCE_NAME": "db-east-0", "FLEETSET_INSTANCE_ORDINAL": "0",
		"FLEETSET_INSTANCE_FQDN": "db-east-0.db." + ns + ".svc.cluster.local", "FLEETSET_MEMBERS": "db-east-0,db-east-1",
		"FLEETSET_MEMBER_FQDNS": "db-east-0.db." + ns + ".svc.cluster.local,db-east-1.db." + ns + ".svc.cluster.local",
		"FLEETSET_LEADER_NAME":  "", "FLEETSET_LEADER_FQDN": "", "FLEETSET_JOIN_REASON": "FirstStart"}
	for k, v := range want {
		if c.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, c.Env[k], v)
		}
	}
	if c.Container != "db" || !slices.Equal(c.Command, []string{"/join.sh"}) {
		t.Errorf("exec in container %q command %q, want db [/join.sh]", c.Container, c.Command)
	}
	pvc := claim(t, ns, "data-db-east-0")
	if pvc.Annotations[fleetv1.AnnotationMemberJoined] != string(uid) || pvc.Annotations[fleetv1.AnnotationMemberJoinedEpoch] != "0" {
		t.Errorf("claim annotations %v, want member-joined=%s, epoch 0", pvc.Annotations, uid)
	}
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("status.actions %+v, want joined 0", placementStatus(t, ns)) },
		func() bool { return placementStatus(t, ns).Joined == "0" })
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("events %q", events(t, ns)) }, hasEvent(t, ns, "Pod/db-east-0", membership.ReasonMemberJoined))

	// A restart: a new pod on the joined claim.
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), "db-east-0", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() string { return "the pod is not gone" }, func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(context.Background(), "db-east-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	createPod(t, ns, 0, true, false)
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("pod conditions %+v", pod(t, ns, "db-east-0").Status.Conditions) }, joined)
	if got := actionsOf(ns); len(got) != 1 {
		t.Errorf("restart on a joined claim: calls %v, want the first join only", got)
	}
}

// TestMemberJoinFailureHolds: a failing memberJoin leaves the readiness
// gate's condition unset (the pod stays not Ready) with a Warning event,
// is tried again, and the condition is set once it succeeds; an instance
// without claims is marked joined on its pod.
func TestMemberJoinFailureHolds(t *testing.T) {
	ns := newNamespace(t, "joinfail")
	var fail sync.Map
	fail.Store(ns, true)
	exec.setAnswer(func(c call) (string, error) {
		if v, _ := fail.Load(c.Namespace); v == true {
			return "", errors.New("command terminated with exit code 1")
		}
		return "", nil
	})
	t.Cleanup(func() { exec.setAnswer(nil) })
	a := action("/join.sh")
	a.Retries = new(int32)
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Actions: fleetv1.LifecycleActions{MemberJoin: a}}, false)
	createStatefulSet(t, ns, 1)
	uid := createPod(t, ns, 0, false, false)
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("events %q", events(t, ns)) }, hasEvent(t, ns, "Pod/db-east-0", membership.ReasonMemberJoinFailed))
	if membership.ConditionTrue(pod(t, ns, "db-east-0")) {
		t.Fatal("the member-joined condition is True after a failed memberJoin")
	}
	fail.Store(ns, false)
	waitFor(t, 20*time.Second, func() string { return fmt.Sprintf("calls %v", actionsOf(ns)) }, func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-0")) })
	if got := pod(t, ns, "db-east-0").Annotations[fleetv1.AnnotationMemberJoined]; got != string(uid) {
		t.Errorf("pod annotation member-joined=%q, want its UID %s", got, uid)
	}
	if n := len(actionsOf(ns)); n < 2 {
		t.Errorf("want the failed join tried again, got calls %v", actionsOf(ns))
	}
}

// TestRelocatedJoin: an instance of a relocated subset (spec.actions.origin)
// starting on a claim joined at an older epoch runs memberLeave (reason
// Relocated) and then memberJoin (reason Relocated) in its own pod, and its
// claim is marked joined at the new epoch.
func TestRelocatedJoin(t *testing.T) {
	ns := newNamespace(t, "relocated")
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Epoch: 2,
		Origin:  &fleetv1.SubsetOrigin{Cluster: "west", Epoch: 2, Reason: fleetv1.LeaveRelocated},
		Actions: fleetv1.LifecycleActions{MemberJoin: action("/join.sh"), MemberLeave: action("/leave.sh")}}, false)
	createStatefulSet(t, ns, 1)
	createClaim(t, ns, 0, map[string]string{fleetv1.AnnotationMemberJoined: "old-uid", fleetv1.AnnotationMemberJoinedEpoch: "0"})
	createPod(t, ns, 0, true, false)
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("calls %v", actionsOf(ns)) }, func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-0")) })
	want := []string{"memberLeave/db-east-0/Relocated", "memberJoin/db-east-0/Relocated"}
	if got := actionsOf(ns); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if got := claim(t, ns, "data-db-east-0").Annotations[fleetv1.AnnotationMemberJoinedEpoch]; got != "2" {
		t.Errorf("claim joined at epoch %q, want 2", got)
	}
}

// TestRelocatedJoinHeldByFailedLeave: memberLeave, which a relocated
// instance runs before it joins (reason Relocated), gates memberJoin: while
// it fails, memberJoin does not run, the claim stays joined at its old
// epoch and the pod not Ready (a Warning event MemberLeaveFailed on the
// pod); once it succeeds (retried after the backoff), memberJoin runs.
func TestRelocatedJoinHeldByFailedLeave(t *testing.T) {
	ns := newNamespace(t, "leavegate")
	var fail sync.Map
	fail.Store(ns, true)
	exec.setAnswer(func(c call) (string, error) {
		if v, _ := fail.Load(c.Namespace); v == true && c.Env[fleetv1.EnvAction] == string(fleetv1.ActionMemberLeave) {
			return "", errors.New("command terminated with exit code 1")
		}
		return "", nil
	})
	t.Cleanup(func() { exec.setAnswer(nil) })
	leave := action("/leave.sh")
	leave.Retries = new(int32)
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Epoch: 2,
		Origin:  &fleetv1.SubsetOrigin{Cluster: "west", Epoch: 2, Reason: fleetv1.LeaveRelocated},
		Actions: fleetv1.LifecycleActions{MemberJoin: action("/join.sh"), MemberLeave: leave}}, false)
	createStatefulSet(t, ns, 1)
	createClaim(t, ns, 0, map[string]string{fleetv1.AnnotationMemberJoined: "old-uid", fleetv1.AnnotationMemberJoinedEpoch: "0"})
	createPod(t, ns, 0, true, false)
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("events %q", events(t, ns)) }, hasEvent(t, ns, "Pod/db-east-0", membership.ReasonMemberLeaveFailed))
	if got := actionsOf(ns); !slices.Equal(got, []string{"memberLeave/db-east-0/Relocated"}) {
		t.Errorf("calls after the failed leave %v, want the leave only (no memberJoin before a successful leave)", got)
	}
	if membership.ConditionTrue(pod(t, ns, "db-east-0")) {
		t.Error("the member-joined condition is True after the leave before joining failed")
	}
	if got := claim(t, ns, "data-db-east-0").Annotations[fleetv1.AnnotationMemberJoinedEpoch]; got != "0" {
		t.Errorf("claim joined at epoch %q after the failed leave, want still 0", got)
	}
	fail.Store(ns, false)
	waitFor(t, 20*time.Second, func() string { return fmt.Sprintf("calls %v", actionsOf(ns)) }, func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-0")) })
	want := []string{"memberLeave/db-east-0/Relocated", "memberLeave/db-east-0/Relocated", "memberJoin/db-east-0/Relocated"}
	if got := actionsOf(ns); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

// TestMemberLeave: the ordinals the hub lists in spec.actions.leave run
// memberLeave (ScaledDown) in their own pod; once it succeeded the member
// reports them in status.actions.left and marks their claims left (no
// longer joined), so that a later scale-up joins again with reason Rejoin.
// A failing leave is reported in status.actions.leaveFailed.
func TestMemberLeave(t *testing.T) {
	ns := newNamespace(t, "leave")
	exec.setAnswer(func(c call) (string, error) {
		if c.Namespace == ns && c.Pod == "db-east-2" && c.Env[fleetv1.EnvAction] == string(fleetv1.ActionMemberLeave) {
			return "", errors.New("command terminated with exit code 2")
		}
		return "", nil
	})
	t.Cleanup(func() { exec.setAnswer(nil) })
	leave := action("/leave.sh")
	leave.Retries = new(int32)
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1, 2),
		Leave:   []fleetv1.PlacementLeave{{Ordinal: 1, Reason: fleetv1.LeaveScaledDown}},
		Actions: fleetv1.LifecycleActions{MemberJoin: action("/join.sh"), MemberLeave: leave}}, false)
	createStatefulSet(t, ns, 3)
	for i := range 3 {
		createClaim(t, ns, i, map[string]string{fleetv1.AnnotationMemberJoined: "uid", fleetv1.AnnotationMemberJoinedEpoch: "0"})
		createPod(t, ns, i, true, true)
	}
	waitFor(t, 10*time.Second, func() string {
		return fmt.Sprintf("status.actions %+v, calls %v", placementStatus(t, ns), actionsOf(ns))
	},
		func() bool { return placementStatus(t, ns).Left == "1" })
	c := exec.callsIn(ns)[0]
	if c.Pod != "db-east-1" || c.Env[fleetv1.EnvLeaveReason] != "ScaledDown" || c.Env[fleetv1.EnvMembers] != "db-east-0,db-east-2" {
		t.Errorf("leave call %+v: want in db-east-1, reason ScaledDown, members without it", c)
	}
	ann := claim(t, ns, "data-db-east-1").Annotations
	if ann[fleetv1.AnnotationMemberJoined] != "" || ann[fleetv1.AnnotationMemberLeft] != "ScaledDown" {
		t.Errorf("left claim annotations %v, want no member-joined and member-left=ScaledDown", ann)
	}
	if len(actionsOf(ns)) != 1 {
		t.Errorf("calls %v, want only db-east-1's leave (the others' claims joined)", actionsOf(ns))
	}
	waitFor(t, 5*time.Second, func() string {
		return fmt.Sprintf("db-east-1 conditions %+v", pod(t, ns, "db-east-1").Status.Conditions)
	}, func() bool {
		for _, c := range pod(t, ns, "db-east-1").Status.Conditions {
			if c.Type == fleetv1.ConditionMemberJoined {
				return c.Status == v1.ConditionFalse
			}
		}
		return false
	})
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("events %q", events(t, ns)) }, hasEvent(t, ns, "SubsetPlacement/db-east", membership.ReasonMemberLeft))

	// The hub asks ordinal 2 to leave too; its leave fails.
	var sp fleetv1.SubsetPlacement
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}, &sp); err != nil {
		t.Fatal(err)
	}
	sp.Spec.Actions.Leave = append(sp.Spec.Actions.Leave, fleetv1.PlacementLeave{Ordinal: 2, Reason: fleetv1.LeaveScaledDown})
	if err := cl.Update(context.Background(), &sp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("status.actions %+v", placementStatus(t, ns)) },
		func() bool { return strings.Contains(placementStatus(t, ns).LeaveFailed, "db-east-2") })
	if got := placementStatus(t, ns).Left; got != "1" {
		t.Errorf("left %q while 2 fails, want 1", got)
	}
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("events %q", events(t, ns)) }, hasEvent(t, ns, "SubsetPlacement/db-east", membership.ReasonMemberLeaveFailed))

	// The scale-down is taken back (replicas raised again): the hub no
	// longer lists the leavers; db-east-1, which left but still runs,
	// joins again (Rejoin) and is Ready again.
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}, &sp); err != nil {
		t.Fatal(err)
	}
	sp.Spec.Actions.Leave = nil
	if err := cl.Update(context.Background(), &sp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("calls %v", actionsOf(ns)) }, func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-1")) })
	if !slices.Contains(actionsOf(ns), "memberJoin/db-east-1/Rejoin") {
		t.Errorf("calls %v, want db-east-1 to join again with reason Rejoin", actionsOf(ns))
	}
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("status.actions %+v", placementStatus(t, ns)) },
		func() bool { s := placementStatus(t, ns); return s.Left == "" && s.LeaveFailed == "" })
}

// TestExecRoleProbe: with the roleProbe lifecycle action, the member runs it
// in every running instance and labels each pod with the role its stdout
// names.
func TestExecRoleProbe(t *testing.T) {
	ns := newNamespace(t, "roleprobe")
	exec.setAnswer(func(c call) (string, error) {
		if c.Env[fleetv1.EnvAction] != string(fleetv1.ActionRoleProbe) {
			return "", nil
		}
		if c.Pod == "db-east-1" {
			return "leader\n", nil
		}
		return "follower", nil
	})
	t.Cleanup(func() { exec.setAnswer(nil) })
	probe := action("etcdctl", "endpoint", "status")
	probe.PeriodSeconds = 1
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Actions: fleetv1.LifecycleActions{RoleProbe: probe}}, true)
	for i := range 2 {
		createPod(t, ns, i, false, true)
	}
	waitFor(t, 10*time.Second, func() string {
		return fmt.Sprintf("labels %v %v", pod(t, ns, "db-east-0").Labels, pod(t, ns, "db-east-1").Labels)
	}, func() bool {
		return pod(t, ns, "db-east-0").Labels[fleetv1.LabelRole] == "follower" && pod(t, ns, "db-east-1").Labels[fleetv1.LabelRole] == "leader" &&
			pod(t, ns, "db-east-1").Labels[fleetv1.LabelAccessMode] == "ReadWrite"
	})
	var sp fleetv1.SubsetPlacement
	waitFor(t, 5*time.Second, func() string { return fmt.Sprintf("status %+v", sp.Status) }, func() bool {
		_ = cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}, &sp)
		return sp.Status.Leaders == "db-east-1"
	})
}

// TestAnyLiveJoin: memberJoin with target AnyLive runs at once, for an
// instance whose container does not run yet, in another Ready instance of
// the FleetSet (FLEETSET_INSTANCE_NAME the joining one); the joining pod
// gets the condition.
func TestAnyLiveJoin(t *testing.T) {
	ns := newNamespace(t, "anylive")
	join := action("/join.sh")
	join.Target = fleetv1.TargetAnyLive
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1),
		Actions: fleetv1.LifecycleActions{MemberJoin: join}}, false)
	createStatefulSet(t, ns, 2)
	createClaim(t, ns, 0, map[string]string{fleetv1.AnnotationMemberJoined: "uid", fleetv1.AnnotationMemberJoinedEpoch: "0"})
	createClaim(t, ns, 1, nil)
	createPod(t, ns, 0, true, true)
	createPod(t, ns, 1, true, false)
	p := pod(t, ns, "db-east-1")
	p.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("calls %v", actionsOf(ns)) }, func() bool { return membership.ConditionTrue(pod(t, ns, "db-east-1")) })
	var joins []call
	for _, c := range exec.callsIn(ns) {
		if c.Env[fleetv1.EnvAction] == string(fleetv1.ActionMemberJoin) {
			joins = append(joins, c)
		}
	}
	if len(joins) != 1 || joins[0].Pod != "db-east-0" || joins[0].Env[fleetv1.EnvInstanceName] != "db-east-1" || joins[0].Env[fleetv1.EnvJoinReason] != "FirstStart" {
		t.Errorf("joins %+v, want one in db-east-0 for db-east-1, FirstStart", joins)
	}
	if !membership.ConditionTrue(pod(t, ns, "db-east-0")) {
		t.Errorf("db-east-0 on a joined claim: condition not set")
	}
}

// TestRolloutComplete: spec.actions.rolloutComplete names a revision: the
// action runs once, in the placement's leader, with FLEETSET_REVISION, and
// the revision is reported in status.actions.rolloutComplete; it does not
// run again for the same revision.
func TestRolloutComplete(t *testing.T) {
	ns := newNamespace(t, "complete")
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1), Leader: "db-east-1",
		RolloutComplete: "rev-2", Actions: fleetv1.LifecycleActions{RolloutComplete: action("/finalize.sh")}}, false)
	createPod(t, ns, 0, false, true)
	createPod(t, ns, 1, false, true)
	waitFor(t, 10*time.Second, func() string {
		return fmt.Sprintf("status.actions %+v, calls %v", placementStatus(t, ns), actionsOf(ns))
	},
		func() bool { return placementStatus(t, ns).RolloutComplete == "rev-2" })
	calls := exec.callsIn(ns)
	if len(calls) != 1 || calls[0].Pod != "db-east-1" || calls[0].Env[fleetv1.EnvRevision] != "rev-2" || calls[0].Env[fleetv1.EnvAction] != "rolloutComplete" {
		t.Fatalf("calls %+v, want one rolloutComplete in the leader db-east-1 for rev-2", calls)
	}
	time.Sleep(2 * time.Second)
	if n := len(exec.callsIn(ns)); n != 1 {
		t.Errorf("rolloutComplete ran %d times for one revision", n)
	}
}

// TestRequestedSwitchover: spec.actions.switchover (a switchover an
// operator asked for) runs the switchover action in the leader it names
// (the pod labelled with the leader role, as the placement's
// status.leaders reports it), with the candidate and the leader in its
// environment; while the action fails, status.actions.switchoverFailed
// says why and it runs again; once it succeeds, status.actions.switchover
// holds the request's ID, the failure is cleared, and it does not run
// again for that ID. A request naming a pod not running here, or one that
// does not hold the leader role (any more), runs nothing.
func TestRequestedSwitchover(t *testing.T) {
	ns := newNamespace(t, "switchover")
	req := &fleetv1.PlacementSwitchover{ID: "db-east-1@2026-11-29T07:00:00Z", Leader: "db-east-1", Candidate: "db-west-1000"}
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1), Leader: "db-east-1",
		Switchover: req, Actions: fleetv1.LifecycleActions{Switchover: action("/switchover.sh")}}, true)
	fail := true
	exec.setAnswer(func(c call) (string, error) {
		if c.Namespace == ns && fail {
			return "", errors.New("patronictl: candidate not ready")
		}
		return "", nil
	})
	t.Cleanup(func() { exec.setAnswer(nil) })
	createPod(t, ns, 0, false, true)
	createPod(t, ns, 1, false, true)
	time.Sleep(2 * time.Second)
	if n := len(exec.callsIn(ns)); n != 0 {
		t.Fatalf("the switchover ran %d times in db-east-1 before it held the leader role", n)
	}
	setRole(t, ns, "db-east-0", "follower")
	setRole(t, ns, "db-east-1", "leader")
	waitFor(t, 20*time.Second, func() string {
		return fmt.Sprintf("status.actions %+v, calls %v", placementStatus(t, ns), actionsOf(ns))
	}, func() bool {
		return strings.Contains(placementStatus(t, ns).SwitchoverFailed, "patronictl: candidate not ready")
	})
	calls := exec.callsIn(ns)
	c := calls[0]
	if c.Pod != "db-east-1" || c.Env[fleetv1.EnvAction] != "switchover" || c.Env[fleetv1.EnvCandidateName] != "db-west-1000" ||
		c.Env[fleetv1.EnvLeaderName] != "db-east-1" || !slices.Equal(c.Command, []string{"/switchover.sh"}) {
		t.Fatalf("first call %+v, want the switchover action in db-east-1 with candidate db-west-1000", c)
	}
	if s := placementStatus(t, ns); s.Switchover != "" {
		t.Errorf("status.actions.switchover = %q while the action fails", s.Switchover)
	}
	waitFor(t, 10*time.Second, func() string { return fmt.Sprint(events(t, ns)) }, hasEvent(t, ns, "SubsetPlacement/db-east", membership.ReasonSwitchoverFailed))
	fail = false
	waitFor(t, 30*time.Second, func() string {
		return fmt.Sprintf("status.actions %+v, calls %v", placementStatus(t, ns), actionsOf(ns))
	}, func() bool { s := placementStatus(t, ns); return s.Switchover == req.ID && s.SwitchoverFailed == "" })
	waitFor(t, 10*time.Second, func() string { return fmt.Sprint(events(t, ns)) }, hasEvent(t, ns, "SubsetPlacement/db-east", membership.ReasonSwitchoverRan))
	n := len(exec.callsIn(ns))
	time.Sleep(2 * time.Second)
	if got := len(exec.callsIn(ns)); got != n {
		t.Errorf("the switchover ran %d more times after it succeeded for its ID", got-n)
	}

	// A request for a leader not running here, or for a pod that does not
	// hold the leader role, runs nothing.
	for _, leader := range []string{"db-east-7", "db-east-0"} {
		var sp fleetv1.SubsetPlacement
		if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "db-east"}, &sp); err != nil {
			t.Fatal(err)
		}
		sp.Spec.Actions.Switchover = &fleetv1.PlacementSwitchover{ID: leader + "@2026-11-29T07:05:00Z>*", Leader: leader}
		if err := cl.Update(context.Background(), &sp); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if got := len(exec.callsIn(ns)); got != n {
			t.Errorf("a request for %s (not running here, or not the leader) ran the action %d times", leader, got-n)
		}
	}
}

// setRole labels pod ns/name fleetset.io/role=role, as a workload that
// reports its own role does (the label contract).
func setRole(t *testing.T, ns, name, role string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fleetv1.LabelRole, role)
	if _, err := cs.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestForgedPodIsNeverATarget (issue 48): pods labelled into the placement
// past admission (see the test's comment) —
// db-east-0, bare with every label, and db-east-9 with pod-index 0 and an
// ownerReference naming StatefulSet db-east with another UID — Running,
// Ready, their containers running, sorting before the real instances, are
// never an action's target: memberJoin AnyLive for db-east-1 runs in the
// real db-east-2; the leave of ordinal 0 (whose real pod is gone) is not
// run in the forged db-east-0, it is held (status.actions.leaveFailed); no
// forged pod is joined nor gets the member-joined condition.
func TestForgedPodIsNeverATarget(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "forged")
	join := action("/join.sh")
	join.Target = fleetv1.TargetAnyLive
	leave := action("/leave.sh")
	leave.Retries = new(int32)
	createPlacement(t, ns, &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: members("db-east", 0, 1, 2),
		Leave:   []fleetv1.PlacementLeave{{Ordinal: 0, Reason: fleetv1.LeaveScaledDown}},
		Actions: fleetv1.LifecycleActions{MemberJoin: join, MemberLeave: leave}}, false)
	createStatefulSet(t, ns, 3)
	// The forged pods are written by a cluster administrator: the add-on's
	// admission policy refuses them from a namespace editor
	// (fleetset-pod-labels, TestPodLabelsAdmission), so they stand for a pod
	// that got past that first layer (a cluster without the add-on's
	// policies, an administrator's mistake): the member must still not
	// trust its labels.
	createPodAs(t, cs, ns, "db-east-0", "0", false, true)
	createPodAs(t, cs, ns, "db-east-9", "0", false, true,
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: "7f0c6a2e-0000-4000-8000-000000000000", Controller: ptr.To(true)})
	createClaim(t, ns, 2, map[string]string{fleetv1.AnnotationMemberJoined: "uid", fleetv1.AnnotationMemberJoinedEpoch: "0"})
	createClaim(t, ns, 1, nil)
	createPod(t, ns, 2, true, true)
	createPod(t, ns, 1, true, false)
	p := pod(t, ns, "db-east-1")
	p.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, func() string {
		return fmt.Sprintf("calls %v, status.actions %+v", actionsOf(ns), placementStatus(t, ns))
	}, func() bool {
		return membership.ConditionTrue(pod(t, ns, "db-east-1")) && strings.Contains(placementStatus(t, ns).LeaveFailed, "db-east-0")
	})
	time.Sleep(2 * time.Second)
	for _, c := range exec.callsIn(ns) {
		if c.Pod != "db-east-2" {
			t.Errorf("an action ran in %s (%s for %s): only the real instance db-east-2 may be a target", c.Pod, c.Env[fleetv1.EnvAction], c.Env[fleetv1.EnvInstanceName])
		}
	}
	if got := actionsOf(ns); !slices.Contains(got, "memberJoin/db-east-2/FirstStart") {
		t.Errorf("calls %v, want memberJoin for db-east-1 in db-east-2", got)
	}
	for _, name := range []string{"db-east-0", "db-east-9"} {
		for _, c := range pod(t, ns, name).Status.Conditions {
			if c.Type == fleetv1.ConditionMemberJoined {
				t.Errorf("forged pod %s got condition %s=%s (%s)", name, c.Type, c.Status, c.Message)
			}
		}
	}
	if s := placementStatus(t, ns); s.Left != "" || s.Joined != "1" {
		t.Errorf("status.actions %+v, want ordinal 0 not left (held) and only 1 joined", s)
	}
}
