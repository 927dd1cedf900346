//go:build integration

package manifestwork

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// executorOf is the user and groups OCM's work agent checks and
// impersonates for the executor of hub namespace ns.
func executorOf(ns string) (string, []string) {
	return "system:serviceaccount:" + fleetv1.ExecutorNamespace + ":" + fleetv1.ExecutorServiceAccountName(ns),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + fleetv1.ExecutorNamespace, "system:authenticated"}
}

// applyTenant creates, as the work agent would with its own identity, every
// object of ns's tenant work (TenantWork), and returns a client
// impersonating ns's executor.
func applyTenant(t *testing.T, cfg *rest.Config, ns string) *rest.Config {
	t.Helper()
	w, err := TenantWork("cluster", ns, fleetv1.PodSecurityBaseline)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The add-on's namespace, where the executor ServiceAccount goes.
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ExecutorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.Raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s/%s of tenant work %s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), w.Name, err)
		}
	}
	user, groups := executorOf(ns)
	ecfg := rest.CopyConfig(cfg)
	ecfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return ecfg
}

// TestTenantExecutorIntegration checks on a real kube-apiserver, with the
// add-on's ClusterRole (manifests/scheduler/executor.yaml) and the objects
// of two tenant works (team-a, team-b), what the work agent's
// SubjectAccessReviews will answer for team-a's executor, the identity of
// team-a's FleetSet works: it may write every kind a FleetSet's work
// delivers in team-a, and server-side applies a rendered work's manifests
// there; it may write nothing in team-b, no namespace, and no RBAC or pods
// even in team-a.
func TestTenantExecutorIntegration(t *testing.T) {
	env, err := controlplane.Start("manifests/crds")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	createManifests(t, env.Config, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", "executor.yaml"))
	ecfg := applyTenant(t, env.Config, "team-a")
	applyTenant(t, env.Config, "team-b")

	user, groups := executorOf("team-a")
	allowed := func(ns, verb, group, resource string) (bool, string) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource}}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Allowed, got.Status.Reason
	}
	delivered := [][2]string{{"", "services"}, {"", "configmaps"}, {"", "secrets"}, {"apps", "statefulsets"}, {"fleetset.io", "subsetplacements"},
		{"policy", "poddisruptionbudgets"}, {"discovery.k8s.io", "endpointslices"}, {"multicluster.x-k8s.io", "serviceexports"}}
	// The work agent's verbs (ocm pkg/work/spoke/auth/basic).
	for _, verb := range []string{"get", "create", "update", "patch", "delete"} {
		for _, gr := range delivered {
			if ok, why := allowed("team-a", verb, gr[0], gr[1]); !ok {
				t.Errorf("team-a's executor may not %s %s.%s in team-a: %s", verb, gr[1], gr[0], why)
			}
			if ok, _ := allowed("team-b", verb, gr[0], gr[1]); ok {
				t.Errorf("team-a's executor may %s %s.%s in team-b", verb, gr[1], gr[0])
			}
			if ok, _ := allowed("default", verb, gr[0], gr[1]); ok {
				t.Errorf("team-a's executor may %s %s.%s in default", verb, gr[1], gr[0])
			}
		}
	}
	for _, c := range []struct{ ns, group, resource string }{
		{"", "", "namespaces"}, {"team-a", "rbac.authorization.k8s.io", "rolebindings"}, {"team-a", "rbac.authorization.k8s.io", "roles"},
		{"", "rbac.authorization.k8s.io", "clusterrolebindings"}, {"team-a", "", "pods"}, {"team-a", "", "serviceaccounts"},
		{"", "apiextensions.k8s.io", "customresourcedefinitions"},
		{"fleetset-system", "", "secrets"}, {"fleetset-system", "", "configmaps"}, {"fleetset-system", "apps", "statefulsets"},
	} {
		if ok, _ := allowed(c.ns, "create", c.group, c.resource); ok {
			t.Errorf("team-a's executor may create %s.%s (namespace %q)", c.resource, c.group, c.ns)
		}
	}
	// Nor the subresources that would lend it a pod's or an account's
	// rights: exec into a pod, a token of a ServiceAccount (its own too).
	for _, c := range []struct{ ns, resource, sub, name string }{
		{"team-a", "pods", "exec", ""}, {"team-a", "serviceaccounts", "token", ""},
		{fleetv1.ExecutorNamespace, "serviceaccounts", "token", fleetv1.ExecutorServiceAccountName("team-a")},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: "create", Resource: c.resource, Subresource: c.sub, Name: c.name}}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed {
			t.Errorf("team-a's executor may create %s/%s %q in %s", c.resource, c.sub, c.name, c.ns)
		}
	}

	// A rendered FleetSet work of team-a, server-side applied manifest by
	// manifest as its executor (what the work agent does once the reviews
	// allow it).
	fs := budgetFleetSet(6, ptr.To(intstr.FromInt32(1)), nil, "a", "b")
	fs.Namespace = "team-a"
	fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}
	ws, err := Works(fs, plannedSubsets(t, fs), nil)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(ecfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	apply := func(raw []byte) error {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)})
		return err
	}
	for _, w := range ws {
		for i, m := range w.Spec.Workload.Manifests {
			if err := apply(m.Raw); err != nil {
				t.Errorf("work %s manifest %d as team-a's executor: %v", w.Namespace, i, err)
			}
		}
	}
	// The escape of issue 35: a Secret for team-b under team-a's executor.
	secret, err := envelope.Encode([]runtime.Object{&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "escape"}, StringData: map[string]string{"k": "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := apply(secret[0].Raw); !apierrors.IsForbidden(err) {
		t.Errorf("a Secret in team-b applied as team-a's executor: %v, want Forbidden", err)
	}
}
