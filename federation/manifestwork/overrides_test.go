package manifestwork

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestRewriteImage(t *testing.T) {
	rules := []fleetv1.ImageRegistryRewrite{
		{From: "docker.io/library/redis", To: "mirror.example/redis-pinned"},
		{From: "docker.io", To: "mirror.example/hub"},
		{From: "registry.k8s.io/", To: "mirror.example/k8s/"},
	}
	for _, tc := range []struct{ in, want string }{
		{"nginx:1.27", "mirror.example/hub/library/nginx:1.27"},
		{"nginx", "mirror.example/hub/library/nginx"},
		{"bitnami/postgresql@sha256:0123456789012345678901234567890123456789012345678901234567890123", "mirror.example/hub/bitnami/postgresql@sha256:0123456789012345678901234567890123456789012345678901234567890123"},
		{"redis:7", "mirror.example/redis-pinned:7"},
		{"registry.k8s.io/pause:3.10", "mirror.example/k8s/pause:3.10"},
		{"quay.io/prometheus/prometheus:v3", "quay.io/prometheus/prometheus:v3"}, // no rule
		{"docker.io.example.com/app:1", "docker.io.example.com/app:1"},           // whole components only
		{"registry.k8s.io.evil/pause:1", "registry.k8s.io.evil/pause:1"},         // whole components only
	} {
		got, err := RewriteImage(tc.in, rules)
		if err != nil || got != tc.want {
			t.Errorf("RewriteImage(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := RewriteImage("nginx:bad tag!", rules); err == nil {
		t.Error("RewriteImage(invalid reference) = nil error")
	}
}

func overrideFleet() *fleetv1.FleetSet {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	fs.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "db", Image: "postgres:17", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		{Name: "exporter", Image: "quay.io/prometheuscommunity/postgres-exporter:v0.15"},
	}
	fs.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "db", Operator: corev1.TolerationOpExists}}
	fs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec:       corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
	return fs
}

