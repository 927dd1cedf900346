//go:build integration

package plugins_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// as returns a client impersonating user with groups (system:authenticated
// added).
func as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: cl.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bind binds user to ClusterRole role, in namespace ns ("" cluster-wide).
func bind(t *testing.T, ns, user, role string) {
	t.Helper()
	subj := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	var err error
	if ns == "" {
		_, err = cs.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}, Subjects: subj, RoleRef: ref}, metav1.CreateOptions{})
	} else {
		_, err = cs.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}, Subjects: subj, RoleRef: ref}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeliveredObjectsAdmission applies manifests/scheduler/admission.yaml
// (the ValidatingAdmissionPolicy the add-on installs) on a real apiserver:
// a namespace admin cannot remove a delivered SubsetPlacement's fencing,
// delete it, write its fence record, change a delivered StatefulSet's
// fleetset labels, or delete the member's Lease, each refused with a
// message naming the object; the work agent's identity can change them, the
// member component can write the fence record but not the spec, and a
// StatefulSet's other labels stay the admin's. A pod's fleetset.io/domain
// label is written by fleetset-scheduler only (RBAC and policy); its role
// labels by anyone allowed to patch it.
func TestDeliveredObjectsAdmission(t *testing.T) {
	ctx := context.Background()
	root := controlplane.RepoRoot()
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "rbac.yaml"))
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "admission.yaml"))
	ns := newNamespace(t, "vap")
	const tenant, agent = "tenant", "system:serviceaccount:open-cluster-management-agent:klusterlet-work-sa"
	const scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"
	const agentGroup = "system:serviceaccounts:open-cluster-management-agent"
	// What a namespace admin may do to these objects (the built-in admin
	// role is aggregated by kube-controller-manager, which envtest does not
	// run).
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-namespace-admin"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"fleetset.io", "apps", "coordination.k8s.io", ""}, Resources: []string{"subsetplacements", "statefulsets", "leases", "configmaps", "pods"},
			Verbs: []string{"get", "list", "update", "patch", "delete"}}}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	bind(t, ns, tenant, "test-namespace-admin")
	bind(t, fleetv1.ResyncLeaseNamespace, tenant, "test-namespace-admin")
	bind(t, "", agent, "cluster-admin")

	sp := makePlacement(ns, "db-east", 0, fleetv1.DoNotSchedule, domains("zone-a")...)
	sp.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: 0, Epoch: 1}
	sp.Labels = map[string]string{fleetv1.LabelSet: "db"}
	if err := cl.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	sts := makeStatefulSet(ns, "db-east", "db-east", 0, 0)
	sts.Labels = map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east", "team": "a"}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: "fleetset-member"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("member")}}
	if _, err := cs.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}

	merge := func(c client.Client, obj client.Object, patch string) error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	spKey := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east"}}
	tc := as(t, tenant)
	// The policy takes a moment to load: wait, with dry runs (admitted but
	// not stored), for the first refusal.
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := tc.Patch(ctx, spKey.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fencing":null}}`)), client.DryRunAll)
		return err != nil, nil
	}); werr != nil {
		t.Fatalf("the admission policy did not refuse a namespace admin's dry run within 30s")
	}
	err := merge(tc, spKey, `{"spec":{"fencing":null}}`)
	if err == nil {
		t.Fatalf("a namespace admin removed spec.fencing of a delivered SubsetPlacement")
	}
	want := "SubsetPlacement " + ns + "/db-east is delivered by fleetset-hub with fencing: only the OCM work agent may change or delete it"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("removing spec.fencing: %v, want %q", err, want)
	}
	for _, tt := range []struct {
		what string
		do   func() error
		want string
	}{
		{"delete the SubsetPlacement", func() error { return tc.Delete(ctx, spKey.DeepCopy()) }, want},
		{"write the fence record", func() error {
			return merge(tc, spKey.DeepCopy(), `{"metadata":{"annotations":{"fleetset.io/fenced-epoch":"9"}}}`)
		}, want},
		{"change the StatefulSet's pod template fleetset.io/placement label", func() error {
			_, err := kubeAs(t, tenant).AppsV1().StatefulSets(ns).Patch(ctx, "db-east", types.MergePatchType, []byte(`{"spec":{"template":{"metadata":{"labels":{"fleetset.io/placement":"other"}}}}}`), metav1.PatchOptions{})
			return err
		}, "StatefulSet " + ns + "/db-east is delivered by fleetset-hub"},
		{"delete the StatefulSet, orphaning its pods", func() error {
			return kubeAs(t, tenant).AppsV1().StatefulSets(ns).Delete(ctx, "db-east", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
		}, "StatefulSet " + ns + "/db-east is delivered by fleetset-hub: only the OCM work agent and fleetset's member component may delete it"},
		{"delete the member's Lease", func() error {
			return kubeAs(t, tenant).CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Delete(ctx, "fleetset-member", metav1.DeleteOptions{})
		}, "Lease fleetset-system/fleetset-member is fleetset's fencing"},
	} {
		if err := tt.do(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("tenant: %s: err = %v, want a refusal containing %q", tt.what, err, tt.want)
		}
	}
	if _, err := kubeAs(t, tenant).AppsV1().StatefulSets(ns).Patch(ctx, "db-east", types.MergePatchType, []byte(`{"metadata":{"labels":{"fleetset.io/set":null}}}`), metav1.PatchOptions{}); err == nil {
		t.Errorf("tenant: removing the StatefulSet's fleetset.io/set label: allowed, want refused")
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east-0",
		Labels: map[string]string{fleetv1.LabelPlacement: "db-east", fleetv1.LabelSet: "db", "app": "standalone"}}, // no StatefulSet adopts it
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeAs(t, tenant).CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"fleetset.io/placement":null}}}`), metav1.PatchOptions{}); err == nil ||
		!strings.Contains(err.Error(), "pod "+ns+"/db-east-0 belongs to a StatefulSet fleetset-hub delivered") {
		t.Errorf("tenant: removing a pod's fleetset.io/placement label: err = %v, want refused", err)
	}
	if _, err := kubeAs(t, tenant).CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"other"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("tenant: changing a pod's own label: %v", err)
	}
	// fleetset.io/domain is fleetset-scheduler's (RBAC patch on pods, and
	// the policy), never a tenant's; fleetset-scheduler changes no other
	// fleetset.io/ label.
	domainPatch := func(cs kubernetes.Interface, patch string) error {
		_, err := cs.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	sched := kubeAs(t, scheduler, "system:serviceaccounts", "system:serviceaccounts:fleetset-system")
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"labels":{"fleetset.io/domain":"zone-a"}}}`); err == nil ||
		!strings.Contains(err.Error(), "the labels fleetset.io/domain and fleetset.io/cluster of pod "+ns+"/db-east-0 are set only by fleetset-scheduler") {
		t.Errorf("tenant: setting a pod's fleetset.io/domain: err = %v, want refused", err)
	}
	if err := domainPatch(sched, `{"metadata":{"labels":{"fleetset.io/domain":"zone-a"}}}`); err != nil {
		t.Errorf("fleetset-scheduler: setting a pod's fleetset.io/domain (PreBind): %v", err)
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"labels":{"fleetset.io/domain":"zone-b"}}}`); err == nil {
		t.Errorf("tenant: changing a pod's fleetset.io/domain: allowed, want refused")
	}
	// The same for the locality annotations, which the Binding sets (the
	// binding subresource is not an UPDATE of the pod: no policy applies).
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"annotations":{"fleetset.io/cluster":"west"}}}`); err == nil ||
		!strings.Contains(err.Error(), "the annotations fleetset.io/domain and fleetset.io/cluster of pod "+ns+"/db-east-0 are set only by fleetset-scheduler") {
		t.Errorf("tenant: setting a pod's fleetset.io/cluster annotation: err = %v, want refused", err)
	}
	if err := domainPatch(sched, `{"metadata":{"annotations":{"fleetset.io/domain":"zone-a"}}}`); err != nil {
		t.Errorf("fleetset-scheduler: setting a pod's fleetset.io/domain annotation: %v", err)
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"annotations":{"fleetset.io/domain":null}}}`); err == nil {
		t.Errorf("tenant: removing a pod's fleetset.io/domain annotation: allowed, want refused")
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"annotations":{"note":"mine"}}}`); err != nil {
		t.Errorf("tenant: a pod's own annotation once it has fleetset.io/domain: %v", err)
	}
	if err := domainPatch(sched, `{"metadata":{"labels":{"fleetset.io/placement":"other"}}}`); err == nil {
		t.Errorf("fleetset-scheduler: changing a pod's fleetset.io/placement: allowed, want refused")
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"labels":{"app":"again"}}}`); err != nil {
		t.Errorf("tenant: changing a pod's own label once it has fleetset.io/domain: %v", err)
	}
	// The role labels are written by whoever may patch the pod: the
	// workload itself under the label contract, or the member component
	// from the role probe (docs/scheduler.md#roles); the pod's other
	// fleetset.io/ labels stay unchangeable.
	for _, patch := range []string{
		`{"metadata":{"labels":{"fleetset.io/role":"primary","fleetset.io/access-mode":"ReadWrite"}}}`,
		`{"metadata":{"labels":{"fleetset.io/role":"replica","fleetset.io/access-mode":"ReadOnly"}}}`,
		`{"metadata":{"labels":{"fleetset.io/role":null,"fleetset.io/access-mode":null}}}`,
	} {
		if err := domainPatch(kubeAs(t, tenant), patch); err != nil {
			t.Errorf("tenant (the workload): %s on a fleetset pod: %v", patch, err)
		}
	}
	if err := domainPatch(sched, `{"metadata":{"labels":{"fleetset.io/role":"primary","fleetset.io/access-mode":"ReadWrite"}}}`); err != nil {
		t.Errorf("member component: setting a pod's role labels: %v", err)
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"labels":{"fleetset.io/role":"replica","fleetset.io/set":"other"}}}`); err == nil ||
		!strings.Contains(err.Error(), "pod "+ns+"/db-east-0 belongs to a StatefulSet fleetset-hub delivered") {
		t.Errorf("tenant: changing a pod's fleetset.io/set along with its role: err = %v, want refused", err)
	}
	if err := domainPatch(kubeAs(t, tenant), `{"metadata":{"labels":{"fleetset.io/set":"other"}}}`); err == nil {
		t.Errorf("tenant: changing a pod's fleetset.io/set: allowed, want refused")
	}
	// The admin's own labels stay the admin's.
	if _, err := kubeAs(t, tenant).AppsV1().StatefulSets(ns).Patch(ctx, "db-east", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("tenant: changing the StatefulSet's own label team: %v", err)
	}
	// The member component records fences, and changes nothing else.
	mc := as(t, scheduler, "system:serviceaccounts", "system:serviceaccounts:fleetset-system")
	if err := merge(mc, spKey.DeepCopy(), `{"metadata":{"annotations":{"fleetset.io/fenced-epoch":"1"}}}`); err != nil {
		t.Errorf("member component: writing the fence record: %v", err)
	}
	if err := merge(mc, spKey.DeepCopy(), `{"spec":{"fencing":{"graceSeconds":5}}}`); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("member component: changing the spec: err = %v, want refused", err)
	}
	// The work agent delivers, but does not lift fences.
	if err := merge(as(t, agent, agentGroup), spKey.DeepCopy(), `{"metadata":{"annotations":{"fleetset.io/fenced-epoch":null}}}`); err == nil ||
		!strings.Contains(err.Error(), "is written only by fleetset's member component") {
		t.Errorf("work agent: removing the fence record: err = %v, want refused", err)
	}
	if err := merge(as(t, agent, agentGroup), spKey.DeepCopy(), `{"spec":{"fencing":{"epoch":2}}}`); err != nil {
		t.Errorf("work agent: updating the SubsetPlacement: %v", err)
	}
	if err := as(t, agent, agentGroup).Delete(ctx, spKey.DeepCopy()); err != nil {
		t.Errorf("work agent: deleting the SubsetPlacement: %v", err)
	}
	// The member component's claims controller replaces a StatefulSet
	// (orphan delete, UID precondition); a dry run shows it is admitted.
	if err := kubeAs(t, scheduler, "system:serviceaccounts", "system:serviceaccounts:fleetset-system").AppsV1().StatefulSets(ns).Delete(ctx, "db-east",
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan), DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("member component: orphan-deleting the StatefulSet: %v", err)
	}
	if err := kubeAs(t, agent, agentGroup).AppsV1().StatefulSets(ns).Delete(ctx, "db-east", metav1.DeleteOptions{}); err != nil {
		t.Errorf("work agent: deleting the StatefulSet: %v", err)
	}
}

