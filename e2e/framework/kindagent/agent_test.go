package kindagent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func deploy(ns, name string, replicas int32, image string, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Args: args}}}},
		},
		Status: appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas},
	}
}

func readyPod(ns, name, uid string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: labels},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func testAgent(clients map[string]Clients) *Agent {
	a := New("/nonexistent")
	a.Wait, a.Poll = 5*time.Second, 5*time.Millisecond
	a.Clients = func(c string) (Clients, error) {
		cl, ok := clients[c]
		if !ok {
			return Clients{}, fmt.Errorf("no cluster %s", c)
		}
		return cl, nil
	}
	return a
}

func get(t *testing.T, k kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := k.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStopStart: stop scales the operator and the agent to 0, keeping their
// replicas; the operator comes back only with the last stopped agent.
func TestStopStart(t *testing.T) {
	ctx := context.Background()
	k := fake.NewClientset(deploy(OperatorNS, Operator, 1, "op"),
		deploy(AgentNS, "klusterlet-registration-agent", 2, "reg"), deploy(AgentNS, "klusterlet-work-agent", 1, "work"))
	a := testAgent(map[string]Clients{"east": {Kube: k}})
	check := func(ns, name string, replicas int32, stopped string) {
		t.Helper()
		d := get(t, k, ns, name)
		if *d.Spec.Replicas != replicas || d.Annotations[annStopped] != stopped {
			t.Errorf("%s/%s: replicas %d, %s=%q; want %d, %q", ns, name, *d.Spec.Replicas, annStopped, d.Annotations[annStopped], replicas, stopped)
		}
	}
	if err := a.Stop(ctx, "east", "registration-agent"); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(ctx, "east", "work-agent"); err != nil {
		t.Fatal(err)
	}
	check(OperatorNS, Operator, 0, "1")
	check(AgentNS, "klusterlet-registration-agent", 0, "2")
	check(AgentNS, "klusterlet-work-agent", 0, "1")
	if err := a.Start(ctx, "east", "registration-agent"); err != nil {
		t.Fatal(err)
	}
	check(AgentNS, "klusterlet-registration-agent", 2, "")
	check(OperatorNS, Operator, 0, "1") // work-agent still stopped
	if err := a.Start(ctx, "east", "work-agent"); err != nil {
		t.Fatal(err)
	}
	check(AgentNS, "klusterlet-work-agent", 1, "")
	check(OperatorNS, Operator, 1, "")
	if err := a.Stop(ctx, Hub, "registration-agent"); err == nil {
		t.Error("stop on the hub: no error")
	}
	if err := a.Stop(ctx, "east", "kubelet"); err == nil {
		t.Error("stop of an unknown agent: no error")
	}
}

// controller plays the Deployment controller (and, given hub, OCM's work
// agent rendering the member's add-on template): a Deployment whose pod
// template changed gets new Ready pods in place of the old ones.
func controller(t *testing.T, k *fake.Clientset, hub *dynamicfake.FakeDynamicClient, cluster, ns, name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seen, n := "", 0
		for ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
			d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if hub != nil {
				if want, ok := rendered(ctx, hub, cluster, ns, name); ok {
					// OCM's add-on manager fills the template's variables.
					for i, a := range want.Args {
						want.Args[i] = strings.ReplaceAll(a, "{{CLUSTER_NAME}}", cluster)
					}
					if !specOf(d).Equal(want) {
						d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Spec.Containers[0].Args = want.Image, want.Args
						if d, err = k.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
							continue
						}
					}
				}
			}
			tmpl, _ := json.Marshal(d.Spec.Template)
			ps, _ := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if string(tmpl) == seen && len(ps.Items) > 0 {
				continue
			}
			seen = string(tmpl)
			for _, p := range ps.Items {
				_ = k.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
			}
			n++
			_, _ = k.CoreV1().Pods(ns).Create(ctx, readyPod(ns, fmt.Sprintf("%s-%d", name, n), fmt.Sprintf("uid-%d", n), d.Spec.Selector.MatchLabels), metav1.CreateOptions{})
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// rendered is the container the member's add-on template gives Deployment
// ns/name.
func rendered(ctx context.Context, hub *dynamicfake.FakeDynamicClient, cluster, ns, name string) (Spec, bool) {
	mca, err := hub.Resource(managedAddons).Namespace(cluster).Get(ctx, Addon, metav1.GetOptions{})
	if err != nil {
		return Spec{}, false
	}
	tmpl := "fleetset-template"
	configs, _, _ := unstructured.NestedSlice(mca.Object, "spec", "configs")
	for _, c := range configs {
		if m := asMap(c); m["resource"] == "addontemplates" {
			tmpl, _ = m["name"].(string)
		}
	}
	u, err := hub.Resource(addonTemplates).Get(ctx, tmpl, metav1.GetOptions{})
	if err != nil {
		return Spec{}, false
	}
	_, s, err := TemplateDeployment(u, ns, name)
	return s, err == nil
}

// TestRestartPlain: fleetset-hub's Deployment is patched with a rebuilt
// image and the extra args (quotes and backslashes kept as they are), the
// originals recorded; a restart without args puts them back.
func TestRestartPlain(t *testing.T) {
	ctx := context.Background()
	d := deploy(FleetsetNS, "fleetset-hub", 1, "fleetset-hub:dev", "--leader-elect")
	k := fake.NewClientset(d, readyPod(FleetsetNS, "hub-0", "old", d.Spec.Selector.MatchLabels))
	a := testAgent(map[string]Clients{Hub: {Kube: k}})
	var rebuilt []string
	a.Rebuild = func(_ context.Context, proc, version, cluster string) (string, error) {
		rebuilt = append(rebuilt, proc+" "+version+" "+cluster)
		return "fleetset-hub:" + ImageTag(version), nil
	}
	defer controller(t, k, nil, Hub, FleetsetNS, "fleetset-hub")()

	odd := `--note="a \"b\" c\d"`
	if err := a.Restart(ctx, Hub, "fleetset-hub", "v2+x", "--lease-duration=20s", odd); err != nil {
		t.Fatal(err)
	}
	got := get(t, k, FleetsetNS, "fleetset-hub")
	if s, want := specOf(got), (Spec{Image: "fleetset-hub:v2-x", Args: []string{"--leader-elect", "--lease-duration=20s", odd}}); !s.Equal(want) {
		t.Errorf("after the restart: %s, want %s", s, want)
	}
	if got.Annotations[annOrigImage] != "fleetset-hub:dev" || got.Annotations[annOrigArgs] != `["--leader-elect"]` {
		t.Errorf("recorded %q %q, want the original image and args", got.Annotations[annOrigImage], got.Annotations[annOrigArgs])
	}
	if !reflect.DeepEqual(rebuilt, []string{"fleetset-hub v2+x hub"}) {
		t.Errorf("rebuilt %v", rebuilt)
	}
	// A second restart with args starts from the originals, not from the first.
	if err := a.Restart(ctx, Hub, "fleetset-hub", "", "--v=2"); err != nil {
		t.Fatal(err)
	}
	if s, want := specOf(get(t, k, FleetsetNS, "fleetset-hub")), (Spec{Image: "fleetset-hub:dev", Args: []string{"--leader-elect", "--v=2"}}); !s.Equal(want) {
		t.Errorf("after the second restart: %s, want %s", s, want)
	}
	if err := a.Restart(ctx, Hub, "fleetset-hub", ""); err != nil {
		t.Fatal(err)
	}
	got = get(t, k, FleetsetNS, "fleetset-hub")
	if s, want := specOf(got), (Spec{Image: "fleetset-hub:dev", Args: []string{"--leader-elect"}}); !s.Equal(want) {
		t.Errorf("restored: %s, want %s", s, want)
	}
	if _, ok := got.Annotations[annOrigImage]; ok {
		t.Errorf("restored, still annotated: %v", got.Annotations)
	}
	// Nothing to change: a rollout restart (a new template annotation).
	if err := a.Restart(ctx, Hub, "fleetset-hub", ""); err != nil {
		t.Fatal(err)
	}
	if get(t, k, FleetsetNS, "fleetset-hub").Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Error("a plain restart did not roll the Deployment")
	}
}

