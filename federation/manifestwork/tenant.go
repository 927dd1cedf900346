package manifestwork

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// Executor returns the spec.executor of the FleetSet works of hub namespace
// namespace: the ServiceAccount
// fleetset-system/fleetset-executor-<namespace>
// (v1alpha1.ExecutorNamespace, v1alpha1.ExecutorServiceAccountName), which
// TenantWork creates. OCM's work agent applies each object of such a work
// only when a SubjectAccessReview says that ServiceAccount may write it
// (OCM's ManifestWork executor model). It is not in namespace: a pod may
// only use a ServiceAccount of its own namespace, so no tenant pod can run
// as its namespace's executor.
func Executor(namespace string) *workv1.ManifestWorkExecutor {
	return &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type: workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{
			Namespace: fleetv1.ExecutorNamespace, Name: fleetv1.ExecutorServiceAccountName(namespace)}}}
}

// TenantWork renders the tenant work v1alpha1.TenantWorkName(namespace) of
// one member cluster (cluster, its namespace on the hub): the Namespace
// namespace, created once (CreateOnly: an existing namespace keeps its own
// labels) with Pod Security level enforced (KEP-2579 labels, at "latest"),
// the executor ServiceAccount fleetset-system/fleetset-executor-<namespace>
// (Executor; in the add-on's namespace, which no tenant pod can use) and
// the RoleBinding <namespace>/fleetset-work-executor of it to the add-on's
// ClusterRole v1alpha1.ExecutorClusterRole: RBAC's grant of a ClusterRole's
// rules in one namespace only. The work has no spec.executor (the work
// agent's own identity, which may create namespaces and ServiceAccounts and
// bind that ClusterRole), and orphans the namespace when deleted, so
// deleting the work never deletes a tenant's data; the ServiceAccount and
// RoleBinding go with it. A tenant work written by an older hub held the
// executor ServiceAccount <namespace>/fleetset-work-executor
// (v1alpha1.LegacyExecutorServiceAccount): rewritten, it no longer does,
// and OCM's work agent deletes what a work no longer holds. It errors when
// namespace is not a DNS label or level is not a Pod Security level.
func TenantWork(cluster, namespace string, level fleetv1.PodSecurityLevel) (*workv1.ManifestWork, error) {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %v", namespace, errs)
	}
	switch level {
	case fleetv1.PodSecurityPrivileged, fleetv1.PodSecurityBaseline, fleetv1.PodSecurityRestricted:
	default:
		return nil, fmt.Errorf("pod security level %q: must be privileged, baseline or restricted", level)
	}
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			LabelPodSecurityEnforce:        string(level),
			LabelPodSecurityEnforceVersion: "latest",
		}},
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ExecutorServiceAccountName(namespace), Namespace: fleetv1.ExecutorNamespace},
		// No token is mounted anywhere: only the work agent's
		// SubjectAccessReviews name this account.
		AutomountServiceAccountToken: ptr.To(false),
	}
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ExecutorRoleBinding, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fleetv1.ExecutorClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: fleetv1.ExecutorServiceAccountName(namespace), Namespace: fleetv1.ExecutorNamespace}},
	}
	manifests, err := envelope.Encode([]runtime.Object{ns, sa, rb})
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fleetv1.TenantWorkName(namespace),
			Namespace: cluster,
			Labels: map[string]string{
				fleetv1.LabelManagedBy: fleetv1.ManagedByHub,
				fleetv1.LabelTenant:    namespace,
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:     workv1.ManifestsTemplate{Manifests: manifests},
			DeleteOption: orphanNamespace(namespace),
			ManifestConfigs: []workv1.ManifestConfigOption{
				createOnlyConfig("", "namespaces", "", namespace),
				applyConfig("", "serviceaccounts", fleetv1.ExecutorNamespace, fleetv1.ExecutorServiceAccountName(namespace)),
				applyConfig(rbacv1.GroupName, "rolebindings", namespace, fleetv1.ExecutorRoleBinding),
			},
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
}

// TenantLevel returns the Pod Security level a tenant work labels its
// namespace with, given the levels of the namespace's FleetSet works in the
// cluster (their v1alpha1.AnnotationPodSecurityLevel; "" or unknown counts
// as v1alpha1.DefaultPodSecurityLevel): the least restrictive of them, so
// that every one of those FleetSets' pods is admitted. None exceeds the
// namespace's platform ceiling: each is a FleetSet's effective level, and
// the hub checked each FleetSet's template against its own level
// (PodSecurityViolation). With no levels it is the default.
func TenantLevel(levels []string) fleetv1.PodSecurityLevel {
	rank := map[fleetv1.PodSecurityLevel]int{fleetv1.PodSecurityRestricted: 0, fleetv1.PodSecurityBaseline: 1, fleetv1.PodSecurityPrivileged: 2}
	out, best := fleetv1.DefaultPodSecurityLevel, -1
	for _, l := range levels {
		lvl := fleetv1.PodSecurityLevel(l)
		r, ok := rank[lvl]
		if !ok {
			lvl, r = fleetv1.DefaultPodSecurityLevel, rank[fleetv1.DefaultPodSecurityLevel]
		}
		if r > best {
			out, best = lvl, r
		}
	}
	return out
}