// kubeAs is as, for the typed clientset.
func kubeAs(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	return kubernetes.NewForConfigOrDie(cfg)
}

// TestSchedulerCannotTakeTheDefaultSchedulersLease: fleetset-scheduler's
// ServiceAccount, bound to the built-in system:kube-scheduler role by
// manifests/scheduler/rbac.yaml, is allowed by RBAC to renew the default
// scheduler's Lease kube-system/kube-scheduler; the add-on's admission policy
// refuses it, and leaves its own Lease to it.
func TestSchedulerCannotTakeTheDefaultSchedulersLease(t *testing.T) {
	ctx := context.Background()
	root := controlplane.RepoRoot()
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "rbac.yaml"))
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "admission.yaml"))
	const scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system"}
	dflt := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kube-scheduler-1")}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, dflt, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: scheduler, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "kube-scheduler"}}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Allowed {
		t.Fatalf("RBAC does not let %s update kube-system/kube-scheduler (%s): the policy would not be needed; check rbac.yaml", scheduler, got.Status.Reason)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: scheduler, Groups: append(groups, "system:authenticated")}
	sc := kubernetes.NewForConfigOrDie(cfg)
	take := func(dry bool) error {
		opts := metav1.UpdateOptions{}
		if dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		l, err := sc.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To("fleetset-scheduler")
		_, err = sc.CoordinationV1().Leases("kube-system").Update(ctx, l, opts)
		return err
	}
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return take(true) != nil, nil
	}); werr != nil {
		t.Fatalf("the admission policy did not refuse fleetset-scheduler's dry run on kube-system/kube-scheduler within 30s")
	}
	err = take(false)
	if err == nil || !strings.Contains(err.Error(), "fleetset-scheduler may not write the default scheduler's Lease kube-system/kube-scheduler") {
		t.Fatalf("fleetset-scheduler taking the default scheduler's Lease: %v, want refused by the policy", err)
	}
	if l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{}); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "kube-scheduler-1" {
		t.Errorf("kube-system/kube-scheduler after the refusal: %v, %v", l, err)
	}
	own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "fleetset-system", Name: "fleetset-scheduler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fleetset-scheduler-1")}}
	if _, err := sc.CoordinationV1().Leases(own.Namespace).Create(ctx, own, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Errorf("fleetset-scheduler creating its own Lease: %v", err)
	}
}