// TestRestartRefused: what restart cannot do fails before changing anything.
func TestRestartRefused(t *testing.T) {
	ctx := context.Background()
	stopped := deploy(FleetsetNS, "fleetset-hub", 0, "fleetset-hub:dev")
	k := fake.NewClientset(stopped, deploy(AgentNS, "klusterlet-work-agent", 1, "work"))
	a := testAgent(map[string]Clients{Hub: {Kube: k}, "east": {Kube: k}})
	for _, c := range []struct{ cluster, proc, version string }{
		{Hub, "fleetset-hub", ""},               // scaled to 0
		{"east", "work-agent", "v2"},            // operator-managed, rebuilt
		{"east", "kubelet", ""},                 // unknown
		{"east", "fleetset-system/nothere", ""}, // no such Deployment
	} {
		if err := a.Restart(ctx, c.cluster, c.proc, c.version); err == nil {
			t.Errorf("restart %s/%s %q: no error", c.cluster, c.proc, c.version)
		}
	}
}

var addonGVRs = map[schema.GroupVersionResource]string{
	addonTemplates: "AddOnTemplateList", managedAddons: "ManagedClusterAddOnList", clusterMgmtAddon: "ClusterManagementAddOnList",
}

func addonObj(kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestRestartAddon: fleetset-scheduler, applied by the work agent, is
// restarted through a copy of the add-on's template that the member's
// ManagedClusterAddOn points at (its AddOnDeploymentConfig kept); without
// args the add-on is put back on its own configs and the copy deleted.
func TestRestartAddon(t *testing.T) {
	ctx := context.Background()
	d := deploy(FleetsetNS, "fleetset-scheduler", 1, "fleetset-scheduler:dev", "--config=/etc/s.yaml")
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: "w", UID: "u"}}
	member := fake.NewClientset(d, readyPod(FleetsetNS, "s-0", "old", d.Spec.Selector.MatchLabels))
	sched := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": FleetsetNS, "name": "fleetset-scheduler"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "c", "image": "fleetset-scheduler:dev", "args": []any{"--config=/etc/s.yaml", "--member-cluster-name={{CLUSTER_NAME}}"}}}}}}}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"namespace": FleetsetNS, "name": "fleetset-scheduler"}}
	adc := map[string]any{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs", "namespace": FleetsetNS, "name": "fleetset-kind"}
	hub := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), addonGVRs,
		addonObj("ClusterManagementAddOn", "", Addon, map[string]any{"status": map[string]any{"defaultConfigReferences": []any{
			map[string]any{"resource": "addontemplates", "desiredConfig": map[string]any{"name": "fleetset-template"}}}}}),
		addonObj("AddOnTemplate", "", "fleetset-template", map[string]any{"spec": map[string]any{"addonName": Addon,
			"agentSpec": map[string]any{"workload": map[string]any{"manifests": []any{sa, sched}}}}}),
		addonObj("ManagedClusterAddOn", "east", Addon, map[string]any{"spec": map[string]any{"configs": []any{adc}}}))
	a := testAgent(map[string]Clients{Hub: {Dynamic: hub}, "east": {Kube: member}})
	defer controller(t, member, hub, "east", FleetsetNS, "fleetset-scheduler")()

	if err := a.Restart(ctx, "east", "fleetset-scheduler", "", "--v=2"); err != nil {
		t.Fatal(err)
	}
	if s, want := specOf(get(t, member, FleetsetNS, "fleetset-scheduler")), (Spec{Image: "fleetset-scheduler:dev", Args: []string{"--config=/etc/s.yaml", "--member-cluster-name=east", "--v=2"}}); !s.Equal(want) {
		t.Errorf("after the restart: %s, want %s", s, want)
	}
	mca, err := hub.Resource(managedAddons).Namespace("east").Get(ctx, Addon, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configs, _, _ := unstructured.NestedSlice(mca.Object, "spec", "configs")
	want := []any{map[string]any{"group": "addon.open-cluster-management.io", "resource": "addontemplates", "name": "fleetset-e2e-east"}, adc}
	if !reflect.DeepEqual(configs, want) {
		t.Errorf("ManagedClusterAddOn configs %v, want %v", configs, want)
	}
	if orig := mca.GetAnnotations()[annOrigConfigs]; orig != `[{"group":"addon.open-cluster-management.io","name":"fleetset-kind","namespace":"fleetset-system","resource":"addondeploymentconfigs"}]` {
		t.Errorf("recorded configs %s", orig)
	}
	cp, err := hub.Resource(addonTemplates).Get(ctx, "fleetset-e2e-east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ms, _, _ := unstructured.NestedSlice(cp.Object, "spec", "agentSpec", "workload", "manifests"); len(ms) != 2 || !reflect.DeepEqual(ms[0], sa) {
		t.Errorf("the copy's manifests: %v", ms)
	}

	if err := a.Restart(ctx, "east", "fleetset-scheduler", ""); err != nil {
		t.Fatal(err)
	}
	if s, want := specOf(get(t, member, FleetsetNS, "fleetset-scheduler")), (Spec{Image: "fleetset-scheduler:dev", Args: []string{"--config=/etc/s.yaml", "--member-cluster-name=east"}}); !s.Equal(want) {
		t.Errorf("restored: %s, want %s", s, want)
	}
	mca, _ = hub.Resource(managedAddons).Namespace("east").Get(ctx, Addon, metav1.GetOptions{})
	configs, _, _ = unstructured.NestedSlice(mca.Object, "spec", "configs")
	if !reflect.DeepEqual(configs, []any{adc}) || mca.GetAnnotations()[annOrigConfigs] != "" {
		t.Errorf("restored ManagedClusterAddOn: configs %v, annotations %v", configs, mca.GetAnnotations())
	}
	if _, err := hub.Resource(addonTemplates).Get(ctx, "fleetset-e2e-east", metav1.GetOptions{}); err == nil {
		t.Error("the template copy is still there")
	}
}

func TestContainerPatch(t *testing.T) {
	p, err := ContainerPatch("/spec/agentSpec/workload/manifests/1", `img:"x"`, []string{`a\b`, `"q"`})
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(p, &ops); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	want := []map[string]any{
		{"op": "replace", "path": "/spec/agentSpec/workload/manifests/1/spec/template/spec/containers/0/image", "value": `img:"x"`},
		{"op": "add", "path": "/spec/agentSpec/workload/manifests/1/spec/template/spec/containers/0/args", "value": []any{`a\b`, `"q"`}},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("patch %s", p)
	}
	if p, _ := ContainerPatch("", "i", nil); !json.Valid(p) || string(p) != `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"i"},{"op":"add","path":"/spec/template/spec/containers/0/args","value":[]}]` {
		t.Errorf("no args: %s", p)
	}
}

func TestImageTag(t *testing.T) {
	for in, want := range map[string]string{"v1.2.3": "v1.2.3", "e2e-upgrade-ab12": "e2e-upgrade-ab12", "v1+dirty/x y": "v1-dirty-x-y"} {
		if got := ImageTag(in); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ImageTag(string(make([]byte, 200))); len(got) != 128 {
		t.Errorf("a 200-byte version: tag of %d bytes", len(got))
	}
}