// TestSubsetTemplatePrecedence checks the order overrides.go documents:
// the template, then the first-class overrides, then the patch; and that
// StatefulSet puts fleetset's own fields over all of them.
func TestSubsetTemplatePrecedence(t *testing.T) {
	fs := overrideFleet()
	s := &fleetv1.Subset{
		Name:                  "east",
		ImageRegistryRewrites: []fleetv1.ImageRegistryRewrite{{From: "docker.io", To: "mirror.east/hub"}},
		ContainerResources:    []fleetv1.ContainerResources{{Name: "db", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
		Tolerations:           []corev1.Toleration{{Key: "east-only", Operator: corev1.TolerationOpExists}},
		StorageClassNames:     []fleetv1.ClaimStorageClass{{Claim: "data", StorageClassName: "fast"}},
		// The patch wins over containerResources for memory, adds a label
		// and tries to take schedulerName and fleetset's labels.
		Patch: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"tier":"gold","fleetset.io/subset":"west"}},
			"spec":{"schedulerName":"default-scheduler","priorityClassName":"high",
			"containers":[{"name":"db","resources":{"requests":{"memory":"8Gi"}}}]}}`)},
	}
	tmpl, claims, err := SubsetTemplate(fs, s, "spec.topology.subsets[0]")
	if err != nil {
		t.Fatal(err)
	}
	db := tmpl.Spec.Containers[0]
	if db.Image != "mirror.east/hub/library/postgres:17" || tmpl.Spec.Containers[1].Image != "quay.io/prometheuscommunity/postgres-exporter:v0.15" {
		t.Errorf("images = %q, %q", db.Image, tmpl.Spec.Containers[1].Image)
	}
	if got := db.Resources.Requests; got.Cpu().String() != "4" || got.Memory().String() != "8Gi" {
		t.Errorf("db requests = %v; want cpu 4 (containerResources), memory 8Gi (patch)", got)
	}
	if len(tmpl.Spec.Tolerations) != 2 || tmpl.Spec.Tolerations[1].Key != "east-only" {
		t.Errorf("tolerations = %v; want the template's then the subset's", tmpl.Spec.Tolerations)
	}
	if tmpl.Spec.PriorityClassName != "high" || tmpl.Labels["tier"] != "gold" {
		t.Errorf("patch not applied: priorityClassName %q, labels %v", tmpl.Spec.PriorityClassName, tmpl.Labels)
	}
	if got := ptr.Deref(claims[0].Spec.StorageClassName, ""); got != "fast" {
		t.Errorf("claim data storageClassName = %q, want fast", got)
	}
	if fs.Spec.Template.Spec.Containers[0].Image != "postgres:17" || fs.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != nil {
		t.Error("SubsetTemplate modified the FleetSet")
	}

	sp := Subset{Name: "east", Cluster: "east", Replicas: 2, BlockSize: 1000, Template: tmpl, Claims: claims}
	sts, err := StatefulSet(fs, sp)
	if err != nil {
		t.Fatal(err)
	}
	if sts.Spec.Template.Spec.SchedulerName != fleetv1.SchedulerName || sts.Spec.Template.Labels[fleetv1.LabelSubset] != "east" {
		t.Errorf("fleetset's fields lost to the patch: schedulerName %q, subset label %q", sts.Spec.Template.Spec.SchedulerName, sts.Spec.Template.Labels[fleetv1.LabelSubset])
	}
	if got := ptr.Deref(sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName, ""); got != "fast" {
		t.Errorf("StatefulSet claim storageClassName = %q, want fast", got)
	}
	spl := SubsetPlacement(fs, sp)
	if diff := cmp.Diff([]fleetv1.ClaimStorage{{Name: "data", Storage: resource.MustParse("1Gi")}}, spl.Spec.ClaimStorage); diff != "" {
		t.Errorf("SubsetPlacement claimStorage (-want +got):\n%s", diff)
	}
}

func TestSubsetTemplateErrors(t *testing.T) {
	fs := overrideFleet()
	for _, tc := range []struct {
		s    fleetv1.Subset
		want string
	}{
		{fleetv1.Subset{ContainerResources: []fleetv1.ContainerResources{{Name: "nope"}}},
			`spec.topology.subsets[1].containerResources[0].name: no container or init container "nope"`},
		{fleetv1.Subset{Patch: &runtime.RawExtension{Raw: []byte(`{"spec":{"containerz":[]}}`)}},
			`spec.topology.subsets[1].patch: the patched pod template has fields a pod template does not`},
		{fleetv1.Subset{Patch: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"db"}}`)}},
			`spec.topology.subsets[1].patch`},
		{fleetv1.Subset{ImageRegistryRewrites: []fleetv1.ImageRegistryRewrite{{From: "docker.io", To: "Bad Registry"}}},
			`spec.topology.subsets[1].imageRegistryRewrites: container db`},
	} {
		_, _, err := SubsetTemplate(fs, &tc.s, "spec.topology.subsets[1]")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SubsetTemplate(%+v) error = %v, want one containing %q", tc.s, err, tc.want)
		}
	}
}

func TestReferences(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}},
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-tls", Optional: ptr.To(true)}}},
			{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-tls"}}},
			}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}},
		Containers: []corev1.Container{{Name: "db", Env: []corev1.EnvVar{
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-pw"}, Key: "pw", Optional: ptr.To(true)}}},
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}, Key: "mode"}}},
			{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		}}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
	}}
	want := []DependencyRef{
		{Kind: KindConfigMap, Name: "db-conf", Where: "volume conf"},
		{Kind: KindConfigMap, Name: "extra", Where: "volume all"},
		{Kind: KindSecret, Name: "db-pw", Optional: true, Where: "container db env PW"},
		// optional in one place, required in another: required.
		{Kind: KindSecret, Name: "db-tls", Where: "volume tls"},
		{Kind: KindSecret, Name: "init-env", Where: "container init envFrom"},
		{Kind: KindSecret, Name: "pull", Where: "imagePullSecrets"},
	}
	if diff := cmp.Diff(want, References(tmpl)); diff != "" {
		t.Errorf("References (-want +got):\n%s", diff)
	}
}