// TestNeverAdopt applies the add-on's admission policy fleetset-never-adopt
// on a real apiserver: writing a delivered object (label
// fleetset.io/owner-uid) over an existing Service, ConfigMap or
// StatefulSet that someone else made, or that another FleetSet (UID) owns,
// is refused with a message naming the object, and so is one that carries
// the same owner identity but another FleetSet's name (fleetset.io/set);
// over the same FleetSet's object (same identity and set: also the
// FleetSet restored from a backup, whose identity survives its new UID),
// or one an earlier hub delivered (fleetset.io/set, no UID yet), it is
// allowed; creating one is allowed.
func TestNeverAdopt(t *testing.T) {
	ctx := context.Background()
	root := controlplane.RepoRoot()
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "admission.yaml"))
	ns := newNamespace(t, "adopt")
	svc := func(name string, labels map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: []v1.ServicePort{{Name: "x", Port: 80}}}}
	}
	for _, s := range []*v1.Service{
		svc("theirs", map[string]string{"team": "a"}),
		svc("other-fleetset", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-old"}),
		svc("ours", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1"}),
		svc("legacy", map[string]string{fleetv1.LabelSet: "db"}),
		svc("legacy-other-set", map[string]string{fleetv1.LabelSet: "cache"}),
		// Same identity, another FleetSet's name: never taken over either.
		svc("same-identity-other-set", map[string]string{fleetv1.LabelSet: "cache", fleetv1.LabelOwnerUID: "uid-1"}),
		// Delivered by the FleetSet in its first life (identity uid-1),
		// now written by it restored from a backup: a new UID, the same
		// identity: its own.
		svc("restored", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1", "app.kubernetes.io/name": "db"}),
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deliver := func(name string, dry bool) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"db",%q:"uid-1"}}}`, fleetv1.LabelSet, fleetv1.LabelOwnerUID)
		opts := metav1.PatchOptions{}
		if dry {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := cs.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), opts)
		return err
	}
	if werr := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return deliver("theirs", true) != nil, nil
	}); werr != nil {
		t.Fatalf("the admission policy did not refuse a dry run within 30s")
	}
	for name, want := range map[string]string{
		"theirs":                  "Service " + ns + "/theirs exists and is not this FleetSet's (label fleetset.io/owner-uid missing, want uid-1; label fleetset.io/set missing, want db)",
		"other-fleetset":          "Service " + ns + "/other-fleetset exists and is not this FleetSet's (label fleetset.io/owner-uid uid-old, want uid-1; label fleetset.io/set db, want db)",
		"legacy-other-set":        "Service " + ns + "/legacy-other-set exists and is not this FleetSet's",
		"same-identity-other-set": "Service " + ns + "/same-identity-other-set exists and is not this FleetSet's (label fleetset.io/owner-uid uid-1, want uid-1; label fleetset.io/set cache, want db)",
		"ours":                    "",
		"legacy":                  "",
		"restored":                "",
	} {
		err := deliver(name, false)
		switch {
		case want == "" && err != nil:
			t.Errorf("delivering over %s: %v, want allowed", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("delivering over %s: %v, want refused with %q", name, err, want)
		}
	}
	got, err := cs.CoreV1().Services(ns).Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil || got.Labels[fleetv1.LabelOwnerUID] != "" || got.Labels["team"] != "a" {
		t.Errorf("the refused Service after the attempt: %v, %v; want it untouched", got.Labels, err)
	}
	// A new object is created as delivered.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc("new", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a delivered Service: %v", err)
	}

	// StatefulSets: the same rule (a delivered StatefulSet written over
	// someone else's would take over its pods and claims).
	for name, labels := range map[string]map[string]string{
		"theirs-sts": {"team": "a"},
		"ours-sts":   {fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1"},
	} {
		sts := makeStatefulSet(ns, name, name, 0, 0)
		sts.Labels = labels
		if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deliverSTS := func(name string) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"db",%q:"uid-1"}}}`, fleetv1.LabelSet, fleetv1.LabelOwnerUID)
		_, err := cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err, want := deliverSTS("theirs-sts"), "StatefulSet "+ns+"/theirs-sts exists and is not this FleetSet's (label fleetset.io/owner-uid missing, want uid-1"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("delivering over StatefulSet theirs-sts: %v, want refused with %q", err, want)
	}
	if err := deliverSTS("ours-sts"); err != nil {
		t.Errorf("delivering over StatefulSet ours-sts: %v, want allowed", err)
	}
}
