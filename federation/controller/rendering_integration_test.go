//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// hasManifest reports whether w holds a manifest of kind and name.
func hasManifest(w *workv1.ManifestWork, kind, name string) bool {
	for _, m := range w.Spec.Workload.Manifests {
		if strings.Contains(string(m.Raw), `"kind":"`+kind+`"`) && strings.Contains(string(m.Raw), `"name":"`+name+`"`) {
			return true
		}
	}
	return false
}

// TestOverridesAndDependencies drives the hub with a real apiserver: east
// overrides its image registry and storage class, west does not; a
// ConfigMap the template mounts is delivered to both clusters and its
// content is part of each subset's revision. Then: changing east's patch
// changes east's revision only; editing the ConfigMap changes both and the
// delivered copies; deleting it holds the FleetSet, DependencyMissing
// naming it, with the works left as they were; a bad patch is InvalidSpec
// naming the subset's patch.
func TestOverridesAndDependencies(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "rd-east", true)
	createCluster(t, "rd-west", true)
	createNamespace(t, "render")
	startHub(t, time.Minute)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "render", Name: "db-conf"}, Data: map[string]string{"mode": "fast"}}
	if err := k8sClient.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	fs := sampleFleetSet("render", "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "rd-east", "rd-west"
	fs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}}}
	fs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	east := &fs.Spec.Topology.Subsets[0]
	east.ImageRegistryRewrites = []fleetv1.ImageRegistryRewrite{{From: "registry.k8s.io", To: "mirror.east.example/k8s"}}
	east.StorageClassNames = []fleetv1.ClaimStorageClass{{Claim: "data", StorageClassName: "fast"}}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}

	type view struct{ eastRev, westRev, fleetRev string }
	revisions := func() view {
		got := getFleetSet(t, "render", "db")
		var v view
		for _, ss := range got.Status.Subsets {
			switch ss.Name {
			case "east":
				v.eastRev = ss.Revision
			case "west":
				v.westRev = ss.Revision
			}
		}
		v.fleetRev = got.Status.UpdateRevision
		return v
	}
	var first view
	eventually(t, 20*time.Second, "both works delivered with the ConfigMap, each subset with its revision", func() (bool, error) {
		ws := works(t, "render", "db")
		if len(ws) != 2 || !hasManifest(ws["rd-east"], "ConfigMap", "db-conf") || !hasManifest(ws["rd-west"], "ConfigMap", "db-conf") {
			return false, nil
		}
		first = revisions()
		return first.eastRev != "" && first.westRev != "" && first.eastRev != first.westRev && first.fleetRev != "", nil
	})
	ws := works(t, "render", "db")
	var eastSts, westSts appsv1.StatefulSet
	manifest(t, ws["rd-east"], "StatefulSet", "db-east", &eastSts)
	manifest(t, ws["rd-west"], "StatefulSet", "db-west", &westSts)
	if img := eastSts.Spec.Template.Spec.Containers[0].Image; img != "mirror.east.example/k8s/pause:3.10" {
		t.Errorf("east image = %q, want the mirror's", img)
	}
	if img := westSts.Spec.Template.Spec.Containers[0].Image; img != "registry.k8s.io/pause:3.10" {
		t.Errorf("west image = %q, want the template's", img)
	}
	if sc := ptr.Deref(eastSts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName, ""); sc != "fast" {
		t.Errorf("east claim storageClassName = %q, want fast", sc)
	}
	if westSts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != nil {
		t.Errorf("west claim storageClassName = %q, want none", *westSts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName)
	}
	if eastSts.Annotations[fleetv1.AnnotationRevision] != first.eastRev {
		t.Errorf("east StatefulSet revision annotation %q, status %q", eastSts.Annotations[fleetv1.AnnotationRevision], first.eastRev)
	}

	// East's patch changes east's revision only.
	updateFleetSet(t, "render", "db", func(cur *fleetv1.FleetSet) {
		cur.Spec.Topology.Subsets[0].Patch = &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"tier":"gold"}}}`)}
	})
	var second view
	eventually(t, 20*time.Second, "east's revision changed, west's not", func() (bool, error) {
		second = revisions()
		return second.eastRev != first.eastRev, nil
	})
	if second.westRev != first.westRev {
		t.Errorf("west's revision changed with east's patch: %s → %s", first.westRev, second.westRev)
	}

	// Editing the ConfigMap changes both revisions, the delivered copies and
	// the pod templates (their dependencies hash: the pods are replaced).
	hashBefore := eastSts.Spec.Template.Annotations[fleetv1.AnnotationDependencies]
	if hashBefore == "" {
		t.Errorf("east pod template has no %s annotation", fleetv1.AnnotationDependencies)
	}
	cm.Data["mode"] = "safe"
	if err := k8sClient.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "both revisions changed and the delivered ConfigMaps say safe", func() (bool, error) {
		v := revisions()
		if v.eastRev == second.eastRev || v.westRev == second.westRev {
			return false, nil
		}
		for _, w := range works(t, "render", "db") {
			var got corev1.ConfigMap
			manifest(t, w, "ConfigMap", "db-conf", &got)
			if got.Data["mode"] != "safe" || got.Labels[fleetv1.LabelOwnerUID] == "" {
				return false, nil
			}
			var sts appsv1.StatefulSet
			manifest(t, w, "StatefulSet", "db-"+map[string]string{"rd-east": "east", "rd-west": "west"}[w.Namespace], &sts)
			if h := sts.Spec.Template.Annotations[fleetv1.AnnotationDependencies]; h == "" || h == hashBefore {
				return false, nil
			}
		}
		return true, nil
	})

	// Deleting it holds the FleetSet; the works keep their copy.
	if err := k8sClient.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Degraded DependencyMissing naming db-conf", func() (bool, error) {
		c := condition(getFleetSet(t, "render", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonDependencyMissing && strings.Contains(c.Message, "ConfigMap db-conf, referenced by spec.template (volume conf)"), nil
	})
	// A scale-up is held too: nothing is written while the hold lasts.
	updateFleetSet(t, "render", "db", func(cur *fleetv1.FleetSet) {
		cur.Spec.Replicas = 12
	})
	time.Sleep(2 * time.Second)
	for c, w := range works(t, "render", "db") {
		if !hasManifest(w, "ConfigMap", "db-conf") {
			t.Errorf("work in %s lost db-conf while it is missing on the hub", c)
		}
	}
	if got := delivered(t, "render", "db"); got["db-east"].Replicas+got["db-west"].Replicas != 9 {
		t.Errorf("delivered replicas %d+%d while held; want the 9 from before", got["db-east"].Replicas, got["db-west"].Replicas)
	}
	if !hasEvent(t, "render", "db", fleetv1.ReasonDependencyMissing) {
		t.Errorf("no %s event", fleetv1.ReasonDependencyMissing)
	}

	// Dropping the reference releases the hold: the ConfigMap leaves the works.
	updateFleetSet(t, "render", "db", func(cur *fleetv1.FleetSet) {
		cur.Spec.Template.Spec.Volumes = nil
	})
	eventually(t, 20*time.Second, "12 replicas delivered without db-conf", func() (bool, error) {
		got := delivered(t, "render", "db")
		for _, w := range works(t, "render", "db") {
			if hasManifest(w, "ConfigMap", "db-conf") {
				return false, nil
			}
		}
		return got["db-east"].Replicas+got["db-west"].Replicas == 12, nil
	})

	// A patch that does not apply is InvalidSpec naming it.
	updateFleetSet(t, "render", "db", func(cur *fleetv1.FleetSet) {
		cur.Spec.Topology.Subsets[1].Patch = &runtime.RawExtension{Raw: []byte(`{"spec":{"containerz":[]}}`)}
	})
	eventually(t, 20*time.Second, "Degraded InvalidSpec naming subsets[1].patch", func() (bool, error) {
		c := condition(getFleetSet(t, "render", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonInvalidSpec && strings.Contains(c.Message, "spec.topology.subsets[1].patch"), nil
	})
}
