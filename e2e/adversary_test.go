//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// The actors of the adversarial tests (e2e/adversary_*_test.go, one per
// row of docs/security.md): each attack is tried as the least-privileged
// actor who could make it, impersonated on the real apiservers.

// hubTenant returns a hub client impersonating a new user who is a tenant
// with rights on the hub only, and her name: bound in namespace ns alone to
// a Role with the rules of the ClusterRole fleetset-editor
// (manifests/hub/fleetset_editor_role.yaml, which a platform aggregates
// into edit: FleetSets and their scale, status read-only) and the extra
// rules given (none: no Secrets, no ServiceAccounts, nothing on a member).
// The local fleet's hub installs no fleetset-editor, so the Role copies its
// rules from the manifest. It returns once the apiserver's authorizer lets
// her list FleetSets in ns.
func (f *fleet) hubTenant(t *testing.T, ns string, extra ...rbacv1.PolicyRule) (client.Client, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "manifests", "hub", "fleetset_editor_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var editor rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &editor); err != nil || len(editor.Rules) == 0 {
		t.Fatalf("manifests/hub/fleetset_editor_role.yaml: %v (%d rules)", err, len(editor.Rules))
	}
	user := "tenant-" + randSuffix()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: append(editor.Rules, extra...)}
	if err := f.hub.Create(t.Context(), role); err != nil {
		t.Fatalf("granting %s its rights in %s: %v", user, ns, err)
	}
	f.bindHubRole(t, ns, user, role.Name)
	cfg, err := framework.RESTConfig(f.cfg.HubKubeconfig, framework.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, user+" may list FleetSets in "+ns, func(ctx context.Context) (bool, string, error) {
		err := c.List(ctx, &fleetv1.FleetSetList{}, client.InNamespace(ns))
		return err == nil, errString(err), nil
	})
	return c, user
}

// bindHubRole binds Role ns/role to user on the hub.
func (f *fleet) bindHubRole(t *testing.T, ns, user, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: role + "-"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}}
	if err := f.hub.Create(t.Context(), rb); err != nil {
		t.Fatal(err)
	}
}

// memberEditor binds user to the built-in ClusterRole edit in namespace ns
// of member m (a member namespace editor: what a platform team hands a
// tenant) and returns a client of m impersonating her.
func (f *fleet) memberEditor(t *testing.T, m member, ns, user string) client.Client {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e-editor-" + user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}
	if err := m.c.Create(t.Context(), rb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("%s: binding %s to edit in %s: %v", m.name, user, ns, err)
	}
	cfg := f.memberRESTConfig(t, m.name)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The binding reaches the authorizer a moment later.
	eventually(t, waitTimeout, user+" may create pods in "+ns+" of "+m.name, func(ctx context.Context) (bool, string, error) {
		err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e-editor-probe"}}, client.DryRunAll)
		return err == nil, errString(err), nil
	})
	return c
}
