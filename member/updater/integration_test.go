//go:build integration

package updater_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/member/updater"
)

// The scheduler's identity, as its ServiceAccount authenticates.
const scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"

var (
	env *controlplane.Env
	cs  kubernetes.Interface
	cl  client.Client
	// schedCS acts as the scheduler's ServiceAccount.
	schedCS kubernetes.Interface
)

var owner = map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east", fleetv1.LabelOwnerUID: "fleetset-uid"}

// roles: ordinal 0 the leader, 1 a learner (updatePriority 0), 2 a replica
// (updatePriority 1): the learner goes first although its ordinal is lower.
var roles = []fleetv1.Role{
	{Name: "primary", IsLeader: true, AccessMode: fleetv1.AccessReadWrite},
	{Name: "learner", UpdatePriority: 0, AccessMode: fleetv1.AccessNone},
	{Name: "replica", UpdatePriority: 1, AccessMode: fleetv1.AccessReadOnly},
}

var roleOf = map[int]string{0: "primary", 1: "learner", 2: "replica"}

// TestMain starts etcd, kube-apiserver and the real kube-controller-manager
// (its StatefulSet controller and garbage collector), applies the shipped
// RBAC and admission policies of manifests/scheduler, and runs the updater
// as fleetset-scheduler's ServiceAccount, as the scheduler does
// (the member component, with only this controller, over a pod
// informer and a controller-runtime
// SubsetPlacement cache).
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
	dir, err := os.MkdirTemp("", "updater-kcm-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	stop, err := controlplane.StartControllerManager(env.Config, dir, "statefulset-controller", "garbage-collector-controller")
	if err != nil {
		return 0, err
	}
	defer stop()

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
	// The role-ordered update controller alone, as the member component
	// runs it.
	factory := informers.NewSharedInformerFactory(schedCS, 0)
	pods := factory.Core().V1().Pods()
	pods.Informer()
	factory.Start(ctx.Done())
	cfg := member.DefaultConfig()
	cfg.ClaimExpansion, cfg.Roles, cfg.Actions = false, false, false
	if _, err := member.New(&cfg).Start(ctx, member.Host{Client: schedCS, Pods: pods, Placements: placements, ActionExecutor: switchovers}); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// kubelet plays the part of the missing kubelet and of the workload in
// namespace ns until ctx is done: it labels each pod of db-east with the
// role of its ordinal (roleOf, the label contract) and then, a second
// after it first saw it, marks it Running and Ready. It also samples how many of the ordinals 0..2 are
// unavailable (missing, being deleted or not Ready) and records the highest
// count, and the order in which the pods were replaced (a new UID).
type kubelet struct {
	mu          sync.Mutex
	maxDown     int
	replaced    []string
	uids        map[string]types.UID
	initialized bool
	// firstSeen: a pod is marked Ready a second after it is first seen,
	// so that an instance being replaced stays unavailable long enough
	// for the sampling to see two at once, were there two.
	firstSeen map[types.UID]time.Time
}

func (k *kubelet) run(ctx context.Context, ns string) {
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		down := 3
		seen := map[string]types.UID{}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			n, err := strconv.Atoi(strings.TrimPrefix(p.Name, "db-east-"))
			if err != nil {
				continue
			}
			seen[p.Name] = p.UID
			if p.Labels[fleetv1.LabelRole] != roleOf[n] {
				patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, fleetv1.LabelRole, roleOf[n])
				_, _ = cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				continue // Ready on a later pass, once labelled
			}
			if ready(p) {
				down--
				continue
			}
			k.mu.Lock()
			if k.firstSeen == nil {
				k.firstSeen = map[types.UID]time.Time{}
			}
			if _, ok := k.firstSeen[p.UID]; !ok {
				k.firstSeen[p.UID] = time.Now()
			}
			young := time.Since(k.firstSeen[p.UID]) < time.Second
			k.mu.Unlock()
			if young {
				continue
			}
			p.Status.Phase = v1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.0.0.%d", 10+n)
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.uids == nil {
			k.uids = map[string]types.UID{}
		}
		for name, uid := range seen {
			if old, ok := k.uids[name]; ok && old != uid {
				k.replaced = append(k.replaced, name)
			}
			k.uids[name] = uid
		}
		if len(seen) == 3 && down == 0 {
			k.initialized = true
		}
		if k.initialized {
			k.maxDown = max(k.maxDown, down)
		}
		return false, nil
	})
}

