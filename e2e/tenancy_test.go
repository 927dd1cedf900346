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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// TestClusterSetBindingGatesDelivery: a FleetSet in a hub namespace with no
// ManagedClusterSetBinding is Degraded ClusterNotBound, naming its first
// cluster and the missing binding, and nothing reaches any member; binding
// OCM's set "global" (every cluster; OCM's registration controller marks
// the binding Bound) delivers it and it becomes Ready.
func TestClusterSetBindingGatesDelivery(t *testing.T) {
	f := theFleet
	ns := f.newUnboundNamespace(t, "unbound")
	fs := f.newFleetSet(ns, "db", 3)
	f.createFleetSet(t, fs)
	first := fs.Spec.Topology.Subsets[0].Cluster
	eventually(t, waitTimeout, "Degraded ClusterNotBound naming "+first, func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		if c == nil || err != nil {
			return false, why, err
		}
		return c.Reason == fleetv1.ReasonClusterNotBound && strings.Contains(c.Message, "cluster "+first+" is in no ManagedClusterSet bound to namespace "+ns) &&
			strings.Contains(c.Message, "ManagedClusterSetBinding"), c.Reason + ": " + c.Message, nil
	})
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items) != 0 {
			t.Errorf("%s: %d StatefulSets delivered in %s without a binding", m.name, len(sts.Items), ns)
		}
	}
	f.bindClusterSet(t, ns, "global")
	f.waitReady(t, ns, "db", 3)
	var nsObj corev1.Namespace
	if err := f.members[0].c.Get(t.Context(), client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	if got := nsObj.Labels["pod-security.kubernetes.io/enforce"]; got != "baseline" {
		t.Errorf("%s: namespace %s created with pod-security enforce %q, want baseline", f.members[0].name, ns, got)
	}
}

// TestDeletionPolicyRetain: deleting a FleetSet with deletionPolicy Retain
// leaves its member StatefulSets and their running pods (the same pods, by
// UID) in every member: the work agent orphans them.
func TestDeletionPolicyRetain(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "retain")
	fs := f.newFleetSet(ns, "db", 3)
	fs.Spec.DeletionPolicy = fleetv1.DeletionRetain
	f.createFleetSet(t, fs)
	before := f.waitReady(t, ns, "db", 3)
	if err := f.hub.Delete(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "the FleetSet's ManifestWorks gone from the hub", func(ctx context.Context) (bool, string, error) {
		var l unstructured.UnstructuredList
		l.SetGroupVersionKind(manifestWorkGVK)
		if err := f.hub.List(ctx, &l, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
			return false, "", err
		}
		return len(l.Items) == 0, fmt.Sprintf("%d works", len(l.Items)), nil
	})
	// The agents have acted on the deletion; give them a few seconds more to
	// have removed anything they were going to.
	time.Sleep(5 * time.Second)
	after, err := f.instances(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, in := range after {
		uids[in.pod] = in.uid
	}
	for _, in := range before {
		if uids[in.pod] != in.uid {
			t.Errorf("pod %s in %s: uid %s before the FleetSet's deletion, %q after; want it untouched", in.pod, in.cluster, in.uid, uids[in.pod])
		}
	}
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items) == 0 {
			t.Errorf("%s: StatefulSets of the retained FleetSet deleted", m.name)
		}
		for i := range sts.Items {
			// Leave nothing behind for the next test.
			_ = m.c.Delete(context.Background(), &sts.Items[i])
		}
	}
}

// TestUnownedServiceIsNeverAdopted: a Service someone made in a member,
// named as a FleetSet's serviceName, is not taken over (the add-on's
// admission policy refuses the work agent's write), the FleetSet says so in
// Degraded naming the Service, and deleting the FleetSet leaves the Service
// as it was.
func TestUnownedServiceIsNeverAdopted(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adopt")
	m := f.members[0]
	ctx := t.Context()
	if err := m.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Labels: map[string]string{"team": "theirs"}},
		// Headless, like the one the FleetSet delivers, so that only the
		// admission policy can refuse the work agent's write.
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	if err := m.c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.DeletionPolicy = fleetv1.DeletionDelete
	f.createFleetSet(t, fs)
	eventually(t, waitTimeout, "Degraded ApplyFailed naming Service "+ns+"/db", func(ctx context.Context) (bool, string, error) {
		c, why, err := f.degraded(ctx, ns, "db")
		if c == nil || err != nil {
			return false, why, err
		}
		return c.Reason == fleetv1.ReasonApplyFailed && strings.Contains(c.Message, "Service "+ns+"/db exists and is not this FleetSet's"), c.Reason + ": " + c.Message, nil
	})
	check := func(when string) {
		var got corev1.Service
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(theirs), &got); err != nil {
			t.Fatalf("%s: the unowned Service: %v", when, err)
		}
		if got.Labels[fleetv1.LabelOwnerUID] != "" || got.Labels["team"] != "theirs" || got.Spec.Selector["app"] != "theirs" || len(got.OwnerReferences) != 0 {
			t.Errorf("%s: the unowned Service changed: labels %v, selector %v, owners %v", when, got.Labels, got.Spec.Selector, got.OwnerReferences)
		}
	}
	check("while the FleetSet runs")
	if err := f.hub.Delete(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "the FleetSet's StatefulSets removed from "+m.name, func(ctx context.Context) (bool, string, error) {
		var sts appsv1.StatefulSetList
		if err := m.c.List(ctx, &sts, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		return len(sts.Items) == 0, fmt.Sprintf("%d StatefulSets", len(sts.Items)), nil
	})
	check("after the FleetSet's deletion")
}

