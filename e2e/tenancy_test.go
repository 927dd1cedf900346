//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestSubsetPlacementWritesAreTheWorkAgents asks each member's real RBAC
// authorizer (its built-in roles aggregated by its kube-controller-manager)
// what a namespace editor and a namespace admin may do with SubsetPlacements:
// read them, but not create, change or delete them; only OCM's work agent
// (through the role the add-on aggregates into the work agent's role) writes
// them.
func TestSubsetPlacementWritesAreTheWorkAgents(t *testing.T) {
	f := theFleet
	ctx := t.Context()
	for _, m := range f.members {
		ns := "tenancy-" + randSuffix()
		if err := m.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("%s: creating namespace %s: %v", m.name, ns, err)
		}
		t.Cleanup(func() {
			_ = m.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		for _, role := range []string{"edit", "admin"} {
			user := "tenant-" + role
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
			if err := m.c.Create(ctx, rb); err != nil {
				t.Fatalf("%s: binding %s to %s: %v", m.name, user, role, err)
			}
			eventually(t, waitTimeout, fmt.Sprintf("%s: %s may read SubsetPlacements in %s, and write none", m.name, user, ns), func(ctx context.Context) (bool, string, error) {
				var got []string
				ok := true
				for _, verb := range []string{"get", "list", "create", "update", "patch", "delete"} {
					sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:authenticated"},
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: fleetv1.GroupVersion.Group, Resource: "subsetplacements"}}}
					if err := m.c.Create(ctx, sar); err != nil {
						return false, "", err
					}
					want := verb == "get" || verb == "list"
					ok = ok && sar.Status.Allowed == want
					got = append(got, fmt.Sprintf("%s=%v", verb, sar.Status.Allowed))
				}
				return ok, fmt.Sprint(got), nil
			})
		}
	}
}
