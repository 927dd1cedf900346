//go:build integration

package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
		for _, name := range []string{"fleetset-pod-security-level", "fleetset-reserved-namespaces", "fleetset-status-writer", "fleetset-secret-references"} {
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

// grantSecrets lets user get the Secrets names of namespace ns (every
// Secret of ns with none).
func grantSecrets(t testing.TB, ns, user string, names ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "test-secrets-"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: names}}}
	if err := k8sClient.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "test-"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
	if err := k8sClient.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
}

// TestHubSecretReferencesPolicy applies manifests/hub/admission.yaml on a
// real apiserver (issue 48): a FleetSet author allowed to write FleetSets
// but not to get a Secret of her namespace cannot have the hub deliver it
// (spec.dependencies Auto): the create is refused naming the Secret, wherever
// the template or a subset's patch references it (env secretKeyRef, envFrom,
// volume, projected source, imagePullSecrets). A grant of get on that
// Secret alone (resourceNames) admits it, for up to 16 distinct Secrets,
// each checked within the policy's CEL budget; spec.dependencies None and
// the platform's namespace label fleetset.io/secret-references=unchecked
// admit it without. An update of the spec is checked for its own
// requester: a second editor without get cannot change a FleetSet that
// delivers the Secret, though she may change its labels.
func TestHubSecretReferencesPolicy(t *testing.T) {
	ctx := t.Context()
	applyHubAdmission(t)
	const ns, author, other = "vap-secrets", "tenant-s", "tenant-t"
	createNamespace(t, ns)
	grantFleetSets(t, ns, author)
	grantFleetSets(t, ns, other)
	for i := range 17 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("platform-%d", i)}, StringData: map[string]string{"k": "v"}}
		if err := k8sClient.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	ac := impersonate(t, author)
	withEnv := func(name string) *fleetv1.FleetSet {
		fs := sampleFleetSet(ns, name)
		fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "platform-0"}, Key: "k"}}}}
		return fs
	}
	const refusal = "tenant-s may not get Secret vap-secrets/platform-0"
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := ac.Create(ctx, withEnv("probe"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), refusal), nil
	}); err != nil {
		t.Fatal("the secret-references policy did not refuse a FleetSet referencing an unreadable Secret within 30s")
	}
	sel := corev1.LocalObjectReference{Name: "platform-0"}
	for what, mutate := range map[string]func(*fleetv1.FleetSet){
		"env secretKeyRef": func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: sel, Key: "k"}}}}
		},
		"init container envFrom": func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: sel}}}}}
		},
		"secret volume": func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "platform-0"}}}}
		},
		"projected secret": func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: sel}}}}}}}
		},
		"imagePullSecrets": func(fs *fleetv1.FleetSet) {
			fs.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{sel}
		},
		"a subset's patch": func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[1].Patch = &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"pause","env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"platform-0","key":"k"}}}]}]}}`)}
		},
	} {
		fs := sampleFleetSet(ns, "db")
		mutate(fs)
		if err := ac.Create(ctx, fs, client.DryRunAll); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Errorf("%s referencing platform-0: %v, want refused with %q", what, err, refusal)
		}
	}
	// None: the hub delivers nothing; a ConfigMap is not checked.
	none := withEnv("none")
	none.Spec.Dependencies = fleetv1.DependenciesNone
	if err := ac.Create(ctx, none, client.DryRunAll); err != nil {
		t.Errorf("dependencies None: %v, want admitted", err)
	}
	cm := sampleFleetSet(ns, "cm")
	cm.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}
	if err := ac.Create(ctx, cm, client.DryRunAll); err != nil {
		t.Errorf("a ConfigMap volume: %v, want admitted", err)
	}

	// 16 distinct Secrets (each referenced twice) granted by name: each is
	// checked by name, within the budget; a 17th is too many to check one
	// by one.
	many := func(n int) *fleetv1.FleetSet {
		fs := sampleFleetSet(ns, "many")
		for i := range n {
			for j := range 2 {
				fs.Spec.Template.Spec.Containers[0].Env = append(fs.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("P%d_%d", i, j),
					ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("platform-%d", i)}, Key: "k"}}})
			}
		}
		return fs
	}
	names := make([]string, 17)
	for i := range names {
		names[i] = fmt.Sprintf("platform-%d", i)
	}
	grantSecrets(t, ns, author, names[:16]...)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ac.Create(ctx, many(16), client.DryRunAll) == nil, nil
	}); err != nil {
		t.Fatalf("16 Secrets the author may get by name: %v, want admitted", ac.Create(ctx, many(16), client.DryRunAll))
	}
	grantSecrets(t, ns, author, names[16])
	if err := ac.Create(ctx, many(17), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "at most 16 distinct Secrets") {
		t.Errorf("17 Secrets granted by name: %v, want refused naming the limit of 16", err)
	}
	grantSecrets(t, ns, author) // every Secret of ns: one check
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ac.Create(ctx, many(17), client.DryRunAll) == nil, nil
	}); err != nil {
		t.Fatalf("17 Secrets, get on all: %v, want admitted", ac.Create(ctx, many(17), client.DryRunAll))
	}

	// The author creates it; the second editor, without get, may not
	// change its spec (she would choose what the delivered Secret's pod
	// runs), but may label it.
	fs := withEnv("shared")
	if err := ac.Create(ctx, fs); err != nil {
		t.Fatalf("the author's FleetSet: %v", err)
	}
	oc := impersonate(t, other)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &fleetv1.FleetSet{}
		if err := oc.Get(ctx, client.ObjectKeyFromObject(fs), cur); err != nil {
			return err
		}
		cur.Spec.Template.Spec.Containers[0].Command = []string{"cat", "/proc/self/environ"}
		return oc.Update(ctx, cur)
	})
	if err == nil || !strings.Contains(err.Error(), "tenant-t may not get Secret vap-secrets/platform-0") {
		t.Errorf("a spec update by an editor without get: %v, want refused naming her and the Secret", err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &fleetv1.FleetSet{}
		if err := oc.Get(ctx, client.ObjectKeyFromObject(fs), cur); err != nil {
			return err
		}
		cur.Labels = map[string]string{"team": "t"}
		return oc.Update(ctx, cur)
	}); err != nil {
		t.Errorf("a label update by an editor without get: %v, want admitted", err)
	}

	// The platform's opt-out.
	labelNamespace(t, ns, fleetv1.LabelSecretReferences, fleetv1.SecretReferencesUnchecked)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return oc.Create(ctx, withEnv("unchecked"), client.DryRunAll) == nil, nil
	}); err != nil {
		t.Fatalf("namespace labelled %s=%s: %v, want admitted", fleetv1.LabelSecretReferences, fleetv1.SecretReferencesUnchecked, oc.Create(ctx, withEnv("unchecked"), client.DryRunAll))
	}
}