func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue && p.Status.Phase == v1.PodRunning
		}
	}
	return false
}

func (k *kubelet) state() (maxDown int, replaced []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maxDown, slices.Clone(k.replaced)
}

// podStates returns, for each ordinal 0..2, its pod (nil when missing).
func podStates(t *testing.T, ns string) map[int]*v1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]*v1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if n, err := strconv.Atoi(strings.TrimPrefix(p.Name, "db-east-")); err == nil {
			out[n] = p
		}
	}
	return out
}

func describe(pods map[int]*v1.Pod) string {
	var s []string
	for n := range 3 {
		p := pods[n]
		if p == nil {
			s = append(s, fmt.Sprintf("%d: missing", n))
			continue
		}
		s = append(s, fmt.Sprintf("%d: %s rev %s ready %v deleting %v annotations %v", n, p.UID, p.Labels[appsv1.ControllerRevisionHashLabelKey],
			ready(p), p.DeletionTimestamp != nil, p.Annotations))
	}
	return strings.Join(s, "; ")
}

func updateRevision(t *testing.T, ns string) string {
	t.Helper()
	var rev string
	eventually(t, "the StatefulSet's status up to date", 30*time.Second, func() (bool, string) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), "db-east", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rev = s.Status.UpdateRevision
		return s.Status.ObservedGeneration == s.Generation && rev != "", fmt.Sprintf("observed %d generation %d", s.Status.ObservedGeneration, s.Generation)
	})
	return rev
}

// allAt waits until the ordinals in want are Ready at revision rev.
func allAt(t *testing.T, ns, rev string, want ...int) map[int]*v1.Pod {
	t.Helper()
	var pods map[int]*v1.Pod
	eventually(t, fmt.Sprintf("pods %v Ready at %s", want, rev), 60*time.Second, func() (bool, string) {
		pods = podStates(t, ns)
		for _, n := range want {
			p := pods[n]
			if p == nil || p.DeletionTimestamp != nil || !ready(p) || p.Labels[appsv1.ControllerRevisionHashLabelKey] != rev {
				return false, describe(pods)
			}
		}
		return true, ""
	})
	return pods
}

