//go:build integration

package cmd

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// aggregated reports whether the built-in ClusterRole name holds a rule
// for fleetsets with verb.
func aggregated(ctx context.Context, c client.Client, name, verb string) bool {
	cr := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cr); err != nil {
		return false
	}
	for _, r := range cr.Rules {
		if slices.Contains(r.APIGroups, fleetv1.GroupVersion.Group) && slices.Contains(r.Resources, "fleetsets") && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// tenantFleetSet returns the sample FleetSet ns/name with a pod template.
func tenantFleetSet(ns, name string) *fleetv1.FleetSet {
	fs := sample(3)
	fs.Namespace, fs.Name = ns, name
	fs.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "registry.k8s.io/pause:3.10.1"}}},
	}
	return fs
}

// asServiceAccount returns a client of the hub impersonating ServiceAccount
// ns/name.
func asServiceAccount(t *testing.T, ns, name string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(hubEnv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	return newClient(t, cfg)
}

// TestTenantRoles: manifests/hub's fleetset-editor and fleetset-viewer,
// aggregated by the real kube-controller-manager into the built-in edit,
// admin and view roles, let a ServiceAccount bound to edit in a namespace
// create a FleetSet there (and not write its status), and one bound to
// view list FleetSets but not create one.
func TestTenantRoles(t *testing.T) {
	ctx := context.Background()
	admin := newClient(t, hubEnv.Config)
	for _, f := range []string{"fleetset_editor_role.yaml", "fleetset_viewer_role.yaml"} {
		if err := controlplane.ApplyManifest(ctx, admin, filepath.Join(controlplane.RepoRoot(), "manifests", "hub", f)); err != nil {
			t.Fatal(err)
		}
	}
	stop, err := controlplane.StartControllerManager(hubEnv.Config, t.TempDir(), "clusterrole-aggregation-controller")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return aggregated(ctx, admin, "edit", "create") && aggregated(ctx, admin, "admin", "create") && aggregated(ctx, admin, "view", "list"), nil
	}); err != nil {
		t.Fatalf("fleetset-editor/viewer not aggregated into edit, admin and view: %v", err)
	}
	if aggregated(ctx, admin, "view", "create") {
		t.Fatal("view may create FleetSets")
	}

	const ns = "tenant-a"
	create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	for _, role := range []string{"edit", "view"} {
		create(t, admin,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role + "er"}},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role + "er"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: role + "er"}},
			})
	}
	editor, viewer := asServiceAccount(t, ns, "editer"), asServiceAccount(t, ns, "viewer")

	fs := tenantFleetSet(ns, "tenantdb")
	if err := editor.Create(ctx, fs); err != nil {
		t.Fatalf("edit in %s: creating a FleetSet: %v", ns, err)
	}
	fs.Status.Replicas = 3
	if err := editor.Status().Update(ctx, fs); !apierrors.IsForbidden(err) {
		t.Fatalf("edit in %s: writing a FleetSet's status: %v, want Forbidden", ns, err)
	}
	other := tenantFleetSet("default", "mydb")
	if err := editor.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Fatalf("edit in %s: creating a FleetSet in default: %v, want Forbidden", ns, err)
	}

	var list fleetv1.FleetSetList
	if err := viewer.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("view in %s: listing FleetSets: %d, %v; want 1, nil", ns, len(list.Items), err)
	}
	second := tenantFleetSet(ns, "viewerdb")
	if err := viewer.Create(ctx, second); !apierrors.IsForbidden(err) {
		t.Fatalf("view in %s: creating a FleetSet: %v, want Forbidden", ns, err)
	}
}
