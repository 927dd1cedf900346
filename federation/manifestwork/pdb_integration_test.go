//go:build integration

package manifestwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// TestDisruptionBudgetIntegration runs the rendered budgets of a FleetSet of
// 9 instances over 3 subsets of 3 with spec.disruptionBudget.maxUnavailable
// 1 on a real kube-apiserver, with kube-controller-manager's disruption
// controller (k8s.io/kubernetes pkg/controller/disruption) in-process:
//   - the namespace's executor (its tenant work's ServiceAccount and
//     RoleBinding to manifests/scheduler/executor.yaml's ClusterRole) may
//     write PodDisruptionBudgets, and server-side applies the rendered
//     StatefulSets and budgets as the work agent would;
//   - each budget counts its own subset's 3 pods and no other's;
//   - evicting every pod of the fleet, one after the other, evicts exactly
//     one (the fleet budget); every other eviction is refused with 429;
//   - a pod that is not Ready is evicted even where the budget's part is 0
//     (unhealthyPodEvictionPolicy AlwaysAllow), which the default policy
//     would refuse;
//   - the add-on's fleetset-never-adopt policy refuses to apply a budget
//     over a PodDisruptionBudget someone else made.
func TestDisruptionBudgetIntegration(t *testing.T) {
	env, err := controlplane.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	root := controlplane.RepoRoot()
	for _, f := range []string{"executor.yaml", "admission.yaml"} {
		createManifests(t, env.Config, filepath.Join(root, "manifests", "scheduler", f))
	}
	startDisruptionController(ctx, t, env.Config)

	// The namespace's executor, from its tenant work, as the work agent
	// impersonates it.
	const ns = "db"
	executor := kubernetes.NewForConfigOrDie(applyTenant(t, env.Config, ns))
	executorUser, executorGroups := executorOf(ns)
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: executorUser, Groups: executorGroups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "policy", Resource: "poddisruptionbudgets"}}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Status.Allowed {
			t.Errorf("the executor may not %s poddisruptionbudgets.policy: %s", verb, got.Status.Reason)
		}
	}

	fs := budgetFleetSet(9, ptr.To(intstr.FromInt32(1)), nil, "a", "b", "c")
	fs.Namespace = ns
	fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}
	subsets := plannedSubsets(t, fs)
	pdbs, err := PodDisruptionBudgets(fs, subsets)
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := maxUnavailableOf(t, pdbs)
	// Server-side apply the manifests, as encoded into the work, as the
	// executor.
	stsUID := map[string]types.UID{}
	for i, sp := range subsets {
		sts, err := StatefulSet(fs, sp)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := envelope.Encode([]runtime.Object{sts, pdbs[i]})
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
		got, err := executor.AppsV1().StatefulSets(ns).Patch(ctx, sts.Name, types.ApplyPatchType, ms[0].Raw, opts)
		if err != nil {
			t.Fatalf("applying StatefulSet %s as the executor: %v", sts.Name, err)
		}
		stsUID[sp.Name] = got.UID
		if _, err := executor.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, pdbs[i].Name, types.ApplyPatchType, ms[1].Raw, opts); err != nil {
			t.Fatalf("applying PodDisruptionBudget %s as the executor: %v", pdbs[i].Name, err)
		}
	}

	// Each subset's 3 pods, as its StatefulSet would make them, Running and
	// Ready.
	type podRef struct{ subset, name string }
	var pods []podRef
	for _, sp := range subsets {
		sts, _ := StatefulSet(fs, sp)
		for k := range sp.Replicas {
			ordinal := sp.OrdinalStart + k
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: fmt.Sprintf("%s-%d", sts.Name, ordinal), Labels: sts.Spec.Template.Labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name,
						UID: stsUID[sp.Name], Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
				},
				Spec: sts.Spec.Template.Spec,
			}
			created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			setReady(ctx, t, cs, created, true)
			pods = append(pods, podRef{sp.Name, created.Name})
		}
	}

	// The disruption controller counts each subset's own pods only, and
	// allows each subset its part.
	waitFor(t, "every budget observed: 3 healthy pods of 3, disruptions allowed = its part", func() (bool, string, error) {
		l, err := cs.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var state []string
		ok := len(l.Items) == 3
		for _, p := range l.Items {
			s := p.Status
			state = append(state, fmt.Sprintf("%s: gen %d/%d expected %d healthy %d allowed %d", p.Name, s.ObservedGeneration, p.Generation, s.ExpectedPods, s.CurrentHealthy, s.DisruptionsAllowed))
			ok = ok && s.ObservedGeneration == p.Generation && s.ExpectedPods == 3 && s.CurrentHealthy == 3 &&
				s.DisruptionsAllowed == parts[p.Labels[fleetv1.LabelSubset]]
		}
		return ok, strings.Join(state, "; "), nil
	})

	// Evict every pod of the fleet in turn: exactly one goes.
	evict := func(name string) error {
		return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
	var evicted []string
	for _, p := range pods {
		err := evict(p.name)
		switch {
		case err == nil:
			evicted = append(evicted, p.name)
			if parts[p.subset] == 0 {
				t.Errorf("pod %s of subset %s (part 0) was evicted", p.name, p.subset)
			}
		case apierrors.IsTooManyRequests(err):
		default:
			t.Errorf("evicting %s: %v, want allowed or 429", p.name, err)
		}
	}
	if len(evicted) != 1 {
		t.Errorf("evicted %v of the fleet's 9 pods, want exactly 1 (the fleet budget)", evicted)
	}
	t.Logf("parts %v; evicted %v", parts, evicted)

	// A pod that is not Ready goes where the part is 0 (AlwaysAllow); with
	// the default policy the same eviction is refused.
	var zero []string
	for _, sp := range subsets {
		if parts[sp.Name] == 0 {
			zero = append(zero, sp.Name)
		}
	}
	if len(zero) < 2 {
		t.Fatalf("parts %v: want two subsets with part 0", parts)
	}
	ifHealthy := StatefulSetName(fs.Name, zero[1])
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, ifHealthy, types.MergePatchType,
		[]byte(`{"spec":{"unhealthyPodEvictionPolicy":"IfHealthyBudget"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, subset := range zero {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, StatefulSetName(fs.Name, subset)+"-"+fmt.Sprint(subsetStart(subsets, subset)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(ctx, t, cs, p, false)
	}
	waitFor(t, "the budgets observed the unready pods", func() (bool, string, error) {
		var state []string
		ok := true
		for _, subset := range zero {
			p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, StatefulSetName(fs.Name, subset), metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			state = append(state, fmt.Sprintf("%s: gen %d/%d healthy %d", p.Name, p.Status.ObservedGeneration, p.Generation, p.Status.CurrentHealthy))
			ok = ok && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 2
		}
		return ok, strings.Join(state, "; "), nil
	})
	alwaysPod := StatefulSetName(fs.Name, zero[0]) + "-" + fmt.Sprint(subsetStart(subsets, zero[0]))
	if err := evict(alwaysPod); err != nil {
		t.Errorf("evicting the unready pod %s (AlwaysAllow, part 0): %v, want allowed", alwaysPod, err)
	}
	ifHealthyPod := ifHealthy + "-" + fmt.Sprint(subsetStart(subsets, zero[1]))
	if err := evict(ifHealthyPod); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting the unready pod %s under IfHealthyBudget: %v, want 429 (what AlwaysAllow avoids)", ifHealthyPod, err)
	}
	// The ready pods of a part-0 subset stay protected.
	readyPod := StatefulSetName(fs.Name, zero[0]) + "-" + fmt.Sprint(subsetStart(subsets, zero[0])+1)
	if err := evict(readyPod); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting the ready pod %s (part 0): %v, want 429", readyPod, err)
	}

	// Never adopt: a budget someone else made is not written over.
	const other = "other"
	// A FleetSet of namespace other writes it as other's executor (team-a's
	// executor may not write there at all).
	otherExecutor := kubernetes.NewForConfigOrDie(applyTenant(t, env.Config, other))
	theirs := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: pdbs[0].Name, Labels: map[string]string{"team": "a"}},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(other).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := pdbs[0].DeepCopy()
	mine.Namespace = other
	ms, err := envelope.Encode([]runtime.Object{mine})
	if err != nil {
		t.Fatal(err)
	}
	want := "PodDisruptionBudget " + other + "/" + mine.Name + " exists and is not this FleetSet's"
	var last error
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, last = otherExecutor.PolicyV1().PodDisruptionBudgets(other).Patch(ctx, mine.Name, types.ApplyPatchType, ms[0].Raw,
			metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true), DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), want), nil
	}); werr != nil {
		t.Errorf("applying a budget over someone else's: %v, want refused with %q", last, want)
	}
}

// subsetStart is the ordinal start of the named subset.
func subsetStart(subsets []Subset, name string) int32 {
	for _, sp := range subsets {
		if sp.Name == name {
			return sp.OrdinalStart
		}
	}
	return -1
}

// setReady sets pod p Running with condition Ready ready.
func setReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, p *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startDisruptionController runs kube-controller-manager's disruption
// controller in-process, wired as kube-controller-manager wires it
// (cmd/kube-controller-manager/app/policy.go); it stops with ctx.
func startDisruptionController(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 1000
	cs := kubernetes.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cs.Discovery()))
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	dc := disruption.NewDisruptionController(ctx,
		f.Core().V1().Pods(), f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().ReplicationControllers(),
		f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(), f.Apps().V1().StatefulSets(),
		cs, mapper, scales, cs.Discovery())
	f.Start(ctx.Done())
	go dc.Run(ctx)
}

// createManifests creates every object of a multi-document YAML file.
func createManifests(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "ServiceAccount" && u.GetNamespace() != "" {
			_ = c.Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": u.GetNamespace()}}})
		}
		if err := c.Create(context.Background(), &u); err != nil {
			t.Fatalf("%s: creating %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}

// waitFor polls cond every 200 ms for up to 60 s and fails the test with its
// last state when it never holds.
func waitFor(t *testing.T, what string, cond func() (bool, string, error)) {
	t.Helper()
	var state string
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		ok, s, err := cond()
		state, last = s, err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 60s: %s (last error %v)", what, state, last)
	}
}
