//go:build integration

package controller

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// labelCluster sets label k=v on ManagedCluster name.
func labelCluster(t testing.TB, name, k, v string) {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	mc.Labels[k] = v
	if err := k8sClient.Update(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
}

// TestClusterSetBindings: a FleetSet reaches only clusters of a
// ManagedClusterSet bound to its namespace. Unbound, it is Degraded
// ClusterNotBound naming the cluster and the missing binding, with an
// event, and nothing is delivered: no tenant work either (the member
// namespace and its executor), in any cluster (issue 48: an unbound
// namespace writes nothing anywhere); a binding to a set holding one of its
// clusters is not enough (the tenant work goes to that cluster only); once
// both are in a bound set, it is delivered,
// into a namespace carrying its Pod Security level. A template its level
// forbids is then refused on the hub, naming the container, and the
// delivered works are left as they are.
func TestClusterSetBindings(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "t-east", true)
	createCluster(t, "t-west", true)
	labelCluster(t, "t-east", clusterv1beta2.ClusterSetLabel, "tprod")
	if err := k8sClient.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "tprod"}}); err != nil {
		t.Fatal(err)
	}
	// A namespace with no binding at all.
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}); err != nil {
		t.Fatal(err)
	}
	startHub(t, time.Minute)

	fs := sampleFleetSet("tenant-a", "mydb")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "t-east", "t-west"
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Degraded ClusterNotBound naming t-east and the missing binding", func() (bool, error) {
		c := condition(getFleetSet(t, "tenant-a", "mydb"), fleetv1.ConditionDegraded)
		return c.Status == metav1.ConditionTrue && c.Reason == fleetv1.ReasonClusterNotBound &&
			strings.Contains(c.Message, "spec.topology.subsets[0].cluster: cluster t-east is in no ManagedClusterSet bound to namespace tenant-a") &&
			strings.Contains(c.Message, "no ManagedClusterSetBinding there is Bound") && strings.Contains(c.Message, "t-east is in set tprod"), nil
	})
	if ws := works(t, "tenant-a", "mydb"); len(ws) != 0 {
		t.Fatalf("works delivered to %v without a binding", keys(ws))
	}
	if !hasEvent(t, "tenant-a", "mydb", fleetv1.ReasonClusterNotBound) {
		t.Errorf("no %s event", fleetv1.ReasonClusterNotBound)
	}
	// The tenant reconciler runs on the FleetSet's creation too: give it
	// time, then no tenant work of tenant-a may be anywhere.
	noTenantWork := func(clusters ...string) {
		t.Helper()
		for range 3 {
			time.Sleep(time.Second)
			for _, c := range clusters {
				if tw := tenantWork(t, c, "tenant-a"); tw != nil {
					t.Fatalf("tenant work %s/%s written for an unbound cluster: %d manifests (the member namespace, its executor)", c, tw.Name, len(tw.Spec.Workload.Manifests))
				}
			}
		}
	}
	noTenantWork("t-east", "t-west")

	// Bound to tprod: t-east is reachable, t-west still not; nothing moves.
	if err := controlplane.BindClusterSet(ctx, k8sClient, "tenant-a", "tprod"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Degraded ClusterNotBound naming t-west only, the bound set listed", func() (bool, error) {
		c := condition(getFleetSet(t, "tenant-a", "mydb"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonClusterNotBound && strings.Contains(c.Message, "cluster t-west") &&
			strings.Contains(c.Message, "bound: tprod") && !strings.Contains(c.Message, "cluster t-east"), nil
	})
	if ws := works(t, "tenant-a", "mydb"); len(ws) != 0 {
		t.Fatalf("works delivered to %v while t-west is not bound", keys(ws))
	}
	eventually(t, 20*time.Second, "tenant work of tenant-a in t-east, now bound", func() (bool, error) {
		return tenantWork(t, "t-east", "tenant-a") != nil, nil
	})
	noTenantWork("t-west")

	// t-west joins tprod (a label on the ManagedCluster): delivered to both.
	labelCluster(t, "t-west", clusterv1beta2.ClusterSetLabel, "tprod")
	eventually(t, 20*time.Second, "works in t-east and t-west, Degraded False", func() (bool, error) {
		ws := works(t, "tenant-a", "mydb")
		return len(ws) == 2 && condition(getFleetSet(t, "tenant-a", "mydb"), fleetv1.ConditionDegraded).Status == metav1.ConditionFalse, nil
	})
	var ns corev1.Namespace
	manifest(t, tenantWork(t, "t-east", "tenant-a"), "Namespace", "tenant-a", &ns)
	if ns.Labels[manifestwork.LabelPodSecurityEnforce] != "baseline" {
		t.Errorf("delivered namespace labels %v, want %s=baseline", ns.Labels, manifestwork.LabelPodSecurityEnforce)
	}

	// A privileged container under the default level (baseline): refused on
	// the hub, naming the container; the works are not touched.
	before := resourceVersions(t, "tenant-a", "mydb")
	updateFleetSet(t, "tenant-a", "mydb", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	eventually(t, 20*time.Second, "Degraded PodSecurityViolation naming container pause", func() (bool, error) {
		c := condition(getFleetSet(t, "tenant-a", "mydb"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonPodSecurity && strings.Contains(c.Message, `container "pause" must not set securityContext.privileged=true`), nil
	})
	after := resourceVersions(t, "tenant-a", "mydb")
	delete(before, "FleetSet")
	delete(after, "FleetSet")
	if !maps.Equal(before, after) {
		t.Errorf("works changed while the template was refused: %v → %v", before, after)
	}

	// nodeName in spec.template is refused at admission; through a subset's
	// patch, by the hub (InvalidSpec naming the subset): a pod bound by name
	// would skip fleetset-scheduler's domain and fencing gate.
	fs = getFleetSet(t, "tenant-a", "mydb")
	fs.Spec.Template.Spec.Containers[0].SecurityContext = nil
	fs.Spec.Template.Spec.NodeName = "node-1"
	if err := k8sClient.Update(t.Context(), fs); err == nil || !strings.Contains(err.Error(), "spec.template.spec.nodeName must not be set") {
		t.Fatalf("update with spec.template.spec.nodeName: %v, want refused at admission", err)
	}
	before = resourceVersions(t, "tenant-a", "mydb")
	updateFleetSet(t, "tenant-a", "mydb", func(fs *fleetv1.FleetSet) {
		fs.Spec.Template.Spec.Containers[0].SecurityContext = nil
		fs.Spec.Topology.Subsets[1].Patch = &runtime.RawExtension{Raw: []byte(`{"spec":{"nodeName":"node-1"}}`)}
	})
	eventually(t, 20*time.Second, "Degraded InvalidSpec naming nodeName in subset west's patch", func() (bool, error) {
		c := condition(getFleetSet(t, "tenant-a", "mydb"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonInvalidSpec && strings.Contains(c.Message, `spec.topology.subsets[1]`) && strings.Contains(c.Message, `spec.nodeName "node-1" must not be set`), nil
	})
	after = resourceVersions(t, "tenant-a", "mydb")
	delete(before, "FleetSet")
	delete(after, "FleetSet")
	if !maps.Equal(before, after) {
		t.Errorf("works changed while a patch set nodeName: %v → %v", before, after)
	}
}

// TestDeletionPolicy: deleting a FleetSet deletes its ManifestWorks; with
// deletionPolicy Retain (the default with volume claim templates) each work
// is first set to orphan everything it delivered and deleted only once the
// work agent has applied it so (it then drops its owner references, and the
// garbage collector leaves the StatefulSets, their pods and volumes); with
// Delete the works keep their deleteOption (only the namespace is orphaned). The works carry
// the work agent's finalizer here, as on a real member, so their last state
// can be read.
func TestDeletionPolicy(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "dp-east", true)
	createCluster(t, "dp-west", true)
	createNamespace(t, "deletion")
	startHub(t, time.Minute)
	const agentFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"
	create := func(name string, mutate func(*fleetv1.FleetSet)) {
		createOnTwo(t, "deletion", name, "dp-east", "dp-west", mutate)
		for _, w := range works(t, "deletion", name) {
			w.Finalizers = append(w.Finalizers, agentFinalizer)
			if err := k8sClient.Update(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
	}
	create("keep", func(fs *fleetv1.FleetSet) {
		fs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}
	})
	create("drop", func(fs *fleetv1.FleetSet) { fs.Spec.DeletionPolicy = fleetv1.DeletionDelete })
	manifests := map[string]int{}
	for c, w := range works(t, "deletion", "keep") {
		manifests[c] = len(w.Spec.Workload.Manifests)
	}
	for name, want := range map[string]string{"keep": "Retain", "drop": "Delete"} {
		for c, w := range works(t, "deletion", name) {
			if got := w.Annotations[fleetv1.AnnotationDeletionPolicy]; got != want {
				t.Errorf("%s: work in %s records deletion policy %q, want %q", name, c, got, want)
			}
		}
		if err := k8sClient.Delete(ctx, &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: "deletion", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	// keep: the works are set to orphan, and deleted only once the work
	// agent reports them applied that way (here, the test reports it).
	eventually(t, 20*time.Second, "keep: both works set to orphan, not yet deleted", func() (bool, error) {
		ws := works(t, "deletion", "keep")
		n := 0
		for _, w := range ws {
			if o := w.Spec.DeleteOption; o != nil && o.PropagationPolicy == workv1.DeletePropagationPolicyTypeOrphan && w.DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n == 2, nil
	})
	time.Sleep(2 * time.Second)
	for c, w := range works(t, "deletion", "keep") {
		if !w.DeletionTimestamp.IsZero() {
			t.Errorf("keep: work in %s deleted before the agent applied it as orphaning", c)
		}
		// The hub's cache holds works without manifests: setting the
		// orphan option must not write that copy back.
		if got := len(w.Spec.Workload.Manifests); got != manifests[c] || got == 0 {
			t.Errorf("keep: work in %s set to orphan has %d manifests, had %d", c, got, manifests[c])
		}
		setWorkCondition(t, c, w.Name, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation})
	}
	for name, wantOrphan := range map[string]bool{"keep": true, "drop": false} {
		eventually(t, 20*time.Second, name+": both works being deleted", func() (bool, error) {
			ws := works(t, "deletion", name)
			n := 0
			for _, w := range ws {
				if !w.DeletionTimestamp.IsZero() {
					n++
				}
			}
			return n == 2, nil
		})
		for c, w := range works(t, "deletion", name) {
			o := w.Spec.DeleteOption
			orphan := o != nil && o.PropagationPolicy == workv1.DeletePropagationPolicyTypeOrphan
			if orphan != wantOrphan {
				t.Errorf("%s: work in %s deleted with deleteOption %+v, want orphan everything %v", name, c, o, wantOrphan)
			}
			w.Finalizers = nil
			if err := k8sClient.Update(ctx, w); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
}

// TestEditedWorkIsRestored: a FleetSet's ManifestWork whose spec someone
// changes on the hub (its spec-hash annotation left as it was) is written
// back to what the FleetSet renders.
func TestEditedWorkIsRestored(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "ed-east", true)
	createCluster(t, "ed-west", true)
	createNamespace(t, "edited")
	startHub(t, time.Minute)
	createOnTwo(t, "edited", "db", "ed-east", "ed-west", nil)
	w := works(t, "edited", "db")["ed-east"]
	manifests := len(w.Spec.Workload.Manifests)
	w.Spec.Workload.Manifests = w.Spec.Workload.Manifests[:1]
	if err := k8sClient.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	edited := w.Generation
	eventually(t, 20*time.Second, "ed-east's work restored", func() (bool, error) {
		w := works(t, "edited", "db")["ed-east"]
		return w.Generation > edited && len(w.Spec.Workload.Manifests) == manifests, nil
	})
}

// createOnTwo creates the sample FleetSet ns/name over clusters east and
// west, changed by mutate (nil: none), and waits for its two works.
func createOnTwo(t testing.TB, ns, name, east, west string, mutate func(*fleetv1.FleetSet)) {
	t.Helper()
	fs := sampleFleetSet(ns, name)
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = east, west
	if mutate != nil {
		mutate(fs)
	}
	if err := k8sClient.Create(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, ns+"/"+name+": works in both clusters", func() (bool, error) {
		return len(works(t, ns, name)) == 2, nil
	})
}
