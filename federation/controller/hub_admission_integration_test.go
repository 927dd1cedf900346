//go:build integration

package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// impersonate returns a client acting as user in groups (and
// system:authenticated).
func impersonate(t testing.TB, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyHubAdmission creates manifests/hub/admission.yaml's policies and
// bindings, and deletes them when t ends (other tests share the apiserver).
func applyHubAdmission(t *testing.T) {
	t.Helper()
	path := filepath.Join(controlplane.RepoRoot(), "manifests", "hub", "admission.yaml")
	if err := controlplane.ApplyManifest(context.Background(), k8sClient, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{"fleetset-pod-security-level", "fleetset-reserved-namespaces", "fleetset-status-writer"} {
			for _, kind := range []string{"ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy"} {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("admissionregistration.k8s.io/v1")
				u.SetKind(kind)
				u.SetName(name)
				_ = k8sClient.Delete(context.Background(), u)
			}
		}
		// The apiserver stops enforcing them a moment later: wait for it.
		probe := sampleFleetSet("vap-tenant", "probe")
		rootOnEveryNode(probe)
		if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return k8sClient.Create(ctx, probe.DeepCopy(), client.DryRunAll) == nil, nil
		}); err != nil {
			t.Error("the hub's admission policies still apply 30s after their deletion")
		}
	})
}

// grantFleetSets lets user write FleetSets and their status in namespace ns.
func grantFleetSets(t testing.TB, ns, user string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-fleetset-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{fleetv1.GroupVersion.Group}, Resources: []string{"fleetsets", "fleetsets/status"},
		Verbs: []string{"get", "list", "create", "update", "patch"}}}}
	if err := k8sClient.Create(ctx, role); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "test-"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
	if err := k8sClient.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
}

// TestHubAdmissionPolicies applies manifests/hub/admission.yaml on a real
// apiserver. A tenant allowed to write FleetSets cannot create one asking
// for a Pod Security level above its namespace's (default baseline) or in
// a reserved namespace, and cannot write any FleetSet's status (the
// failover state of record): each refused with a message naming the field,
// the namespace or the writer. The platform's label lets privileged
// through; fleetset-hub's ServiceAccount writes status.
func TestHubAdmissionPolicies(t *testing.T) {
	ctx := t.Context()
	applyHubAdmission(t)
	const tenant, hubSA = "tenant-x", "system:serviceaccount:fleetset-system:fleetset-hub"
	createNamespace(t, "vap-tenant")
	grantFleetSets(t, "vap-tenant", tenant)
	grantFleetSets(t, "kube-system", tenant)
	grantFleetSets(t, "vap-tenant", hubSA)
	tc := impersonate(t, tenant)

	root := sampleFleetSet("vap-tenant", "root")
	rootOnEveryNode(root)
	// The policies take a moment to load: dry runs until the first refusal.
	// A refusal for another reason (the RBAC grant not seen yet) is not one.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := tc.Create(ctx, root.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "spec.podSecurityLevel"), nil
	}); err != nil {
		t.Fatal("the pod security policy did not refuse a privileged FleetSet within 30s")
	}
	err := tc.Create(ctx, root.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), `spec.podSecurityLevel: "privileged" is more permissive than "baseline"`) {
		t.Fatalf("tenant's privileged FleetSet: %v, want refused naming spec.podSecurityLevel", err)
	}

	// Each policy loads on its own: wait for the reserved-namespace one too
	// (2026-11-27 CI: a create went through before it had loaded).
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := tc.Create(ctx, sampleFleetSet("kube-system", "db"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "is reserved"), nil
	}); err != nil {
		t.Fatal("the reserved-namespace policy did not refuse a FleetSet in kube-system within 30s")
	}
	if err := tc.Create(ctx, sampleFleetSet("kube-system", "db")); err == nil || !strings.Contains(err.Error(), "metadata.namespace: kube-system is reserved") {
		t.Fatalf("tenant's FleetSet in kube-system: %v, want refused naming the namespace", err)
	}

	// The platform team allows privileged in the namespace.
	labelNamespace(t, "vap-tenant", labelPodSecurityLevel, "privileged")
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return tc.Create(ctx, root.DeepCopy(), client.DryRunAll) == nil, nil
	}); err != nil {
		t.Fatal("a privileged FleetSet is still refused in a namespace labelled privileged")
	}
	labelNamespace(t, "vap-tenant", labelPodSecurityLevel, "")

	fs := sampleFleetSet("vap-tenant", "db")
	if err := tc.Create(ctx, fs); err != nil {
		t.Fatalf("tenant's baseline FleetSet: %v", err)
	}
	forge := func(c client.Client) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &fleetv1.FleetSet{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(fs), cur); err != nil {
				return err
			}
			cur.Status.Subsets = []fleetv1.SubsetStatus{{Name: "east", Cluster: "evil", Failover: fleetv1.SubsetFailedOver, Epoch: 7}}
			return c.Status().Update(ctx, cur)
		})
	}
	if err := forge(tc); err == nil || !strings.Contains(err.Error(), "is written only by fleetset-hub") || !strings.Contains(err.Error(), tenant) {
		t.Fatalf("tenant's status write: %v, want refused naming the writer", err)
	}
	if err := forge(impersonate(t, hubSA, "system:serviceaccounts", "system:serviceaccounts:fleetset-system")); err != nil {
		t.Fatalf("fleetset-hub's status write: %v", err)
	}
}