// TestWorksRunAsTheExecutor: every FleetSet ManifestWork names its
// namespace's executor ServiceAccount fleetset-system/fleetset-executor-<namespace>,
// which the namespace's tenant work (applied by the work agent) created in
// each member with a RoleBinding to the add-on's ClusterRole; each member's
// authorizer lets that account write the delivered kinds in that namespace
// and nothing of what makes a cluster-admin: not RBAC, not CRDs, not
// webhooks, not pods, not namespaces, nothing in another namespace.
func TestWorksRunAsTheExecutor(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "executor")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 2))
	f.waitReady(t, ns, "db", 2)
	var l unstructured.UnstructuredList
	l.SetGroupVersionKind(manifestWorkGVK)
	if err := f.hub.List(t.Context(), &l, client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	for _, w := range l.Items {
		sa, _, _ := unstructured.NestedStringMap(w.Object, "spec", "executor", "subject", "serviceAccount")
		if sa["namespace"] != fleetv1.ExecutorNamespace || sa["name"] != fleetv1.ExecutorServiceAccountName(ns) {
			t.Errorf("work %s/%s: executor %v, want %s/%s", w.GetNamespace(), w.GetName(), sa, fleetv1.ExecutorNamespace, fleetv1.ExecutorServiceAccountName(ns))
		}
	}
	user := "system:serviceaccount:" + fleetv1.ExecutorNamespace + ":" + fleetv1.ExecutorServiceAccountName(ns)
	for _, m := range f.members {
		var tw unstructured.Unstructured
		tw.SetGroupVersionKind(manifestWorkGVK.GroupVersion().WithKind("ManifestWork"))
		if err := f.hub.Get(t.Context(), client.ObjectKey{Namespace: m.name, Name: fleetv1.TenantWorkName(ns)}, &tw); err != nil {
			t.Errorf("%s: tenant work: %v", m.name, err)
		}
		var rb rbacv1.RoleBinding
		if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: fleetv1.ExecutorRoleBinding}, &rb); err != nil {
			t.Errorf("%s: the executor's RoleBinding: %v", m.name, err)
		}
		for _, c := range []struct {
			ns, group, resource, verb string
			want                      bool
		}{
			{ns, "apps", "statefulsets", "create", true},
			{ns, "fleetset.io", "subsetplacements", "patch", true},
			{ns, "", "services", "delete", true},
			{ns, "", "configmaps", "update", true},
			{ns, "policy", "poddisruptionbudgets", "patch", true},
			{ns, "", "secrets", "create", true}, // spec.dependencies: the Secrets the template references
			{"", "rbac.authorization.k8s.io", "clusterroles", "create", false},
			{ns, "rbac.authorization.k8s.io", "rolebindings", "create", false},
			{"", "apiextensions.k8s.io", "customresourcedefinitions", "create", false},
			{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "create", false},
			{ns, "", "pods", "create", false},
			{"", "", "namespaces", "create", false},
			{"default", "", "secrets", "create", false},
			{"default", "apps", "statefulsets", "create", false},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + fleetv1.ExecutorNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Verb: c.verb, Group: c.group, Resource: c.resource}}}
			if err := m.c.Create(t.Context(), sar); err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != c.want {
				t.Errorf("%s: the executor may %s %s.%s in %q: %v, want %v", m.name, c.verb, c.resource, c.group, c.ns, sar.Status.Allowed, c.want)
			}
		}
	}
}

// TestDeletionKeepsVolumesByDefault: a FleetSet with volume claim templates
// and no deletionPolicy (Retain by default) is deleted once its
// StatefulSets have created their PersistentVolumeClaims (the local fleet
// has no provisioner: they stay Pending, which is all this needs): every
// claim and every StatefulSet is still in its member afterwards.
func TestDeletionKeepsVolumesByDefault(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "volumes")
	fs := f.newFleetSet(ns, "db", 2)
	fs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	f.createFleetSet(t, fs)
	claims := func(ctx context.Context) (map[string]string, error) {
		out := map[string]string{}
		for _, m := range f.members {
			var l corev1.PersistentVolumeClaimList
			if err := m.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			for _, c := range l.Items {
				out[m.name+"/"+c.Name] = string(c.UID)
			}
		}
		return out, nil
	}
	var before map[string]string
	eventually(t, waitTimeout, "2 PersistentVolumeClaims created", func(ctx context.Context) (bool, string, error) {
		var err error
		before, err = claims(ctx)
		return len(before) == 2, fmt.Sprint(before), err
	})
	if err := f.hub.Delete(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "the FleetSet gone from the hub", func(ctx context.Context) (bool, string, error) {
		_, err := f.getFleetSet(ctx, ns, "db")
		return err != nil, fmt.Sprint(err), nil
	})
	time.Sleep(10 * time.Second) // what the work agents were going to remove, they have
	after, err := claims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for k, uid := range before {
		if after[k] != uid {
			t.Errorf("PersistentVolumeClaim %s: uid %s before, %q after the FleetSet's deletion; want it kept", k, uid, after[k])
		}
	}
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items) == 0 {
			t.Errorf("%s: the retained FleetSet's StatefulSets deleted", m.name)
		}
		for i := range sts.Items {
			_ = m.c.Delete(context.Background(), &sts.Items[i])
		}
	}
}
