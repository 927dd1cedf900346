//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// labelPodSecurityLevel is the platform's label on a hub namespace
// (v1alpha1.LabelPodSecurityLevel), spelled out.
const labelPodSecurityLevel = "fleetset.io/pod-security-level"

// labelNamespace sets label k=v on namespace name ("" removes it).
func labelNamespace(t testing.TB, name, k, v string) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	if v == "" {
		delete(ns.Labels, k)
	} else {
		ns.Labels[k] = v
	}
	if err := k8sClient.Update(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
}

// rootOnEveryNode makes fs's pods privileged with the node's / mounted: the
// tenant escape of issue 35.
func rootOnEveryNode(fs *fleetv1.FleetSet) {
	fs.Spec.PodSecurityLevel = fleetv1.PodSecurityPrivileged
	spec := &fs.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
}

// degradedWith waits until FleetSet ns/name is Degraded with reason and a
// message holding every one of want.
func degradedWith(t testing.TB, ns, name, reason string, want ...string) {
	t.Helper()
	eventually(t, 20*time.Second, ns+"/"+name+": Degraded "+reason+" with "+strings.Join(want, ", "), func() (bool, error) {
		c := condition(getFleetSet(t, ns, name), fleetv1.ConditionDegraded)
		if c.Status != metav1.ConditionTrue || c.Reason != reason {
			return false, nil
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return false, nil
			}
		}
		return true, nil
	})
}

// TestPlatformPodSecurityLevel: the Pod Security level is the platform
// team's, set on the hub namespace (label fleetset.io/pod-security-level,
// default baseline). A tenant's FleetSet asking for privileged, with a
// privileged container mounting the node's /, is refused on the hub
// (InvalidSpec naming spec.podSecurityLevel, an event) and nothing is
// delivered; once the platform labels the namespace privileged it is
// delivered, into a member namespace labelled privileged. A namespace the
// platform labels restricted checks a FleetSet that names no level against
// restricted.
func TestPlatformPodSecurityLevel(t *testing.T) {
	createCluster(t, "ps-east", true)
	createCluster(t, "ps-west", true)
	createNamespace(t, "ps-tenant")
	createNamespace(t, "ps-strict")
	startHub(t, time.Minute)

	fs := sampleFleetSet("ps-tenant", "root")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "ps-east", "ps-west"
	rootOnEveryNode(fs)
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	degradedWith(t, "ps-tenant", "root", fleetv1.ReasonInvalidSpec,
		`spec.podSecurityLevel: "privileged" is more permissive than "baseline"`, "namespace ps-tenant", labelPodSecurityLevel)
	if ws := works(t, "ps-tenant", "root"); len(ws) != 0 {
		t.Fatalf("a tenant's privileged FleetSet was delivered to %v", keys(ws))
	}
	if !hasEvent(t, "ps-tenant", "root", fleetv1.ReasonInvalidSpec) {
		t.Errorf("no %s event", fleetv1.ReasonInvalidSpec)
	}

	// The platform team allows privileged in the namespace: delivered, the
	// member namespace enforcing privileged.
	labelNamespace(t, "ps-tenant", labelPodSecurityLevel, "privileged")
	eventually(t, 20*time.Second, "works in both clusters once the namespace allows privileged", func() (bool, error) {
		return len(works(t, "ps-tenant", "root")) == 2, nil
	})
	var ns corev1.Namespace
	manifest(t, tenantWork(t, "ps-east", "ps-tenant"), "Namespace", "ps-tenant", &ns)
	if got := ns.Labels[manifestwork.LabelPodSecurityEnforce]; got != "privileged" {
		t.Errorf("delivered namespace enforces %q, want privileged", got)
	}

	// No level in the FleetSet: the platform's restricted is checked.
	strict := sampleFleetSet("ps-strict", "plain")
	strict.Spec.Topology.Subsets[0].Cluster, strict.Spec.Topology.Subsets[1].Cluster = "ps-east", "ps-west"
	labelNamespace(t, "ps-strict", labelPodSecurityLevel, "restricted")
	if err := k8sClient.Create(t.Context(), strict); err != nil {
		t.Fatal(err)
	}
	degradedWith(t, "ps-strict", "plain", fleetv1.ReasonPodSecurity, `violates PodSecurity "restricted"`)
	if ws := works(t, "ps-strict", "plain"); len(ws) != 0 {
		t.Fatalf("a template restricted forbids was delivered to %v", keys(ws))
	}
}

// TestReservedNamespaces: a FleetSet in a hub namespace that names a
// member's system namespace (kube-public here), or one the platform lists
// (--reserved-namespaces, a prefix here), is refused with InvalidSpec
// naming the namespace, and nothing is delivered.
func TestReservedNamespaces(t *testing.T) {
	createCluster(t, "rs-east", true)
	createCluster(t, "rs-west", true)
	createNamespace(t, "kube-public")
	createNamespace(t, "platform-dns")
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: time.Minute, ReservedNamespaces: []string{"platform-*"}})
	for _, ns := range []string{"kube-public", "platform-dns"} {
		fs := sampleFleetSet(ns, "db")
		fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "rs-east", "rs-west"
		if err := k8sClient.Create(t.Context(), fs); err != nil {
			t.Fatal(err)
		}
		degradedWith(t, ns, "db", fleetv1.ReasonInvalidSpec, "metadata.namespace: "+ns+" is reserved")
		if ws := works(t, ns, "db"); len(ws) != 0 {
			t.Errorf("a FleetSet in reserved namespace %s was delivered to %v", ns, keys(ws))
		}
	}
}