func setTemplateImage(t *testing.T, ns, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"db","image":%q}]}}}}`, image)
	if _, err := cs.AppsV1().StatefulSets(ns).Patch(context.Background(), "db-east", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setUpdate(t *testing.T, ns string, maxUnavailable int32, leader fleetv1.LeaderUpdate) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"update":{"maxUnavailable":%d,"leader":%q}}}`, maxUnavailable, leader)
	sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east"}}
	if err := cl.Patch(context.Background(), sp, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// eventNote waits for an event of reason regarding kind/name and returns
// its note.
func eventNote(t *testing.T, ns, kind, name, reason, contains string) string {
	t.Helper()
	var note string
	eventually(t, fmt.Sprintf("event %s on %s %s", reason, kind, name), 30*time.Second, func() (bool, string) {
		list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, contains) {
				note = e.Note
				return true, ""
			}
			seen = append(seen, e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
	return note
}

func deletions(t *testing.T) map[string]float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "fleetset_member_rollout_pod_deletions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// TestRoleOrderedUpdate: a delivered StatefulSet of 3 with OnDelete, its
// pods labelled with roles (ordinal 0 the leader), and its placement with
// spec.roles and spec.update {maxUnavailable 1, leader Hold}. A template
// change: the learner (updatePriority 0) is replaced, then the replica
// (updatePriority 1), one at a time (never two unavailable); the leader is
// left as it is. Leader Switchover: the leader is annotated
// fleetset.io/switchover-requested (as the scheduler's ServiceAccount,
// through the add-on's admission policy), events on the pod and the
// placement, and it is not deleted. Leader Update: it is replaced. With
// maxUnavailable 0, a further template change replaces nothing.
func TestRoleOrderedUpdate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "roll-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{}
	go k.run(ctx, ns.Name)

	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: fleetv1.SubsetPlacementSpec{
			Roles:  &fleetv1.PlacementRoles{Roles: roles},
			Update: &fleetv1.PlacementUpdate{MaxUnavailable: 1, Leader: fleetv1.LeaderHold},
		},
	}
	if err := cl.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db-east"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "db:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns.Name).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev1 := updateRevision(t, ns.Name)
	before := allAt(t, ns.Name, rev1, 0, 1, 2)
	leaderUID := before[0].UID

	// The add-on's admission policy is loaded (it refuses the scheduler's
	// change to a pod's fleetset.io/set): what follows is checked under it.
	eventually(t, "the admission policy fleetset-delivered-objects loaded", 30*time.Second, func() (bool, string) {
		_, err := schedCS.CoreV1().Pods(ns.Name).Patch(ctx, "db-east-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"fleetset.io/set":"other"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "its fleetset.io/ labels are set by its StatefulSet"), fmt.Sprint(err)
	})

	// Hold: the followers, learner first, one at a time.
	setTemplateImage(t, ns.Name, "db:2")
	rev2 := updateRevision(t, ns.Name)
	if rev2 == rev1 {
		t.Fatalf("update revision unchanged: %s", rev2)
	}
	allAt(t, ns.Name, rev2, 1, 2)
	time.Sleep(3 * time.Second)
	pods := podStates(t, ns.Name)
	if p := pods[0]; p == nil || p.UID != leaderUID || p.Labels[appsv1.ControllerRevisionHashLabelKey] != rev1 || p.DeletionTimestamp != nil ||
		p.Annotations[fleetv1.AnnotationSwitchoverRequested] != "" {
		t.Fatalf("leader Hold: the leader was touched: %s", describe(pods))
	}
	maxDown, replaced := k.state()
	if !slices.Equal(replaced, []string{"db-east-1", "db-east-2"}) {
		t.Errorf("replaced in order %v, want [db-east-1 db-east-2] (learner, updatePriority 0, before replica)", replaced)
	}
	if maxDown > 1 {
		t.Errorf("%d instances unavailable at once, maxUnavailable 1", maxDown)
	}
	note := eventNote(t, ns.Name, "SubsetPlacement", "db-east", updater.ReasonPodReplaced, "db-east-1")
	if !strings.Contains(note, "role learner") || !strings.Contains(note, rev1) || !strings.Contains(note, rev2) {
		t.Errorf("PodReplaced: %q", note)
	}
	if d := deletions(t); d["learner"] != 1 || d["replica"] != 1 || d["primary"] != 0 {
		t.Errorf("fleetset_member_rollout_pod_deletions_total: %v", d)
	}

	// Switchover: annotated once, never deleted.
	setUpdate(t, ns.Name, 1, fleetv1.LeaderSwitchover)
	var stamp string
	eventually(t, "the leader annotated "+fleetv1.AnnotationSwitchoverRequested, 30*time.Second, func() (bool, string) {
		pods := podStates(t, ns.Name)
		if p := pods[0]; p != nil {
			stamp = p.Annotations[fleetv1.AnnotationSwitchoverRequested]
		}
		return stamp != "", describe(pods)
	})
	if _, err := time.Parse(time.RFC3339, stamp); err != nil {
		t.Errorf("annotation %q: %v", stamp, err)
	}
	eventNote(t, ns.Name, "Pod", "db-east-0", updater.ReasonSwitchoverRequested, fleetv1.AnnotationSwitchoverRequested)
	eventNote(t, ns.Name, "SubsetPlacement", "db-east", updater.ReasonSwitchoverRequested, "db-east-0")
	time.Sleep(3 * time.Second)
	pods = podStates(t, ns.Name)
	if p := pods[0]; p == nil || p.UID != leaderUID || p.DeletionTimestamp != nil || p.Annotations[fleetv1.AnnotationSwitchoverRequested] != stamp {
		t.Fatalf("leader Switchover: the leader was deleted or re-annotated: %s", describe(pods))
	}

	// Update: the leader is replaced.
	setUpdate(t, ns.Name, 1, fleetv1.LeaderUpdateNow)
	pods = allAt(t, ns.Name, rev2, 0, 1, 2)
	if pods[0].UID == leaderUID || pods[0].Annotations[fleetv1.AnnotationSwitchoverRequested] != "" {
		t.Errorf("leader Update: %s", describe(pods))
	}
	eventNote(t, ns.Name, "SubsetPlacement", "db-east", updater.ReasonPodReplaced, "db-east-0 (role primary")
	if d := deletions(t); d["primary"] != 1 {
		t.Errorf("fleetset_member_rollout_pod_deletions_total: %v", d)
	}

	// maxUnavailable 0: nothing is replaced.
	setUpdate(t, ns.Name, 0, fleetv1.LeaderUpdateNow)
	time.Sleep(time.Second) // the placement cache
	setTemplateImage(t, ns.Name, "db:3")
	rev3 := updateRevision(t, ns.Name)
	if rev3 == rev2 {
		t.Fatalf("update revision unchanged: %s", rev3)
	}
	time.Sleep(5 * time.Second)
	after := podStates(t, ns.Name)
	for n := range 3 {
		if p := after[n]; p == nil || p.UID != pods[n].UID || p.DeletionTimestamp != nil {
			t.Errorf("maxUnavailable 0: ordinal %d replaced: %s", n, describe(after))
		}
	}
	if maxDown, _ := k.state(); maxDown > 1 {
		t.Errorf("%d instances unavailable at once, maxUnavailable 1", maxDown)
	}
}

// switchoverExec is the member component's Executor here (there is no
// kubelet, so no pods/exec stream): it records each exec's pod and argv and
// fails while fail is set.
type switchoverExec struct {
	mu    sync.Mutex
	calls []string
	fail  bool
}

var switchovers = &switchoverExec{}

func (e *switchoverExec) Exec(_ context.Context, ns, pod, container string, argv []string, _, stderr io.Writer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, ns+"/"+pod+"/"+container+" "+strings.Join(argv, " "))
	if e.fail {
		_, _ = io.WriteString(stderr, "leader transfer failed")
		return errors.New("command terminated with exit code 1")
	}
	return nil
}

