//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestMemberEditorCannotForgeAnInstance is issue 48's forged instance: a
// member namespace editor (the built-in edit role in the FleetSet's
// namespace of one member) tries to pass a pod of hers off as an instance
// of a live FleetSet with roles, whose instances hold no role yet: (a) a
// pod born with the placement, set, subset, role (the leader's) and
// pod-index labels of the member's subset, (b) a plain pod she then labels
// into the placement with the leader's role. Both are refused by the
// member admission policy, naming it (fleetset-pod-labels,
// fleetset-delivered-objects). The label contract still holds: she labels
// a real instance primary, and status.leader names it, never a forged pod.
func TestMemberEditorCannotForgeAnInstance(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-member")
	fs := f.newFleetSet(ns, "db", int32(len(f.members)))
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly}}
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", len(f.members))
	m := f.members[0]
	var real *corev1.Pod
	for _, in := range ins {
		if in.cluster == m.name {
			real = &corev1.Pod{}
			if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: in.pod}, real); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if real == nil {
		t.Fatalf("no instance of db in %s: %s", m.name, formatInstances(ins))
	}
	ec := f.memberEditor(t, m, ns, "e2e-editor")

	// (a) A pod born an instance, with the leader's role.
	labels := map[string]string{fleetv1.LabelRole: "primary", fleetv1.LabelAccessMode: string(fleetv1.AccessReadWrite), fleetv1.LabelPodIndex: "9"}
	for k, v := range real.Labels {
		if strings.HasPrefix(k, "fleetset.io/") && k != fleetv1.LabelDomain && k != fleetv1.LabelCluster && k != fleetv1.LabelRole && k != fleetv1.LabelAccessMode {
			labels[k] = v
		}
		if k == "app" {
			labels[k] = v
		}
	}
	placement := real.Labels[fleetv1.LabelPlacement]
	if placement == "" {
		t.Fatalf("the instance %s has no %s label: %v", real.Name, fleetv1.LabelPlacement, real.Labels)
	}
	forged := placement + "-9"
	pod := func(name string, labels map[string]string, sa string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: sa, TerminationGracePeriodSeconds: real.Spec.TerminationGracePeriodSeconds,
				Containers: []corev1.Container{{Name: "db", Image: real.Spec.Containers[0].Image}}}}
	}
	err := ec.Create(t.Context(), pod(forged, labels, ""))
	if err == nil || !strings.Contains(err.Error(), "fleetset-pod-labels") || !strings.Contains(err.Error(), "pod "+ns+"/"+forged+" carries the labels") {
		t.Errorf("%s: the editor creating pod %s born with %v: %v, want refused by fleetset-pod-labels", m.name, forged, labels, err)
	} else {
		t.Logf("(a) refused: %v", err)
	}

	// (b) A plain pod, labelled into the placement afterwards.
	if err := ec.Create(t.Context(), pod("plain", map[string]string{"app": "plain"}, "")); err != nil {
		t.Fatalf("%s: the editor creating a plain pod: %v", m.name, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q,%q:"primary",%q:"0"}}}`, fleetv1.LabelPlacement, placement,
		fleetv1.LabelSet, "db", fleetv1.LabelRole, fleetv1.LabelPodIndex)
	err = ec.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	if err == nil || !strings.Contains(err.Error(), "fleetset-delivered-objects") || !strings.Contains(err.Error(), "pod "+ns+"/plain is no instance of a FleetSet") {
		t.Errorf("%s: the editor labelling a plain pod into placement %s: %v, want refused by fleetset-delivered-objects", m.name, placement, err)
	} else {
		t.Logf("(b) refused: %v", err)
	}

	// Had a forged pod been admitted, it would run (and lead) before the
	// real leader is named: wait for that, so the leader check below would
	// see two leaders.
	for _, name := range []string{forged, "plain"} {
		eventually(t, waitTimeout, "pod "+name+" running, if it exists", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return apierrors.IsNotFound(err), errString(err), client.IgnoreNotFound(err)
			}
			return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", string(p.Status.Phase), nil
		})
	}

	// The label contract: the workload (here its namespace editor) writes
	// a real instance's role, and the hub names it leader.
	leader := ins[len(ins)-1]
	if err := f.memberEditor(t, f.member(leader.cluster), ns, "e2e-editor").Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leader.pod}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"fleetset.io/role":"primary"}}}`))); err != nil {
		t.Fatalf("%s: the workload labelling its instance %s primary (the label contract): %v", leader.cluster, leader.pod, err)
	}
	eventually(t, waitTimeout, "status.leader "+leader.pod+" in "+leader.cluster, func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		l := got.Status.Leader
		if l != nil && (l.Name == forged || l.Name == "plain") {
			t.Fatalf("status.leader names the forged pod: %+v", l)
		}
		return l != nil && l.Name == leader.pod && l.Cluster == leader.cluster, fmt.Sprintf("leader %+v", l), nil
	})
	var pods corev1.PodList
	if err := m.c.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelPlacement: placement}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "StatefulSet" || ref.Name != placement {
			t.Errorf("%s: pod %s labelled into placement %s is not its StatefulSet's (controller %v)", m.name, p.Name, placement, ref)
		}
	}
}

