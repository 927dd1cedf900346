package kindagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var (
	addonTemplates   = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "addontemplates"}
	managedAddons    = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "managedclusteraddons"}
	clusterMgmtAddon = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "clustermanagementaddons"}
)

// target is the Deployment of a process; operator: its pods are only
// deleted (the klusterlet operator owns it).
type target struct {
	ns, name string
	operator bool
}

// findTarget is the Deployment behind proc: fleetset-hub,
// fleetset-scheduler, registration-agent, work-agent, klusterlet, or
// NAMESPACE/DEPLOYMENT.
func findTarget(ctx context.Context, k kubernetes.Interface, cluster, proc string) (target, error) {
	switch proc {
	case "fleetset-hub", "fleetset-scheduler":
		return target{ns: FleetsetNS, name: proc}, nil
	case "registration-agent", "work-agent":
		d, err := AgentDeployment(ctx, k, cluster, proc)
		return target{ns: AgentNS, name: d, operator: true}, err
	case "klusterlet":
		return target{ns: OperatorNS, name: Operator}, nil
	}
	if ns, name, ok := strings.Cut(proc, "/"); ok && ns != "" && name != "" {
		return target{ns: ns, name: name}, nil
	}
	return target{}, fmt.Errorf("unknown process %s (fleetset-hub, fleetset-scheduler, registration-agent, work-agent, klusterlet, NAMESPACE/DEPLOYMENT)", proc)
}

// Restart restarts proc with args appended to its container's args (none:
// the original args and image back); with version, fleetset-hub or
// fleetset-scheduler is first rebuilt as an image with that version string.
// It returns once the Deployment's pods are all new and Ready.
func (a *Agent) Restart(ctx context.Context, cluster, proc, version string, args ...string) error {
	cs, err := a.Clients(cluster)
	if err != nil {
		return err
	}
	k := cs.Kube
	t, err := findTarget(ctx, k, cluster, proc)
	if err != nil {
		return err
	}
	d, err := deployment(ctx, k, t.ns, t.name)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%s: no Deployment %s/%s", cluster, t.ns, t.name)
	}
	if replicas(d) == 0 {
		if cluster == Hub && proc == "fleetset-hub" && d.Annotations[annStopped] != "" && len(args) == 0 && version == "" {
			// Stopped by Stop: restarted as it was is started.
			return a.Start(ctx, cluster, proc)
		}
		return fmt.Errorf("%s: %s/%s is scaled to 0 (stopped): start it first", cluster, t.ns, t.name)
	}
	if t.operator && (len(args) > 0 || version != "") {
		return fmt.Errorf("%s/%s is managed by the klusterlet operator: it restarts only as it is (no args, no rebuild)", cluster, proc)
	}
	image := ""
	if version != "" {
		if a.Rebuild == nil {
			return fmt.Errorf("rebuilding %s: no Rebuild configured", proc)
		}
		if image, err = a.Rebuild(ctx, proc, version, cluster); err != nil {
			return fmt.Errorf("%w; %s/%s left as it was", err, cluster, proc)
		}
	}
	sel, err := selector(d)
	if err != nil {
		return fmt.Errorf("%s: %w", cluster, err)
	}
	old, err := podUIDs(ctx, k, t.ns, sel)
	if err != nil {
		return err
	}
	before := specOf(d)
	deletePods := func() error { // as kubectl delete pod -l does: one by one
		ps, err := pods(ctx, k, t.ns, sel)
		for i := 0; err == nil && i < len(ps); i++ {
			if err = k.CoreV1().Pods(t.ns).Delete(ctx, ps[i].Name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
				err = nil
			}
		}
		return err
	}
	switch {
	case t.operator:
		err = deletePods()
	case ownedByWork(d):
		// Applied by the work agent, which would revert a patch: through the add-on.
		err = a.restartAddon(ctx, cluster, t, image, args, before, deletePods)
	default:
		err = a.restartPlain(ctx, k, cluster, d, image, args)
	}
	if err != nil {
		return err
	}
	if d, err = k.AppsV1().Deployments(t.ns).Get(ctx, t.name, metav1.GetOptions{}); err != nil {
		return err
	}
	want := specOf(d)
	if err := a.waitNew(ctx, k, cluster, t.ns, t.name, sel, old, want); err != nil {
		return err
	}
	a.logf("%s/%s restarted (%s/%s: %s)", cluster, proc, t.ns, t.name, want)
	return nil
}

// specOf is container 0 of d.
func specOf(d *appsv1.Deployment) Spec {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return Spec{}
	}
	c := d.Spec.Template.Spec.Containers[0]
	return Spec{Image: c.Image, Args: c.Args}
}

// ownedByWork: OCM's work agent applied d (an add-on's or another
// ManifestWork's) and reverts changes to it.
func ownedByWork(d *appsv1.Deployment) bool {
	return slices.ContainsFunc(d.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "AppliedManifestWork" })
}

