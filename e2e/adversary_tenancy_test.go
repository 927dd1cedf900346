//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// The adversary of issue 48's tenancy rows: a tenant with rights on the hub
// only (FleetSets in her own namespace, nothing else), trying to reach a
// member's credentials or Secrets through what the hub delivers for her.

// memberAllowed asks member m's authorizer whether user (in groups) may
// verb the resource (subresource sub, object name) in namespace ns.
func memberAllowed(t *testing.T, m member, user string, groups []string, verb, ns, group, resource, sub, name string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name}}}
	if err := m.c.Create(t.Context(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestAdversaryExecutorIdentity (issue 48, row 1): a tenant with hub rights
// only writes FleetSets whose pod template names the work executor as its
// serviceAccountName: the name the executor had in every tenant namespace
// before issue 48 (fleetset-work-executor) and the name it has now
// (fleetset-executor-<namespace>, in fleetset-system). Both are delivered
// (the hub has no reason to refuse them), and each member refuses their
// pods (FailedCreate on the StatefulSets): neither account exists in the
// tenant's namespace, and a pod can only run as an account of its own
// namespace. No pod of the namespace ever runs as either name, and the
// executor (which does exist, in fleetset-system, bound in the tenant
// namespace) lends its rights to no one: the tenant namespace's accounts may
// not mint its token or read fleetset-system's Secrets, and the executor
// itself may not mint tokens, exec into pods, create pods or bind roles.
func TestAdversaryExecutorIdentity(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-executor")
	tenant, user := f.hubTenant(t, ns)
	executor := fleetv1.ExecutorServiceAccountName(ns)
	names := map[string]string{"legacy": fleetv1.LegacyExecutorServiceAccount, "current": executor}
	for name, sa := range names {
		fs := f.newFleetSet(ns, name, 2)
		fs.Spec.Template.Spec.ServiceAccountName = sa
		if err := tenant.Create(t.Context(), fs); err != nil {
			t.Fatalf("%s creating FleetSet %s with serviceAccountName %s: %v", user, name, sa, err)
		}
	}
	// The members refuse the pods: a FailedCreate event on each
	// FleetSet's StatefulSets in some member, while the sampled pods never
	// name the executor.
	ranAs := map[string]string{}
	sample := func(ctx context.Context) error {
		for _, m := range f.members {
			var pods corev1.PodList
			if err := m.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, p := range pods.Items {
				for _, sa := range names {
					if p.Spec.ServiceAccountName == sa {
						ranAs[m.name+"/"+p.Name] = sa + " (" + string(p.Status.Phase) + ")"
					}
				}
			}
		}
		return nil
	}
	eventually(t, waitTimeout, "FailedCreate of both FleetSets' pods on the members", func(ctx context.Context) (bool, string, error) {
		if err := sample(ctx); err != nil {
			return false, "", err
		}
		refused := map[string]string{}
		for _, m := range f.members {
			var sts appsv1.StatefulSetList
			if err := m.c.List(ctx, &sts, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			var events corev1.EventList
			if err := m.c.List(ctx, &events, client.InNamespace(ns)); err != nil {
				return false, "", err
			}
			for _, s := range sts.Items {
				for _, e := range events.Items {
					if e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == s.Name && e.Reason == "FailedCreate" {
						refused[s.Labels[fleetv1.LabelSet]] = m.name + ": " + e.Message
					}
				}
			}
		}
		return len(refused) == len(names), fmt.Sprintf("refused: %v; pods as the executor: %v", refused, ranAs), nil
	})
	// A few more samples: a pod admitted late would show here.
	for range 3 {
		if err := sample(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if len(ranAs) > 0 {
		t.Errorf("pods of %s's FleetSets ran as the work executor: %v", user, ranAs)
	}

	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	execUser := "system:serviceaccount:" + fleetv1.ExecutorNamespace + ":" + executor
	execGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + fleetv1.ExecutorNamespace, "system:authenticated"}
	for _, m := range f.members {
		for _, sa := range names {
			err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: sa}, &corev1.ServiceAccount{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: ServiceAccount %s/%s: %v, want NotFound (a pod of %s could run as it)", m.name, ns, sa, err, ns)
			}
		}
		// The executor exists, where no tenant pod can name it.
		if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: fleetv1.ExecutorNamespace, Name: executor}, &corev1.ServiceAccount{}); err != nil {
			t.Errorf("%s: the executor %s/%s: %v", m.name, fleetv1.ExecutorNamespace, executor, err)
		}
		// Whatever account a tenant pod runs as (any of its namespace's).
		podUser := "system:serviceaccount:" + ns + ":default"
		for _, c := range []struct{ verb, ns, group, resource, sub, name string }{
			{"create", fleetv1.ExecutorNamespace, "", "serviceaccounts", "token", executor},
			{"get", fleetv1.ExecutorNamespace, "", "secrets", "", ""},
			{"create", fleetv1.ExecutorNamespace, "", "secrets", "", ""},
		} {
			if memberAllowed(t, m, podUser, groups, c.verb, c.ns, c.group, c.resource, c.sub, c.name) {
				t.Errorf("%s: a pod of %s may %s %s/%s %q in %s", m.name, ns, c.verb, c.resource, c.sub, c.name, c.ns)
			}
		}
		for _, c := range []struct{ verb, ns, group, resource, sub, name string }{
			{"create", fleetv1.ExecutorNamespace, "", "serviceaccounts", "token", executor},
			{"create", ns, "", "serviceaccounts", "token", "default"},
			{"create", ns, "", "pods", "exec", ""},
			{"create", ns, "", "pods", "", ""},
			{"create", ns, "", "serviceaccounts", "", ""},
			{"create", ns, "rbac.authorization.k8s.io", "rolebindings", "", ""},
			{"create", "default", "apps", "statefulsets", "", ""},
			{"get", fleetv1.ExecutorNamespace, "", "secrets", "", ""},
		} {
			if memberAllowed(t, m, execUser, execGroups, c.verb, c.ns, c.group, c.resource, c.sub, c.name) {
				t.Errorf("%s: the executor of %s may %s %s/%s %q in %s", m.name, ns, c.verb, c.resource, c.sub, c.name, c.ns)
			}
		}
	}
}

// TestAdversaryUnboundNamespaceWritesNothing (issue 48, row 2): a FleetSet
// in a hub namespace with no ManagedClusterSetBinding names the members.
// It is Degraded ClusterNotBound, and nothing of its namespace is written
// anywhere: no tenant work on the hub (the member namespace, its executor
// and RoleBinding), no namespace on any member. Once the namespace is bound
// the tenant works and the member namespaces appear.
func TestAdversaryUnboundNamespaceWritesNothing(t *testing.T) {
	f := theFleet
	ns := f.newUnboundNamespace(t, "adv-unbound")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 2))
	eventually(t, waitTimeout, "Degraded ClusterNotBound", func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		if c == nil || err != nil {
			return false, why, err
		}
		return c.Reason == fleetv1.ReasonClusterNotBound, c.Reason + ": " + c.Message, nil
	})
	tenantWork := func(ctx context.Context, m member) (bool, error) {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(manifestWorkGVK.GroupVersion().WithKind("ManifestWork"))
		err := f.hub.Get(ctx, client.ObjectKey{Namespace: m.name, Name: fleetv1.TenantWorkName(ns)}, w)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	memberNamespace := func(ctx context.Context, m member) (bool, error) {
		err := m.c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	// The hub wrote the tenant works at once before issue 48: give it a
	// few seconds.
	for range 5 {
		time.Sleep(time.Second)
		for _, m := range f.members {
			if ok, err := tenantWork(t.Context(), m); err != nil || ok {
				t.Fatalf("tenant work %s/%s of an unbound namespace: exists %v (%v)", m.name, fleetv1.TenantWorkName(ns), ok, err)
			}
			if ok, err := memberNamespace(t.Context(), m); err != nil || ok {
				t.Fatalf("%s: namespace %s of an unbound hub namespace: exists %v (%v)", m.name, ns, ok, err)
			}
		}
	}

	f.bindClusterSet(t, ns, "global")
	eventually(t, waitTimeout, "tenant works and member namespaces once bound", func(ctx context.Context) (bool, string, error) {
		var missing []string
		for _, m := range f.members {
			if ok, err := tenantWork(ctx, m); err != nil || !ok {
				missing = append(missing, m.name+": tenant work")
			}
			if ok, err := memberNamespace(ctx, m); err != nil || !ok {
				missing = append(missing, m.name+": namespace")
			}
		}
		return len(missing) == 0, "missing " + strings.Join(missing, ", "), nil
	})
}

// TestAdversarySecretReferences (issue 48, row 3): a tenant who may write
// FleetSets in her namespace but not get its Secrets references a
// platform Secret of that namespace (spec.dependencies Auto, the default:
// the hub would read it with its own rights and copy it to the members).
// The hub's admission refuses the create, naming the Secret; a grant of get
// on that one Secret admits it; so does, without the grant, the platform's
// opt-out label on the namespace.
func TestAdversarySecretReferences(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-secrets")
	tenant, user := f.hubTenant(t, ns)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform-db"}, StringData: map[string]string{"password": "s3cret"}}
	if err := f.hub.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.Template.Spec.Containers[0].Env = append(fs.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "PASSWORD",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "platform-db"}, Key: "password"}}})
	want := user + " may not get Secret " + ns + "/platform-db"
	if err := tenant.Create(t.Context(), fs.DeepCopy()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s creating a FleetSet referencing platform-db: %v, want refused with %q", user, err, want)
	}

	// Allowed to get that Secret (RBAC is read on each request): admitted.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform-db-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"platform-db"}}}}
	if err := f.hub.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	f.bindHubRole(t, ns, user, role.Name)
	eventually(t, 10*time.Second, "the create admitted with get on platform-db", func(ctx context.Context) (bool, string, error) {
		err := tenant.Create(ctx, fs.DeepCopy(), client.DryRunAll)
		return err == nil, errString(err), nil
	})

	// Without it, in a namespace the platform labelled unchecked: admitted.
	if err := f.hub.Delete(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the grant gone", func(ctx context.Context) (bool, string, error) {
		err := tenant.Create(ctx, fs.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), want), errString(err), nil
	})
	hubNS := &corev1.Namespace{}
	if err := f.hub.Get(t.Context(), client.ObjectKey{Name: ns}, hubNS); err != nil {
		t.Fatal(err)
	}
	if hubNS.Labels == nil {
		hubNS.Labels = map[string]string{}
	}
	hubNS.Labels[fleetv1.LabelSecretReferences] = fleetv1.SecretReferencesUnchecked
	if err := f.hub.Update(t.Context(), hubNS); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the create admitted in a namespace labelled unchecked", func(ctx context.Context) (bool, string, error) {
		err := tenant.Create(ctx, fs.DeepCopy())
		return err == nil, errString(err), nil
	})
}