// TestMemberEditorCannotRunAsTheExecutor is issue 48's executor identity,
// from a member namespace editor's side: she creates (or finds) the
// ServiceAccounts fleetset-work-executor and fleetset-executor-x in her
// namespace and tries to run a pod as each, to request a token of each
// (TokenRequest) and to have kube-controller-manager fill a token Secret
// for one; every attempt is refused by the member admission policy
// fleetset-identities, naming the ServiceAccount. Her own ServiceAccount
// still runs pods.
func TestMemberEditorCannotRunAsTheExecutor(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "adv-exec")
	m := f.members[0]
	if err := m.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ec := f.memberEditor(t, m, ns, "e2e-editor")
	for _, sa := range []string{fleetv1.LegacyExecutorServiceAccount, fleetv1.ExecutorServiceAccountPrefix + "x", "mine"} {
		if err := ec.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: the editor creating ServiceAccount %s: %v", m.name, sa, err)
		}
	}
	for i, sa := range []string{fleetv1.LegacyExecutorServiceAccount, fleetv1.ExecutorServiceAccountPrefix + "x", "mine"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "as-" + strconv.Itoa(i)},
			Spec: corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c", Image: workloadImage}}}}
		err := ec.Create(t.Context(), p, client.DryRunAll)
		if sa == "mine" {
			if err != nil {
				t.Errorf("%s: the editor running a pod as her own ServiceAccount: %v", m.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "fleetset-identities") || !strings.Contains(err.Error(), "may not run as ServiceAccount "+sa) {
			t.Errorf("%s: the editor running a pod as %s: %v, want refused by fleetset-identities", m.name, sa, err)
		} else {
			t.Logf("pod as %s refused: %v", sa, err)
		}
		sao := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
		err = ec.SubResource("token").Create(t.Context(), sao, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}})
		if err == nil || !strings.Contains(err.Error(), "fleetset-identities") || !strings.Contains(err.Error(), "a token of ServiceAccount "+ns+"/"+sa+" is refused") {
			t.Errorf("%s: the editor requesting a token of %s: %v, want refused by fleetset-identities", m.name, sa, err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa + "-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type: corev1.SecretTypeServiceAccountToken}
		err = ec.Create(t.Context(), secret)
		if err == nil || !strings.Contains(err.Error(), "fleetset-identities") || !strings.Contains(err.Error(), "would hold a token of ServiceAccount "+sa) {
			t.Errorf("%s: the editor creating a token Secret of %s: %v, want refused by fleetset-identities", m.name, sa, err)
		}
	}
	// Her own ServiceAccount's token: hers.
	if err := ec.SubResource("token").Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}},
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}); err != nil {
		t.Errorf("%s: the editor requesting a token of her own ServiceAccount: %v", m.name, err)
	}
}