// restartPlain patches container 0 of a Deployment nobody reconciles;
// without image and args it restores what the first such patch recorded.
func (a *Agent) restartPlain(ctx context.Context, k kubernetes.Interface, cluster string, d *appsv1.Deployment, image string, args []string) error {
	cur := specOf(d)
	orig := Spec{Image: d.Annotations[annOrigImage]}
	var err error
	if orig.Args, err = DecodeArgs(d.Annotations[annOrigArgs]); err != nil {
		return err
	}
	patchAnn := func(ann map[string]*string) error {
		p, err := AnnotationsMergePatch(ann)
		if err != nil {
			return err
		}
		_, err = k.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, p, metav1.PatchOptions{})
		return err
	}
	if orig.Image == "" {
		orig = cur
		if image != "" || len(args) > 0 {
			if err := patchAnn(map[string]*string{annOrigImage: &orig.Image, annOrigArgs: ptrTo(EncodeArgs(orig.Args))}); err != nil {
				return err
			}
		}
	}
	if image == "" {
		image = orig.Image
	}
	next := Spec{Image: image, Args: appendArgs(orig.Args, args...)}
	if next.Equal(cur) {
		// kubectl rollout restart: a new pod template annotation.
		p, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{"kubectl.kubernetes.io/restartedAt": time.Now().Format(time.RFC3339)}}}}})
		_, err = k.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, p, metav1.PatchOptions{})
	} else {
		var p []byte
		if p, err = ContainerPatch("", next.Image, next.Args); err == nil {
			_, err = k.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, p, metav1.PatchOptions{})
		}
	}
	if err != nil {
		return err
	}
	if image == orig.Image && len(args) == 0 {
		if err := patchAnn(map[string]*string{annOrigImage: nil, annOrigArgs: nil}); err != nil {
			return err
		}
	}
	a.logf("%s: %s/%s: %s", cluster, d.Namespace, d.Name, next)
	return nil
}

