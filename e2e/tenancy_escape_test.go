//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestPrivilegedFleetSetIsNeverDelivered is issue 35's tenant escape: a
// FleetSet author asks for podSecurityLevel privileged and runs a
// privileged container with the node's / mounted. Its namespace carries no
// platform level (baseline), so it is refused at admission (where the hub's
// policies are installed) or by the hub (Degraded InvalidSpec naming
// spec.podSecurityLevel), and no member ever gets a StatefulSet of it.
func TestPrivilegedFleetSetIsNeverDelivered(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "escape")
	fs := f.newFleetSet(ns, "root", 2)
	fs.Spec.PodSecurityLevel = fleetv1.PodSecurityPrivileged
	spec := &fs.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	const want = `spec.podSecurityLevel: "privileged" is more permissive than "baseline"`
	if err := f.hub.Create(t.Context(), fs); err != nil {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("creating the privileged FleetSet: %v", err)
		}
		t.Logf("refused at admission: %v", err)
	} else {
		eventually(t, waitTimeout, "Degraded InvalidSpec naming spec.podSecurityLevel", func(ctx context.Context) (bool, string, error) {
			c, why, err := f.degraded(ctx, ns, "root")
			if c == nil || err != nil {
				return false, why, err
			}
			return c.Reason == fleetv1.ReasonInvalidSpec && strings.Contains(c.Message, want), c.Reason + ": " + c.Message, nil
		})
	}
	// Give a delivery, had there been one, time to reach the members.
	time.Sleep(10 * time.Second)
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := m.c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items)+len(pods.Items) != 0 {
			t.Errorf("%s: %d StatefulSets and %d pods of a tenant's privileged FleetSet delivered in %s", m.name, len(sts.Items), len(pods.Items), ns)
		}
	}
}

// TestExecutorCannotWriteAnotherNamespace is issue 35's other escape: a
// work that runs as the executor team-a's FleetSet work runs as, holding a
// Secret for namespace team-b. The hub never renders one (it puts
// every object in the FleetSet's namespace), so the test writes it on the
// hub directly. OCM's work agent checks the executor's rights with a
// SubjectAccessReview before applying: it refuses the Secret (the work's
// Applied condition False) and team-b's namespace, which exists in the
// member, gets nothing, while team-a's FleetSet runs.
func TestExecutorCannotWriteAnotherNamespace(t *testing.T) {
	f := theFleet
	teamA := f.newNamespace(t, "team-a")
	teamB := f.newNamespace(t, "team-b")
	f.createFleetSet(t, f.newFleetSet(teamA, "db", 2))
	f.waitReady(t, teamA, "db", 2)
	m := f.members[0]
	if err := m.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamB}}); err != nil {
		t.Fatalf("%s: creating namespace %s: %v", m.name, teamB, err)
	}
	// The executor team-a's FleetSet work in m runs as.
	fw := &unstructured.Unstructured{}
	fw.SetGroupVersionKind(manifestWorkGVK.GroupVersion().WithKind("ManifestWork"))
	if err := f.hub.Get(t.Context(), client.ObjectKey{Namespace: m.name, Name: fleetv1.ManifestWorkName(teamA, "db")}, fw); err != nil {
		t.Fatal(err)
	}
	executor, found, _ := unstructured.NestedMap(fw.Object, "spec", "executor")
	if !found {
		t.Fatalf("team-a's work %s/%s names no executor: it runs as the work agent", m.name, fw.GetName())
	}
	t.Logf("team-a's FleetSet work runs as %v", executor["subject"])
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "stolen", "namespace": teamB}, "stringData": map[string]any{"k": "v"}}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
		"metadata": map[string]any{"name": "escape-" + teamA, "namespace": m.name},
		"spec": map[string]any{
			"workload": map[string]any{"manifests": []any{secret}},
			"executor": executor,
		},
	}}
	if err := f.hub.Create(t.Context(), w); err != nil {
		t.Fatalf("creating ManifestWork %s/%s: %v", m.name, w.GetName(), err)
	}
	t.Cleanup(func() { _ = f.hub.Delete(context.Background(), w) })
	eventually(t, waitTimeout, "the work agent to refuse the Secret (Applied False)", func(ctx context.Context) (bool, string, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(w.GroupVersionKind())
		if err := f.hub.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return false, "", err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Applied" {
				msg := fmt.Sprint(cm["message"])
				return cm["status"] == "False", fmt.Sprintf("Applied %v: %s", cm["status"], msg), nil
			}
		}
		return false, "no Applied condition yet", nil
	})
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(w.GroupVersionKind())
	if err := f.hub.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	// The refusal is the executor check's (ocm pkg/work/spoke/auth/basic),
	// not some other failure to apply.
	manifests, _, _ := unstructured.NestedSlice(got.Object, "status", "resourceStatus", "manifests")
	if want := "not allowed to apply the resource  secrets, " + teamB + " stolen"; !strings.Contains(fmt.Sprint(manifests), want) {
		t.Errorf("the work agent's manifest status %v does not say %q", manifests, want)
	}
	var s corev1.Secret
	if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: teamB, Name: "stolen"}, &s); !apierrors.IsNotFound(err) {
		t.Errorf("%s: Secret %s/stolen: %v, want NotFound", m.name, teamB, err)
	}
	// team-a's FleetSet still runs.
	f.waitReady(t, teamA, "db", 2)
}