// TestDependenciesStayInNamespace: the hub reads a referenced Secret only
// in the FleetSet's own namespace (a Secret of the same name elsewhere is
// never copied: DependencyMissing, nothing delivered), and never copies a
// ServiceAccount token Secret (InvalidSpec naming it).
func TestDependenciesStayInNamespace(t *testing.T) {
	ctx := t.Context()
	createCluster(t, "dep-east", true)
	createCluster(t, "dep-west", true)
	createNamespace(t, "dep-tenant")
	createNamespace(t, "dep-other")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dep-other", Name: "creds"}, StringData: map[string]string{"password": "other's"}}
	if err := k8sClient.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "dep-tenant", Name: "hub-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}
	if err := k8sClient.Create(ctx, token); err != nil {
		t.Fatal(err)
	}
	startHub(t, time.Minute)

	ref := func(fs *fleetv1.FleetSet, name string) {
		fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "dep-east", "dep-west"
		fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "token"}}}}
	}
	cross := sampleFleetSet("dep-tenant", "cross")
	ref(cross, "creds")
	tok := sampleFleetSet("dep-tenant", "tok")
	ref(tok, "hub-token")
	for _, fs := range []*fleetv1.FleetSet{cross, tok} {
		if err := k8sClient.Create(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	degradedWith(t, "dep-tenant", "cross", fleetv1.ReasonDependencyMissing, "Secret creds", "does not exist in namespace dep-tenant")
	degradedWith(t, "dep-tenant", "tok", fleetv1.ReasonInvalidSpec, "Secret hub-token", "kubernetes.io/service-account-token")
	for _, name := range []string{"cross", "tok"} {
		if ws := works(t, "dep-tenant", name); len(ws) != 0 {
			t.Errorf("dep-tenant/%s delivered to %v", name, keys(ws))
		}
	}
}

// TestForgedStatusDeliversNothing: status.subsets is the failover state of
// record; a status naming a cluster outside the sets bound to the
// namespace (forged, as by anyone allowed to write fleetsets/status) sends
// nothing there: the hub reports ClusterNotBound naming the status field
// and the cluster, and leaves every work as it is.
func TestForgedStatusDeliversNothing(t *testing.T) {
	ctx := t.Context()
	for _, c := range []string{"fg-east", "fg-west", "fg-evil"} {
		createCluster(t, c, true)
	}
	labelCluster(t, "fg-east", clusterv1beta2.ClusterSetLabel, "fgprod")
	labelCluster(t, "fg-west", clusterv1beta2.ClusterSetLabel, "fgprod")
	if err := k8sClient.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "fgprod"}}); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fg-tenant"}}); err != nil {
		t.Fatal(err)
	}
	if err := controlplane.BindClusterSet(ctx, k8sClient, "fg-tenant", "fgprod"); err != nil {
		t.Fatal(err)
	}
	startHub(t, time.Minute)
	createOnTwo(t, "fg-tenant", "db", "fg-east", "fg-west", func(fs *fleetv1.FleetSet) {
		fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, Failback: fleetv1.FailbackManual}
	})
	eventually(t, 20*time.Second, "status names both subsets", func() (bool, error) {
		return len(getFleetSet(t, "fg-tenant", "db").Status.Subsets) == 2, nil
	})
	before := resourceVersions(t, "fg-tenant", "db")

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs := getFleetSet(t, "fg-tenant", "db")
		// Relocated to fg-evil at epoch 1, failback Manual: it would stay.
		fs.Status.Subsets[0].Cluster, fs.Status.Subsets[0].Failover, fs.Status.Subsets[0].Epoch = "fg-evil", fleetv1.SubsetFailedOver, 1
		return k8sClient.Status().Update(ctx, fs)
	}); err != nil {
		t.Fatal(err)
	}
	// A status write does not wake the hub; an annotation does.
	updateFleetSet(t, "fg-tenant", "db", func(fs *fleetv1.FleetSet) {
		fs.Annotations = map[string]string{"test/poke": "1"}
	})
	degradedWith(t, "fg-tenant", "db", fleetv1.ReasonClusterNotBound, "status.subsets[name=east].cluster", "cluster fg-evil")
	if w := works(t, "fg-tenant", "db")["fg-evil"]; w != nil {
		t.Fatalf("a forged status delivered subset east to unbound cluster fg-evil")
	}
	after := resourceVersions(t, "fg-tenant", "db")
	delete(before, "FleetSet")
	delete(after, "FleetSet")
	for k, v := range before {
		if after[k] != v {
			t.Errorf("work %s changed after the forged status: %s → %s", k, v, after[k])
		}
	}
}