func (e *switchoverExec) set(fail bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail = fail
}

func (e *switchoverExec) callsIn(ns string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.calls {
		if strings.HasPrefix(c, ns+"/") {
			out = append(out, c)
		}
	}
	return out
}

// TestSwitchoverAction: with a switchover lifecycle action, a rollout that
// reaches the outdated leader (leader Switchover) runs it in the leader's
// pod, with the candidate the lowest updated, Ready follower; while it
// fails the leader is neither annotated nor deleted (Warning events
// SwitchoverActionFailed); once it succeeds the leader is annotated
// fleetset.io/switchover-requested, as without the action.
func TestSwitchoverAction(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "switchover-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{}
	go k.run(ctx, ns.Name)
	action := &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"etcdctl", "move-leader"}}, Retries: new(int32)}
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: fleetv1.SubsetPlacementSpec{
			Roles:   &fleetv1.PlacementRoles{Roles: roles},
			Update:  &fleetv1.PlacementUpdate{MaxUnavailable: 1, Leader: fleetv1.LeaderHold},
			Actions: &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Actions: fleetv1.LifecycleActions{Switchover: action}},
		},
	}
	if err := cl.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db-east"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "db:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns.Name).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev1 := updateRevision(t, ns.Name)
	leaderUID := allAt(t, ns.Name, rev1, 0, 1, 2)[0].UID
	setTemplateImage(t, ns.Name, "db:2")
	rev2 := updateRevision(t, ns.Name)
	allAt(t, ns.Name, rev2, 1, 2)

	switchovers.set(true)
	setUpdate(t, ns.Name, 1, fleetv1.LeaderSwitchover)
	eventNote(t, ns.Name, "Pod", "db-east-0", updater.ReasonSwitchoverActionFailed, "leader transfer failed")
	eventNote(t, ns.Name, "SubsetPlacement", "db-east", updater.ReasonSwitchoverActionFailed, "db-east-0")
	pods := podStates(t, ns.Name)
	if p := pods[0]; p == nil || p.UID != leaderUID || p.DeletionTimestamp != nil || p.Annotations[fleetv1.AnnotationSwitchoverRequested] != "" {
		t.Fatalf("failing switchover action: the leader was touched: %s", describe(pods))
	}

	switchovers.set(false)
	eventually(t, "the leader annotated after the action succeeded", 60*time.Second, func() (bool, string) {
		pods := podStates(t, ns.Name)
		return pods[0] != nil && pods[0].Annotations[fleetv1.AnnotationSwitchoverRequested] != "", describe(pods)
	})
	calls := switchovers.callsIn(ns.Name)
	if len(calls) < 2 {
		t.Fatalf("exec calls %q, want a failed and a successful one", calls)
	}
	last := calls[len(calls)-1]
	for _, want := range []string{ns.Name + "/db-east-0/db env ", "FLEETSET_ACTION=switchover", "FLEETSET_LEADER_NAME=db-east-0",
		"FLEETSET_CANDIDATE_NAME=db-east-1", "FLEETSET_CANDIDATE_FQDN=db-east-1.db." + ns.Name + ".svc.cluster.local", " etcdctl move-leader"} {
		if !strings.Contains(last, want) {
			t.Errorf("switchover exec %q: want %q in it", last, want)
		}
	}
	time.Sleep(2 * time.Second)
	if n := len(switchovers.callsIn(ns.Name)); n != len(calls) {
		t.Errorf("the action ran again after it succeeded: %q", switchovers.callsIn(ns.Name))
	}
	if p := podStates(t, ns.Name)[0]; p == nil || p.UID != leaderUID {
		t.Errorf("leader Switchover with the action: the leader was replaced")
	}
}

