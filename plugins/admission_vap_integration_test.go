//go:build integration

package plugins_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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
// allowed; creating one is allowed. The same holds for StatefulSets and
// for fleet DNS EndpointSlices (a second FleetSet naming another's
// serviceName does not overwrite its slices).
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

	// The same for a StatefulSet, and for a fleet DNS EndpointSlice
	// (<serviceName>-fleet-<k>): a second FleetSet naming the first one's
	// serviceName does not take over its slices.
	labelPatch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"db",%q:"uid-1"}}}`, fleetv1.LabelSet, fleetv1.LabelOwnerUID))
	for _, tt := range []struct {
		kind, name string
		labels     map[string]string
		want       string
	}{
		{"StatefulSet", "theirs", nil, "StatefulSet " + ns + "/theirs exists and is not this FleetSet's (label fleetset.io/owner-uid missing, want uid-1"},
		{"StatefulSet", "other-fleetset", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-old"},
			"StatefulSet " + ns + "/other-fleetset exists and is not this FleetSet's (label fleetset.io/owner-uid uid-old, want uid-1"},
		{"StatefulSet", "ours", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1"}, ""},
		{"EndpointSlice", "db-fleet-0", map[string]string{fleetv1.LabelSet: "cache", fleetv1.LabelOwnerUID: "uid-cache",
			discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: fleetv1.FleetDNSManagedBy},
			"EndpointSlice " + ns + "/db-fleet-0 exists and is not this FleetSet's (label fleetset.io/owner-uid uid-cache, want uid-1; label fleetset.io/set cache, want db)"},
		{"EndpointSlice", "theirs-fleet-0", map[string]string{discoveryv1.LabelServiceName: "theirs"},
			"EndpointSlice " + ns + "/theirs-fleet-0 exists and is not this FleetSet's (label fleetset.io/owner-uid missing"},
		{"EndpointSlice", "ours-fleet-0", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1",
			discoveryv1.LabelServiceName: "ours", discoveryv1.LabelManagedBy: fleetv1.FleetDNSManagedBy}, ""},
	} {
		var err error
		switch tt.kind {
		case "StatefulSet":
			sts := makeStatefulSet(ns, tt.name, tt.name, 0, 0)
			sts.Labels = tt.labels
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = cs.AppsV1().StatefulSets(ns).Patch(ctx, tt.name, types.MergePatchType, labelPatch, metav1.PatchOptions{})
		case "EndpointSlice":
			sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tt.name, Labels: tt.labels},
				AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Hostname: ptr.To("cache-east-0")}}}
			if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = cs.DiscoveryV1().EndpointSlices(ns).Patch(ctx, tt.name, types.MergePatchType, labelPatch, metav1.PatchOptions{})
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("delivering over %s %s: %v, want allowed", tt.kind, tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("delivering over %s %s: %v, want refused with %q", tt.kind, tt.name, err, tt.want)
		}
	}
	if sl, err := cs.DiscoveryV1().EndpointSlices(ns).Get(ctx, "db-fleet-0", metav1.GetOptions{}); err != nil || sl.Labels[fleetv1.LabelOwnerUID] != "uid-cache" {
		t.Errorf("the other FleetSet's fleet DNS slice after the refusal: %v, %v; want it untouched", sl, err)
	}
}

// editRole creates the ClusterRole test-edit: the built-in edit role's
// rules, aggregated from the ClusterRoles its aggregationRule selects as
// kube-controller-manager would (envtest runs none), so "a namespace
// editor" has exactly the rights kubectl create rolebinding --clusterrole
// edit gives one.
func editRole(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	edit, err := cs.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if edit.AggregationRule == nil {
		t.Fatalf("the built-in edit ClusterRole has no aggregationRule")
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range edit.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			t.Fatal(err)
		}
		roles, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range roles.Items {
			rules = append(rules, r.Rules...)
		}
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-edit"}, Rules: rules},
		metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	return "test-edit"
}

// allowedBy waits until RBAC lets user (groups) do verb on resource
// (subresource) in ns; resource is <resource>[.<group>]. A new binding
// takes a moment to reach the authorizer; a refusal seen after it is
// admission's, not RBAC's.
func allowedBy(t *testing.T, user string, groups []string, ns, verb, resource, subresource string) {
	t.Helper()
	res, group, _ := strings.Cut(resource, ".")
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: append(groups, "system:authenticated"),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: res, Subresource: subresource}}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	}); err != nil {
		t.Fatalf("RBAC does not let %s %s %s/%s in %q: the test would not show admission refusing it", user, verb, resource, subresource, ns)
	}
}

// refusedBy waits (the policy takes a moment to load) until do, a dry run,
// is refused by the ValidatingAdmissionPolicy policy.
func refusedBy(t *testing.T, policy string, do func() error) {
	t.Helper()
	var last error
	if werr := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = do()
		return last != nil && strings.Contains(last.Error(), "'"+policy+"'"), nil
	}); werr != nil {
		t.Fatalf("the admission policy %s did not refuse a dry run within 30s (last: %v)", policy, last)
	}
}

// testPod is a pause pod in ns.
func testPod(ns, name string, labels map[string]string, serviceAccount string, owners ...metav1.OwnerReference) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
		Spec: v1.PodSpec{ServiceAccountName: serviceAccount, Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}

// TestPodLabelsAdmission applies manifests/scheduler/admission.yaml on a
// real apiserver (with kube-controller-manager's StatefulSet controller)
// and tries to pass a pod off as an instance of a delivered StatefulSet
// db-east. A namespace editor (the built-in edit role) cannot create a pod
// born with its placement, role and pod-index labels, nor with fleetset.io/set
// and a role (what the role Services select), nor add fleetset.io/placement
// or fleetset.io/set to a plain pod, nor create or relabel a StatefulSet of
// her own whose pod template carries fleetset.io/ labels (the StatefulSet
// controller would stamp them); each refusal names the pod or StatefulSet.
// The StatefulSet controller's identities (its ServiceAccount,
// system:kube-controller-manager) create such pods for a StatefulSet, never
// bare or for a ReplicaSet (whose template a tenant writes), and the
// ReplicaSet controller not at all. The real StatefulSet controller still
// creates the delivered StatefulSet's pod, whose role labels the workload
// may still write (the label contract) but not its pod-index.
func TestPodLabelsAdmission(t *testing.T) {
	ctx := context.Background()
	root := controlplane.RepoRoot()
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "admission.yaml"))
	ns := newNamespace(t, "podlabels")
	const editor = "editor"
	const agent, agentGroup = "system:serviceaccount:open-cluster-management-agent:klusterlet-work-sa", "system:serviceaccounts:open-cluster-management-agent"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}
	bind(t, ns, editor, editRole(t))
	bind(t, "", agent, "cluster-admin")
	// kube-controller-manager's own user holds its controllers' rights
	// when it runs without per-controller ServiceAccounts.
	bind(t, ns, "system:kube-controller-manager", "cluster-admin")
	allowedBy(t, "system:kube-controller-manager", nil, ns, "create", "pods", "")
	allowedBy(t, editor, nil, ns, "create", "pods", "")
	allowedBy(t, editor, nil, ns, "patch", "pods", "")
	allowedBy(t, editor, nil, ns, "create", "statefulsets.apps", "")
	ec := kubeAs(t, editor)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// The delivered StatefulSet (by the work agent) and its pod, created
	// by the StatefulSet controller.
	sts := makeStatefulSet(ns, "db-east", "db-east", 1, 0)
	sts.Labels = map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "uid-1"}
	sts.Spec.Template.Labels[fleetv1.LabelSet] = "db"
	var err error
	if sts, err = kubeAs(t, agent, agentGroup).AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("work agent: creating the delivered StatefulSet: %v", err)
	}
	forged := map[string]string{fleetv1.LabelPlacement: "db-east", fleetv1.LabelSet: "db", fleetv1.LabelRole: "primary",
		fleetv1.LabelAccessMode: "ReadWrite", fleetv1.LabelPodIndex: "0", "app": "db-east"}
	refusedBy(t, "fleetset-pod-labels", func() error {
		_, err := ec.CoreV1().Pods(ns).Create(ctx, testPod(ns, "db-east-9", forged, ""), dry)
		return err
	})
	var pod *v1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err = cs.CoreV1().Pods(ns).Get(ctx, "db-east-0", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the StatefulSet controller did not create db-east-0 of the delivered StatefulSet within 30s: %v", err)
	}
	if pod.Labels[fleetv1.LabelPlacement] != "db-east" || pod.Labels[fleetv1.LabelSet] != "db" {
		t.Errorf("db-east-0's labels: %v", pod.Labels)
	}

	ssOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: sts.UID, Controller: ptr.To(true)}
	rsOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "mine-7d9f", UID: "0a4e6c4e-0000-4000-8000-000000000001", Controller: ptr.To(true)}
	msg := func(name string) string {
		return "pod " + ns + "/" + name + " carries the labels "
	}
	for _, tt := range []struct {
		what   string
		as     kubernetes.Interface
		pod    *v1.Pod
		refuse string // "" when admitted
	}{
		{"editor: a pod born with the placement, role and pod-index labels", ec, testPod(ns, "db-east-9", forged, ""), msg("db-east-9")},
		{"editor: a pod born with fleetset.io/set and a role (what the role Services select)", ec,
			testPod(ns, "sneak", map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelRole: "primary"}, ""), msg("sneak")},
		{"editor: the same, claiming the StatefulSet as its owner", ec, testPod(ns, "db-east-8", forged, "", ssOwner), msg("db-east-8")},
		{"statefulset-controller: for the StatefulSet", kubeAs(t, "system:serviceaccount:kube-system:statefulset-controller", saGroups...),
			testPod(ns, "db-east-1", forged, "", ssOwner), ""},
		{"statefulset-controller: a bare pod", kubeAs(t, "system:serviceaccount:kube-system:statefulset-controller", saGroups...),
			testPod(ns, "db-east-7", forged, ""), msg("db-east-7")},
		{"kube-controller-manager (no per-controller credentials): for the StatefulSet", kubeAs(t, "system:kube-controller-manager"),
			testPod(ns, "db-east-1", forged, "", ssOwner), ""},
		{"kube-controller-manager: for a ReplicaSet (a tenant's Deployment template)", kubeAs(t, "system:kube-controller-manager"),
			testPod(ns, "mine-7d9f-abcde", forged, "", rsOwner), msg("mine-7d9f-abcde")},
		{"replicaset-controller: for a ReplicaSet", kubeAs(t, "system:serviceaccount:kube-system:replicaset-controller", saGroups...),
			testPod(ns, "mine-7d9f-abcde", forged, "", rsOwner), msg("mine-7d9f-abcde")},
		{"cluster admin: for a ReplicaSet (the local fleet's kube-controller-manager)", cs,
			testPod(ns, "mine-7d9f-abcde", forged, "", rsOwner), msg("mine-7d9f-abcde")},
		{"cluster admin: a bare pod", cs, testPod(ns, "db-east-6", forged, ""), ""},
		{"editor: a pod with only its own labels and pod-index", ec, testPod(ns, "plain-0", map[string]string{"app": "plain", fleetv1.LabelPodIndex: "0"}, ""), ""},
	} {
		_, err := tt.as.CoreV1().Pods(ns).Create(ctx, tt.pod, dry)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("%s: %v, want admitted", tt.what, err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse) || !strings.Contains(err.Error(), "only the StatefulSet controller sets fleetset.io/ labels")):
			t.Errorf("%s: %v, want refused with %q", tt.what, err, tt.refuse)
		}
	}

	// A plain pod is never labelled into the placement.
	if _, err := ec.CoreV1().Pods(ns).Create(ctx, testPod(ns, "plain", map[string]string{"app": "plain"}, ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("editor: creating a plain pod: %v", err)
	}
	patch := func(c kubernetes.Interface, name, p string) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	for _, p := range []string{
		`{"metadata":{"labels":{"fleetset.io/placement":"db-east","fleetset.io/set":"db","fleetset.io/role":"primary","apps.kubernetes.io/pod-index":"0"}}}`,
		`{"metadata":{"labels":{"fleetset.io/placement":"db-east"}}}`,
		`{"metadata":{"labels":{"fleetset.io/set":"db","fleetset.io/role":"primary"}}}`,
		`{"metadata":{"labels":{"fleetset.io/role":"primary"}}}`,
	} {
		if err := patch(ec, "plain", p); err == nil || !strings.Contains(err.Error(), "pod "+ns+"/plain is no instance of a FleetSet") {
			t.Errorf("editor: %s on a plain pod: %v, want refused", p, err)
		}
	}
	if err := patch(ec, "plain", `{"metadata":{"labels":{"app":"other"}}}`); err != nil {
		t.Errorf("editor: changing a plain pod's own label: %v", err)
	}

	// The instance: its role labels stay the workload's (the label
	// contract), its ordinal and placement its StatefulSet's.
	for _, p := range []string{
		`{"metadata":{"labels":{"fleetset.io/role":"primary","fleetset.io/access-mode":"ReadWrite"}}}`,
		`{"metadata":{"labels":{"fleetset.io/role":"replica","fleetset.io/access-mode":"ReadOnly"}}}`,
	} {
		if err := patch(ec, "db-east-0", p); err != nil {
			t.Errorf("editor (the workload): %s on the instance: %v", p, err)
		}
	}
	if err := patch(ec, "db-east-0", `{"metadata":{"labels":{"apps.kubernetes.io/pod-index":"5"}}}`); err == nil ||
		!strings.Contains(err.Error(), "pod "+ns+"/db-east-0 belongs to a StatefulSet fleetset-hub delivered") {
		t.Errorf("editor: changing the instance's apps.kubernetes.io/pod-index: %v, want refused", err)
	}

	// A StatefulSet of the editor's own never carries fleetset.io/ labels:
	// its controller would stamp them on the pods.
	mine := makeStatefulSet(ns, "mine", "db-east", 0, 0)
	if _, err := ec.AppsV1().StatefulSets(ns).Create(ctx, mine, dry); err == nil ||
		!strings.Contains(err.Error(), "StatefulSet "+ns+"/mine carries fleetset.io/ labels (on itself or its pod template): only fleetset-hub delivers such a StatefulSet") {
		t.Errorf("editor: creating a StatefulSet whose template carries fleetset.io/placement: %v, want refused", err)
	}
	mine.Spec.Template.Labels = map[string]string{"app": "mine"}
	if _, err := ec.AppsV1().StatefulSets(ns).Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatalf("editor: creating a StatefulSet of her own: %v", err)
	}
	if _, err := ec.AppsV1().StatefulSets(ns).Patch(ctx, "mine", types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"labels":{"fleetset.io/placement":"db-east","fleetset.io/set":"db"}}}}}`), metav1.PatchOptions{}); err == nil ||
		!strings.Contains(err.Error(), "StatefulSet "+ns+"/mine is delivered by fleetset-hub: its fleetset.io/ labels and those of its pod template are changed only by the OCM work agent") {
		t.Errorf("editor: adding fleetset.io/ labels to her StatefulSet's template: %v, want refused", err)
	}
	if _, err := ec.AppsV1().StatefulSets(ns).Patch(ctx, "mine", types.MergePatchType, []byte(`{"spec":{"replicas":0},"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("editor: changing her own StatefulSet: %v", err)
	}
}

// TestIdentitiesAdmission applies manifests/scheduler/admission.yaml on a
// real apiserver: no pod runs as a fleetset work executor ServiceAccount
// (<namespace>/fleetset-work-executor, fleetset-executor-*), whoever
// creates it (a namespace editor, the StatefulSet controller for a
// delivered StatefulSet whose template names it, a cluster admin), also
// through the deprecated spec.serviceAccount; a namespace editor cannot
// request a token of one (TokenRequest) nor create a Secret the token
// controller would fill with one, but may for her own ServiceAccount; a
// pod in fleetset-system is created by the cluster's controllers (the
// ReplicaSet controller) only, not by an editor of fleetset-system. Each
// refusal names the pod, ServiceAccount or Secret.
func TestIdentitiesAdmission(t *testing.T) {
	ctx := context.Background()
	root := controlplane.RepoRoot()
	applyManifest(t, filepath.Join(root, "manifests", "scheduler", "admission.yaml"))
	ns := newNamespace(t, "identities")
	const editor = "editor"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleetset-system"}}, metav1.CreateOptions{}); err != nil &&
		!strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	for _, sa := range []struct{ ns, name string }{{ns, "fleetset-work-executor"}, {ns, "app"}, {"fleetset-system", "fleetset-executor-" + ns}} {
		if _, err := cs.CoreV1().ServiceAccounts(sa.ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: sa.ns, Name: sa.name}},
			metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
	}
	role := editRole(t)
	bind(t, ns, editor, role)
	bind(t, "fleetset-system", editor+"-system", role)
	allowedBy(t, editor, nil, ns, "create", "pods", "")
	allowedBy(t, editor, nil, ns, "create", "serviceaccounts", "token")
	allowedBy(t, editor, nil, ns, "create", "secrets", "")
	allowedBy(t, editor+"-system", nil, "fleetset-system", "create", "pods", "")
	ec := kubeAs(t, editor)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refusedBy(t, "fleetset-identities", func() error {
		_, err := ec.CoreV1().Pods(ns).Create(ctx, testPod(ns, "x", nil, "fleetset-work-executor"), dry)
		return err
	})

	ssOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: "0a4e6c4e-0000-4000-8000-000000000002", Controller: ptr.To(true)}
	deprecated := testPod(ns, "old-field", nil, "")
	deprecated.Spec.DeprecatedServiceAccount = "fleetset-work-executor"
	for _, tt := range []struct {
		what   string
		as     kubernetes.Interface
		pod    *v1.Pod
		refuse string
	}{
		{"editor: a pod as fleetset-work-executor", ec, testPod(ns, "exec", nil, "fleetset-work-executor"),
			"pod " + ns + "/exec may not run as ServiceAccount fleetset-work-executor: it is a fleetset work executor"},
		{"editor: a pod as fleetset-executor-x", ec, testPod(ns, "exec2", nil, "fleetset-executor-x"),
			"pod " + ns + "/exec2 may not run as ServiceAccount fleetset-executor-x"},
		{"editor: a pod as fleetset-work-executor through spec.serviceAccount", ec, deprecated,
			"pod " + ns + "/old-field may not run as ServiceAccount fleetset-work-executor"},
		{"statefulset-controller: a delivered StatefulSet's pod as fleetset-work-executor",
			kubeAs(t, "system:serviceaccount:kube-system:statefulset-controller", saGroups...),
			testPod(ns, "db-east-0", map[string]string{fleetv1.LabelPlacement: "db-east"}, "fleetset-work-executor", ssOwner),
			"pod " + ns + "/db-east-0 may not run as ServiceAccount fleetset-work-executor"},
		{"cluster admin: a pod as fleetset-executor-<ns> in fleetset-system", cs, testPod("fleetset-system", "exec3", nil, "fleetset-executor-"+ns),
			"pod fleetset-system/exec3 may not run as ServiceAccount fleetset-executor-" + ns},
		{"editor of fleetset-system: a pod there", kubeAs(t, editor+"-system"), testPod("fleetset-system", "mine", nil, ""),
			"pod fleetset-system/mine: pods in fleetset-system are created only by the cluster's controllers"},
		{"replicaset-controller: fleetset-scheduler's pod in fleetset-system", kubeAs(t, "system:serviceaccount:kube-system:replicaset-controller", saGroups...),
			testPod("fleetset-system", "fleetset-scheduler-7d9f-abcde", nil, ""), ""},
		{"editor: a pod as her own ServiceAccount", ec, testPod(ns, "app", nil, "app"), ""},
	} {
		_, err := tt.as.CoreV1().Pods(tt.pod.Namespace).Create(ctx, tt.pod, dry)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("%s: %v, want admitted", tt.what, err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
			t.Errorf("%s: %v, want refused with %q", tt.what, err, tt.refuse)
		}
	}

	token := func(c kubernetes.Interface, ns, sa string) error {
		_, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		return err
	}
	if err := token(ec, ns, "fleetset-work-executor"); err == nil ||
		!strings.Contains(err.Error(), "a token of ServiceAccount "+ns+"/fleetset-work-executor is refused: it is a fleetset work executor") {
		t.Errorf("editor: a token of fleetset-work-executor: %v, want refused", err)
	}
	if err := token(ec, ns, "app"); err != nil {
		t.Errorf("editor: a token of her own ServiceAccount: %v", err)
	}
	if err := token(cs, "fleetset-system", "fleetset-executor-"+ns); err != nil {
		t.Errorf("cluster admin: a token of an executor: %v", err)
	}
	secret := func(sa string) *v1.Secret {
		return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa + "-token", Annotations: map[string]string{v1.ServiceAccountNameKey: sa}},
			Type: v1.SecretTypeServiceAccountToken}
	}
	if _, err := ec.CoreV1().Secrets(ns).Create(ctx, secret("fleetset-work-executor"), dry); err == nil ||
		!strings.Contains(err.Error(), "Secret "+ns+"/fleetset-work-executor-token would hold a token of ServiceAccount fleetset-work-executor") {
		t.Errorf("editor: a token Secret of fleetset-work-executor: %v, want refused", err)
	}
	if _, err := ec.CoreV1().Secrets(ns).Create(ctx, secret("app"), dry); err != nil {
		t.Errorf("editor: a token Secret of her own ServiceAccount: %v", err)
	}
}