// restartAddon puts the member's fleetset add-on on a copy of its
// AddOnTemplate with image and the extra args, or, without either, back
// on its own configs; it waits for the work agent to apply the rendering.
// Nothing to change or restore: the pods are deleted.
func (a *Agent) restartAddon(ctx context.Context, cluster string, t target, image string, args []string, before Spec, deletePods func() error) error {
	hub, err := a.Clients(Hub)
	if err != nil {
		return err
	}
	tmpl, err := a.pointAddon(ctx, hub.Dynamic, cluster, t, image, args)
	if err != nil {
		return err
	}
	k, err := a.kube(cluster)
	if err != nil {
		return err
	}
	copyName := Addon + "-e2e-" + cluster
	if tmpl != "" {
		u, err := hub.Dynamic.Resource(addonTemplates).Get(ctx, tmpl, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, want, err := TemplateDeployment(u, t.ns, t.name)
		if err != nil {
			return err
		}
		if err := a.waitTemplate(ctx, k, cluster, t.ns, t.name, want); err != nil {
			return err
		}
		if tmpl != copyName {
			err := hub.Dynamic.Resource(addonTemplates).Delete(ctx, copyName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	d, err := k.AppsV1().Deployments(t.ns).Get(ctx, t.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if specOf(d).Equal(before) {
		return deletePods()
	}
	return nil
}

// pointAddon changes the member's ManagedClusterAddOn and returns the
// AddOnTemplate that is to render t, "" when there was nothing to change.
func (a *Agent) pointAddon(ctx context.Context, hub dynamic.Interface, cluster string, t target, image string, args []string) (string, error) {
	mcas := hub.Resource(managedAddons).Namespace(cluster)
	mca, err := mcas.Get(ctx, Addon, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: %s/%s is applied by a ManifestWork but the hub has no ManagedClusterAddOn %s/%s: %w", cluster, t.ns, t.name, cluster, Addon, err)
	}
	base, err := defaultTemplate(ctx, hub)
	if err != nil {
		return "", err
	}
	orig, recorded := mca.GetAnnotations()[annOrigConfigs]
	recorded = recorded && orig != ""
	patch := func(configs []any, ann map[string]*string) error {
		p, err := AddonMergePatch(configs, ann)
		if err == nil {
			_, err = mcas.Patch(ctx, Addon, types.MergePatchType, p, metav1.PatchOptions{})
		}
		return err
	}
	if image == "" && len(args) == 0 {
		if !recorded {
			return "", nil
		}
		var configs []any
		if err := json.Unmarshal([]byte(orig), &configs); err != nil {
			return "", fmt.Errorf("ManagedClusterAddOn %s/%s: annotation %s: %w", cluster, Addon, annOrigConfigs, err)
		}
		if len(configs) == 0 {
			configs = nil
		}
		if err := patch(configs, map[string]*string{annOrigConfigs: nil}); err != nil {
			return "", err
		}
		a.logf("%s: ManagedClusterAddOn %s/%s back on its own configs (%s)", cluster, cluster, Addon, orig)
		return base, nil
	}
	bt, err := hub.Resource(addonTemplates).Get(ctx, base, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	idx, spec, err := TemplateDeployment(bt, t.ns, t.name)
	if err != nil {
		return "", err
	}
	if image != "" {
		spec.Image = image
	}
	spec.Args = appendArgs(spec.Args, args...)
	copyName := Addon + "-e2e-" + cluster
	cp, err := TemplateCopy(bt, copyName, idx, spec)
	if err != nil {
		return "", err
	}
	if err := apply(ctx, hub.Resource(addonTemplates), cp); err != nil {
		return "", err
	}
	current, _, _ := unstructured.NestedSlice(mca.Object, "spec", "configs")
	var ann map[string]*string
	if !recorded {
		b, err := json.Marshal(current)
		if err != nil {
			return "", err
		}
		if len(current) == 0 {
			b = []byte("[]")
		}
		ann = map[string]*string{annOrigConfigs: ptrTo(string(b))}
	}
	if err := patch(AddonConfigs(current, copyName), ann); err != nil {
		return "", err
	}
	a.logf("%s: ManagedClusterAddOn %s/%s on AddOnTemplate %s: %s", cluster, cluster, Addon, copyName, spec)
	return copyName, nil
}

// defaultTemplate is the fleetset add-on's own AddOnTemplate (the add-on
// manager moves spec.supportedConfigs into status.defaultConfigReferences).
func defaultTemplate(ctx context.Context, hub dynamic.Interface) (string, error) {
	cma, err := hub.Resource(clusterMgmtAddon).Get(ctx, Addon, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	refs, _, _ := unstructured.NestedSlice(cma.Object, "status", "defaultConfigReferences")
	for _, r := range refs {
		if m := asMap(r); m["resource"] == "addontemplates" {
			if n, _, _ := unstructured.NestedString(m, "desiredConfig", "name"); n != "" {
				return n, nil
			}
		}
	}
	sup, _, _ := unstructured.NestedSlice(cma.Object, "spec", "supportedConfigs")
	for _, r := range sup {
		if m := asMap(r); m["resource"] == "addontemplates" {
			if n, _, _ := unstructured.NestedString(m, "defaultConfig", "name"); n != "" {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("ClusterManagementAddOn %s has no default AddOnTemplate", Addon)
}

// apply creates u, or replaces the spec of the one that exists.
func apply(ctx context.Context, r dynamic.ResourceInterface, u *unstructured.Unstructured) error {
	_, err := r.Create(ctx, u, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := r.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Object["spec"] = u.Object["spec"]
	_, err = r.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// Rebuilder is the default Rebuild: make's image archive of fleetset-<b>
// (static binary on scratch, no Docker daemon) with the version string,
// loaded into the cluster's nodes by e2e/kind/lib.sh's load_archive.
func Rebuilder(repo, dir string) func(ctx context.Context, proc, version, cluster string) (string, error) {
	return func(ctx context.Context, proc, version, cluster string) (string, error) {
		b, ok := strings.CutPrefix(proc, "fleetset-")
		if !ok || (b != "hub" && b != "scheduler") {
			return "", fmt.Errorf("rebuild: %s is not built from this repository", proc)
		}
		tag := ImageTag(version)
		out := filepath.Join(dir, "work", "rebuild-"+tag)
		_ = os.RemoveAll(out)
		if err := os.MkdirAll(out, 0o755); err != nil {
			return "", err
		}
		defer os.RemoveAll(out)
		archive := filepath.Join(out, "fleetset-"+b+".tar")
		mk := exec.CommandContext(ctx, "make", "-s", "-C", repo, "IMAGES_DIR="+out, "IMAGE_TAG="+tag, "VERSION="+version, archive)
		if o, err := mk.CombinedOutput(); err != nil {
			return "", fmt.Errorf("rebuilding %s failed: %v: %s", proc, err, o)
		}
		load := exec.CommandContext(ctx, "bash", "-c", `source "$1" && load_archive "$2" "$3" >/dev/null`, "load",
			filepath.Join(repo, "e2e", "kind", "lib.sh"), cluster, archive)
		load.Env = append(os.Environ(), "KIND_FLEET_DIR="+dir, "REPO_ROOT="+repo)
		if o, err := load.CombinedOutput(); err != nil {
			return "", fmt.Errorf("loading %s into fleetset-%s: %v: %s", archive, cluster, err, o)
		}
		return "fleetset-" + b + ":" + tag, nil
	}
}

// ImageTag is version as an image tag: other characters than
// [A-Za-z0-9_.-] become '-', at most 128.
func ImageTag(version string) string {
	t := []byte(version)
	for i, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			t[i] = '-'
		}
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return string(t)
}
