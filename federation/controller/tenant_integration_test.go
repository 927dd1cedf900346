//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/envelope"
)

// tenantWork returns the tenant work of namespace ns in cluster, nil when
// there is none.
func tenantWork(t testing.TB, cluster, ns string) *workv1.ManifestWork {
	t.Helper()
	w := &workv1.ManifestWork{}
	switch err := k8sClient.Get(context.Background(), clientKey(cluster, fleetv1.TenantWorkName(ns)), w); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		t.Fatal(err)
	}
	return w
}

// TestTenantWorks: each (cluster, hub namespace) a FleetSet is delivered to
// gets one tenant work, applied with the work agent's own identity (no
// executor): the namespace (created once, Pod Security labelled, orphaned
// on deletion), the executor ServiceAccount fleetset-system/fleetset-executor-<namespace>
// and its RoleBinding to the add-on's ClusterRole; the FleetSet's work runs
// as that executor and no longer carries the namespace. The tenant work
// stays while a FleetSet work of its namespace is still in the cluster
// (being deleted too), is deleted once none is, and never goes with
// another namespace's; edited, it is written back.
func TestTenantWorks(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "tn-east", true)
	createCluster(t, "tn-west", true)
	createNamespace(t, "tn-a")
	createNamespace(t, "tn-b")
	startHub(t, time.Minute)
	createOnTwo(t, "tn-a", "db", "tn-east", "tn-west", nil)
	createOnTwo(t, "tn-b", "db", "tn-east", "tn-west", nil)

	for _, ns := range []string{"tn-a", "tn-b"} {
		for c, fw := range works(t, ns, "db") {
			if e := fw.Spec.Executor; e == nil || e.Subject.ServiceAccount == nil || *e.Subject.ServiceAccount != (workv1.ManifestWorkSubjectServiceAccount{Namespace: "fleetset-system", Name: "fleetset-executor-" + ns}) {
				t.Errorf("%s/db in %s: executor %+v, want ServiceAccount fleetset-system/fleetset-executor-%s", ns, c, e, ns)
			}
			if i, err := envelope.Find(fw, envelope.Key{Kind: "Namespace"}, nil); err != nil || i >= 0 {
				t.Errorf("%s/db in %s: carries a Namespace (manifest %d, %v); the tenant work creates it", ns, c, i, err)
			}
			if got := fw.Annotations[fleetv1.AnnotationPodSecurityLevel]; got != string(fleetv1.DefaultPodSecurityLevel) {
				t.Errorf("%s/db in %s: pod security annotation %q, want %q", ns, c, got, fleetv1.DefaultPodSecurityLevel)
			}
			var tw *workv1.ManifestWork
			eventually(t, 20*time.Second, "tenant work of "+ns+" in "+c, func() (bool, error) {
				tw = tenantWork(t, c, ns)
				return tw != nil, nil
			})
			if tw.Spec.Executor != nil {
				t.Errorf("tenant work %s/%s: executor %+v, want none (the work agent's identity)", c, tw.Name, tw.Spec.Executor)
			}
			if tw.Labels[fleetv1.LabelTenant] != ns || tw.Labels[fleetv1.LabelManagedBy] != fleetv1.ManagedByHub {
				t.Errorf("tenant work %s/%s: labels %v", c, tw.Name, tw.Labels)
			}
			var nsObj corev1.Namespace
			if i, err := envelope.Find(tw, envelope.Key{Kind: "Namespace", Name: ns}, &nsObj); err != nil || i < 0 {
				t.Fatalf("tenant work %s/%s: no Namespace %s (%v)", c, tw.Name, ns, err)
			}
			if nsObj.Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
				t.Errorf("tenant work %s/%s: namespace labels %v, want pod security baseline enforced", c, tw.Name, nsObj.Labels)
			}
			var sa corev1.ServiceAccount
			if i, err := envelope.Find(tw, envelope.Key{Kind: "ServiceAccount", Namespace: "fleetset-system", Name: "fleetset-executor-" + ns}, &sa); err != nil || i < 0 {
				t.Errorf("tenant work %s/%s: no ServiceAccount fleetset-system/fleetset-executor-%s (%v)", c, tw.Name, ns, err)
			}
			if i, err := envelope.Find(tw, envelope.Key{Kind: "ServiceAccount", Namespace: ns}, nil); err != nil || i >= 0 {
				t.Errorf("tenant work %s/%s: a ServiceAccount in the tenant namespace %s (manifest %d, %v): its pods could run as it", c, tw.Name, ns, i, err)
			}
			var rb rbacv1.RoleBinding
			if i, err := envelope.Find(tw, envelope.Key{Kind: "RoleBinding", Namespace: ns, Name: fleetv1.ExecutorRoleBinding}, &rb); err != nil || i < 0 {
				t.Fatalf("tenant work %s/%s: no RoleBinding (%v)", c, tw.Name, err)
			}
			wantRef := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "fleetset-work-executor"}
			wantSubj := rbacv1.Subject{Kind: "ServiceAccount", Namespace: "fleetset-system", Name: "fleetset-executor-" + ns}
			if rb.RoleRef != wantRef || len(rb.Subjects) != 1 || rb.Subjects[0] != wantSubj {
				t.Errorf("tenant work %s/%s: RoleBinding %+v %+v, want %+v to %+v", c, tw.Name, rb.RoleRef, rb.Subjects, wantRef, wantSubj)
			}
			o := tw.Spec.DeleteOption
			if o == nil || o.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan || o.SelectivelyOrphan == nil ||
				len(o.SelectivelyOrphan.OrphaningRules) != 1 || o.SelectivelyOrphan.OrphaningRules[0] != (workv1.OrphaningRule{Resource: "namespaces", Name: ns}) {
				t.Errorf("tenant work %s/%s: deleteOption %+v, want the namespace orphaned", c, tw.Name, o)
			}
		}
	}

	// tn-a/db leaves both clusters; its work in tn-east is held by the
	// work agent's finalizer (still removing what it applied).
	const agentFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"
	held := works(t, "tn-a", "db")["tn-east"]
	held.Finalizers = append(held.Finalizers, agentFinalizer)
	if err := k8sClient.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(ctx, &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tn-a", Name: "db"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "tn-a's tenant work in tn-west deleted", func() (bool, error) {
		return tenantWork(t, "tn-west", "tn-a") == nil, nil
	})
	time.Sleep(time.Second)
	if tw := tenantWork(t, "tn-east", "tn-a"); tw == nil || !tw.DeletionTimestamp.IsZero() {
		t.Errorf("tn-a's tenant work in tn-east deleted while tn-a/db's work there is still being deleted")
	}
	for _, c := range []string{"tn-east", "tn-west"} {
		if tw := tenantWork(t, c, "tn-b"); tw == nil || !tw.DeletionTimestamp.IsZero() {
			t.Errorf("tn-b's tenant work in %s deleted with tn-a's FleetSet", c)
		}
	}
	held = &workv1.ManifestWork{}
	if err := k8sClient.Get(ctx, clientKey("tn-east", manifestwork.WorkName("tn-a", "db")), held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if err := k8sClient.Update(ctx, held); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "tn-a's tenant work in tn-east deleted once tn-a/db's work is gone", func() (bool, error) {
		return tenantWork(t, "tn-east", "tn-a") == nil, nil
	})

	// tn-c's tenant works are not applied (the agent is held): the
	// FleetSet's works wait; the agent's failure is the FleetSet's
	// ApplyFailed; once applied, the works are written.
	heldTenants.Store("tn-c", true)
	defer heldTenants.Delete("tn-c")
	createNamespace(t, "tn-c")
	fs := sampleFleetSet("tn-c", "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "tn-east", "tn-west"
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "tn-c's tenant works, before any FleetSet work", func() (bool, error) {
		return tenantWork(t, "tn-east", "tn-c") != nil && tenantWork(t, "tn-west", "tn-c") != nil, nil
	})
	time.Sleep(2 * time.Second)
	if n := len(works(t, "tn-c", "db")); n != 0 {
		t.Errorf("tn-c/db: %d works written before the namespace's executor is in place, want 0", n)
	}
	setWorkCondition(t, "tn-east", fleetv1.TenantWorkName("tn-c"), metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse,
		Reason: "AppliedManifestWorkFailed", Message: "rolebindings is forbidden"})
	eventually(t, 20*time.Second, "tn-c/db Degraded ApplyFailed with the tenant work's failure", func() (bool, error) {
		c := condition(getFleetSet(t, "tn-c", "db"), fleetv1.ConditionDegraded)
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonApplyFailed && strings.Contains(c.Message, "rolebindings is forbidden"), nil
	})
	heldTenants.Delete("tn-c")
	eventually(t, 20*time.Second, "tn-c/db's works written once its tenant works are applied", func() (bool, error) {
		return len(works(t, "tn-c", "db")) == 2, nil
	})

	// Someone changes tn-b's tenant work (its hash left alone): written back.
	restores := testutil.ToFloat64(tenantWrites.WithLabelValues("restore", "ok"))
	tw := tenantWork(t, "tn-east", "tn-b")
	n := len(tw.Spec.Workload.Manifests)
	tw.Spec.Workload.Manifests = tw.Spec.Workload.Manifests[:1]
	if err := k8sClient.Update(ctx, tw); err != nil {
		t.Fatal(err)
	}
	edited := tw.Generation
	eventually(t, 20*time.Second, "tn-b's edited tenant work written back", func() (bool, error) {
		tw := tenantWork(t, "tn-east", "tn-b")
		return tw != nil && tw.Generation > edited && len(tw.Spec.Workload.Manifests) == n, nil
	})
	// Counted once the write has returned (a moment after the test sees it).
	eventually(t, 5*time.Second, "fleetset_hub_tenant_work_writes_total{operation=restore,result=ok} +1", func() (bool, error) {
		return testutil.ToFloat64(tenantWrites.WithLabelValues("restore", "ok")) == restores+1, nil
	})
}