// TestNotOnDelete: a StatefulSet with RollingUpdate under a placement with
// spec.update: no pod is deleted by the updater (the StatefulSet
// controller rolls it itself, so only the pods' UIDs are compared before
// any template change).
func TestNotOnDelete(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rolling-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{}
	go k.run(ctx, ns.Name)
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: fleetv1.SubsetPlacementSpec{
			Roles:  &fleetv1.PlacementRoles{Roles: roles},
			Update: &fleetv1.PlacementUpdate{MaxUnavailable: 3, Leader: fleetv1.LeaderUpdateNow},
		},
	}
	if err := cl.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "db-east", Labels: owner},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			// RollingUpdate with a partition above every ordinal: the
			// StatefulSet controller replaces nothing either.
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](3)}},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db-east"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "db:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns.Name).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rev1 := updateRevision(t, ns.Name)
	before := allAt(t, ns.Name, rev1, 0, 1, 2)
	setTemplateImage(t, ns.Name, "db:2")
	if rev2 := updateRevision(t, ns.Name); rev2 == rev1 {
		t.Fatalf("update revision unchanged: %s", rev2)
	}
	time.Sleep(5 * time.Second)
	after := podStates(t, ns.Name)
	for n := range 3 {
		if p := after[n]; p == nil || p.UID != before[n].UID || p.DeletionTimestamp != nil {
			t.Errorf("RollingUpdate: ordinal %d replaced: %s", n, describe(after))
		}
	}
}