// TestDependenciesDelivered checks that a subset's dependencies go into its
// cluster's work once, with fleetset's labels and not the hub object's
// metadata, and that their hash follows their content only.
func TestDependenciesDelivered(t *testing.T) {
	fs := overrideFleet()
	fs.UID = "uid-1"
	hubCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db-conf", Namespace: fs.Namespace, ResourceVersion: "7",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Data: map[string]string{"mode": "fast"}}
	hubSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-pw", Namespace: fs.Namespace}, Data: map[string][]byte{"pw": []byte("s3cret")}, Type: corev1.SecretTypeOpaque}
	var deps []runtime.Object
	for _, o := range []runtime.Object{hubCM, hubSecret} {
		d, err := Dependency(fs, o)
		if err != nil {
			t.Fatal(err)
		}
		deps = append(deps, d)
	}
	cm := deps[0].(*corev1.ConfigMap)
	if cm.ResourceVersion != "" || cm.Annotations != nil || cm.Labels["team"] != "" || cm.Labels[fleetv1.LabelOwnerUID] != "uid-1" || cm.Data["mode"] != "fast" {
		t.Errorf("delivered ConfigMap = %+v", cm)
	}
	h1, _ := DependenciesHash(deps)
	hubCM.ResourceVersion, hubCM.Labels = "8", nil // metadata only: same hash
	d, _ := Dependency(fs, hubCM)
	if h2, _ := DependenciesHash([]runtime.Object{d, deps[1]}); h2 != h1 {
		t.Errorf("hash changed with metadata only: %s → %s", h1, h2)
	}
	hubCM.Data["mode"] = "safe"
	d, _ = Dependency(fs, hubCM)
	if h3, _ := DependenciesHash([]runtime.Object{d, deps[1]}); h3 == h1 || h3 == "" {
		t.Errorf("hash did not change with the data: %s → %s", h1, h3)
	}

	sp := Subset{Name: "a", Cluster: "east", Replicas: 1, BlockSize: 1000, Dependencies: deps, DependenciesHash: h1}
	sts, err := StatefulSet(fs, sp)
	if err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Annotations[fleetv1.AnnotationDependencies]; got != h1 {
		t.Errorf("pod template annotation %s = %q, want the dependencies' hash %q (an edit must replace the pods)", fleetv1.AnnotationDependencies, got, h1)
	}
	sp.Dependencies, sp.DependenciesHash = nil, ""
	if sts, _ = StatefulSet(fs, sp); sts.Spec.Template.Annotations != nil {
		t.Errorf("pod template annotations %v without dependencies, want none", sts.Spec.Template.Annotations)
	}
	subsets := []Subset{
		{Name: "a", Cluster: "east", Replicas: 1, BlockSize: 1000, Dependencies: deps},
		{Name: "b", Cluster: "east", Replicas: 1, OrdinalStart: 1000, BlockSize: 1000, Dependencies: deps},
		{Name: "c", Cluster: "west", Replicas: 1, OrdinalStart: 2000, BlockSize: 1000},
	}
	works, err := Works(fs, subsets, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(i int, kind string) (n int) {
		for _, m := range works[i].Spec.Workload.Manifests {
			if strings.Contains(string(m.Raw), `"kind":"`+kind+`"`) && strings.Contains(string(m.Raw), `"fleetset.io/set"`) &&
				(strings.Contains(string(m.Raw), `"db-conf"`) || strings.Contains(string(m.Raw), `"db-pw"`)) {
				n++
			}
		}
		return n
	}
	if count(0, "ConfigMap") != 1 || count(0, "Secret") != 1 || count(1, "ConfigMap") != 0 || count(1, "Secret") != 0 {
		t.Errorf("east carries %d ConfigMaps and %d Secrets, west %d and %d; want 1, 1, 0, 0",
			count(0, "ConfigMap"), count(0, "Secret"), count(1, "ConfigMap"), count(1, "Secret"))
	}
	var configured []string
	for _, c := range works[0].Spec.ManifestConfigs {
		configured = append(configured, c.ResourceIdentifier.Resource+"/"+c.ResourceIdentifier.Name)
	}
	for _, want := range []string{"configmaps/db-conf", "secrets/db-pw"} {
		if !strings.Contains(strings.Join(configured, " "), want) {
			t.Errorf("east's manifest configs %v lack %s", configured, want)
		}
	}
}
