//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// The fleetset add-on (manifests/addon): a ClusterManagementAddOn and an
// AddOnTemplate named fleetset, enabled per member by a ManagedClusterAddOn.
const addonName = "fleetset"

var managedClusterAddOnGVK = schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "ManagedClusterAddOn"}

// addonObject is one object the add-on installs on a member, and whether
// disabling the add-on keeps it (deletion-orphan).
type addonObject struct {
	obj  client.Object
	key  client.ObjectKey
	kept bool
}

// addonObjects lists what the add-on's template installs on each member.
func addonObjects() []addonObject {
	ns := fleetv1.ResyncLeaseNamespace
	return []addonObject{
		{obj: &apiextensionsv1.CustomResourceDefinition{}, key: client.ObjectKey{Name: "subsetplacements.fleetset.io"}, kept: true},
		{obj: &corev1.Namespace{}, key: client.ObjectKey{Name: ns}, kept: true},
		{obj: &appsv1.Deployment{}, key: client.ObjectKey{Namespace: ns, Name: "fleetset-scheduler"}},
		{obj: &corev1.ServiceAccount{}, key: client.ObjectKey{Namespace: ns, Name: "fleetset-scheduler"}},
		{obj: &rbacv1.ClusterRole{}, key: client.ObjectKey{Name: "fleetset-scheduler"}},
		{obj: &rbacv1.ClusterRoleBinding{}, key: client.ObjectKey{Name: "fleetset-scheduler-as-kube-scheduler"}},
		{obj: &rbacv1.Role{}, key: client.ObjectKey{Namespace: ns, Name: "fleetset-scheduler-member"}},
		{obj: &rbacv1.RoleBinding{}, key: client.ObjectKey{Namespace: "kube-system", Name: "fleetset-scheduler-extension-apiserver-authentication-reader"}},
	}
}

// addonCondition returns the status of the named condition of the member's
// ManagedClusterAddOn fleetset on the hub ("" when absent).
func (f *fleet) addonCondition(ctx context.Context, cluster, condType string) (string, string, error) {
	mca := &unstructured.Unstructured{}
	mca.SetGroupVersionKind(managedClusterAddOnGVK)
	if err := f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addonName}, mca); err != nil {
		return "", "", err
	}
	conds, _, _ := unstructured.NestedSlice(mca.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condType {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg, nil
		}
	}
	return "", "", nil
}

func (f *fleet) enableAddon(ctx context.Context, cluster string) error {
	mca := &unstructured.Unstructured{}
	mca.SetGroupVersionKind(managedClusterAddOnGVK)
	mca.SetNamespace(cluster)
	mca.SetName(addonName)
	mca.Object["spec"] = map[string]any{}
	err := f.hub.Create(ctx, mca)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// waitAddonInstalled waits until the member's ManagedClusterAddOn is
// Available and every object of the template is on the member.
func (f *fleet) waitAddonInstalled(t *testing.T, m member) {
	t.Helper()
	eventually(t, waitTimeout, fmt.Sprintf("the fleetset add-on installed and Available on %s", m.name), func(ctx context.Context) (bool, string, error) {
		st, msg, err := f.addonCondition(ctx, m.name, "Available")
		if err != nil {
			return false, "", err
		}
		if st != string(metav1.ConditionTrue) {
			return false, fmt.Sprintf("ManagedClusterAddOn %s/%s Available=%q: %s", m.name, addonName, st, msg), nil
		}
		for _, o := range addonObjects() {
			if err := m.c.Get(ctx, o.key, o.obj); err != nil {
				return false, fmt.Sprintf("%T %s on %s: %v", o.obj, o.key, m.name, err), nil
			}
		}
		return true, "", nil
	})
}

// TestAddonInstallsAndRemovesTheMemberSide checks the member side of fleetset
// as OCM installs it: the fleetset add-on is Available on every member and
// its objects are there; disabling it on one member (deleting the
// ManagedClusterAddOn) removes fleetset-scheduler's Deployment and RBAC there
// but keeps the SubsetPlacement CRD, the namespace and a user's
// SubsetPlacement; enabling it again brings everything back.
func TestAddonInstallsAndRemovesTheMemberSide(t *testing.T) {
	f := theFleet
	for _, m := range f.members {
		f.waitAddonInstalled(t, m)
	}

	m := f.members[len(f.members)-1]
	ctx := t.Context()
	ns := f.newNamespace(t, "addon")
	if err := m.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s on %s: %v", ns, m.name, err)
	}
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"},
		Spec: fleetv1.SubsetPlacementSpec{
			OrdinalStart: 0,
			Domains:      []fleetv1.DomainShare{{Name: f.zones[0]}},
		},
	}
	if err := m.c.Create(ctx, sp); err != nil {
		t.Fatalf("creating SubsetPlacement on %s: %v", m.name, err)
	}

	// Whatever happens below, leave the add-on enabled for the other tests.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.enableAddon(ctx, m.name); err != nil {
			t.Errorf("re-enabling the add-on on %s: %v", m.name, err)
		}
		f.waitAddonInstalled(t, m)
	})

	start := time.Now()
	mca := &unstructured.Unstructured{}
	mca.SetGroupVersionKind(managedClusterAddOnGVK)
	mca.SetNamespace(m.name)
	mca.SetName(addonName)
	if err := f.hub.Delete(ctx, mca); err != nil {
		t.Fatalf("disabling the add-on on %s: %v", m.name, err)
	}
	eventually(t, waitTimeout, fmt.Sprintf("the add-on's objects removed from %s", m.name), func(ctx context.Context) (bool, string, error) {
		for _, o := range addonObjects() {
			err := m.c.Get(ctx, o.key, o.obj)
			switch {
			case o.kept && err != nil:
				return false, "", fmt.Errorf("%T %s was deleted from %s, but it is deletion-orphan: %v", o.obj, o.key, m.name, err)
			case !o.kept && err == nil:
				return false, fmt.Sprintf("%T %s still on %s", o.obj, o.key, m.name), nil
			case !o.kept && !apierrors.IsNotFound(err):
				return false, "", err
			}
		}
		return true, "", nil
	})
	t.Logf("add-on disabled on %s: its objects removed %.1fs after the ManagedClusterAddOn was deleted", m.name, time.Since(start).Seconds())
	for _, o := range addonObjects() {
		if o.kept {
			if err := m.c.Get(ctx, o.key, o.obj); err != nil {
				t.Errorf("%T %s on %s after disabling: %v", o.obj, o.key, m.name, err)
			} else if o.obj.GetDeletionTimestamp() != nil {
				t.Errorf("%T %s on %s after disabling: being deleted, want kept", o.obj, o.key, m.name)
			}
		}
	}
	if err := m.c.Get(ctx, client.ObjectKeyFromObject(sp), &fleetv1.SubsetPlacement{}); err != nil {
		t.Errorf("the user's SubsetPlacement %s/%s on %s after disabling the add-on: %v", ns, sp.Name, m.name, err)
	}

	start = time.Now()
	if err := f.enableAddon(ctx, m.name); err != nil {
		t.Fatalf("enabling the add-on on %s: %v", m.name, err)
	}
	f.waitAddonInstalled(t, m)
	t.Logf("add-on enabled again on %s: Available with all objects after %.1fs", m.name, time.Since(start).Seconds())
}
