package kindagent

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DeploymentMergePatch sets (or, nil, removes) annotations and, if not
// nil, spec.replicas.
func DeploymentMergePatch(annotations map[string]*string, replicas *int32) ([]byte, error) {
	p := map[string]any{}
	if len(annotations) > 0 {
		p["metadata"] = map[string]any{"annotations": annotations}
	}
	if replicas != nil {
		p["spec"] = map[string]any{"replicas": *replicas}
	}
	return json.Marshal(p)
}

// AnnotationsMergePatch sets (or, nil, removes) annotations.
func AnnotationsMergePatch(annotations map[string]*string) ([]byte, error) {
	return DeploymentMergePatch(annotations, nil)
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// ContainerPatch is the JSON patch setting container 0's image and args
// of the pod template at prefix ("" for a Deployment, or the path of a
// Deployment inside another object).
func ContainerPatch(prefix, image string, args []string) ([]byte, error) {
	c := prefix + "/spec/template/spec/containers/0"
	if args == nil {
		args = []string{}
	}
	return json.Marshal([]jsonPatchOp{{Op: "replace", Path: c + "/image", Value: image}, {Op: "add", Path: c + "/args", Value: args}})
}

// Spec is container 0 of a pod template: what a restart changes.
type Spec struct {
	Image string
	Args  []string
}

func (s Spec) String() string {
	b, _ := json.Marshal(s.args())
	return s.Image + " " + string(b)
}

// Equal compares image and args (nil and empty args alike).
func (s Spec) Equal(o Spec) bool { return s.String() == o.String() }

func (s Spec) args() []string {
	if s.Args == nil {
		return []string{}
	}
	return s.Args
}

// appendArgs returns base with extra appended, in a new slice.
func appendArgs(base []string, extra ...string) []string {
	return append(append([]string{}, base...), extra...)
}

// EncodeArgs is args as the JSON array an annotation keeps.
func EncodeArgs(args []string) string {
	b, _ := json.Marshal(Spec{Args: args}.args())
	return string(b)
}

// DecodeArgs reads EncodeArgs' output ("" is no args).
func DecodeArgs(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("args %q: %w", s, err)
	}
	return out, nil
}

// TemplateDeployment finds the Deployment ns/name among an AddOnTemplate's
// manifests: its index and container 0.
func TemplateDeployment(tmpl *unstructured.Unstructured, ns, name string) (int, Spec, error) {
	manifests, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "agentSpec", "workload", "manifests")
	idx := -1
	for i, m := range manifests {
		u := unstructured.Unstructured{Object: asMap(m)}
		if u.GetKind() == "Deployment" && u.GetNamespace() == ns && u.GetName() == name {
			idx = i
		}
	}
	if idx < 0 {
		return -1, Spec{}, fmt.Errorf("AddOnTemplate %s has no Deployment %s/%s", tmpl.GetName(), ns, name)
	}
	s, err := containerSpec(asMap(manifests[idx]))
	if err != nil {
		return -1, Spec{}, fmt.Errorf("AddOnTemplate %s, Deployment %s/%s: %w", tmpl.GetName(), ns, name, err)
	}
	return idx, s, nil
}

func containerSpec(deploy map[string]any) (Spec, error) {
	cs, _, _ := unstructured.NestedSlice(deploy, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return Spec{}, fmt.Errorf("no container")
	}
	c := asMap(cs[0])
	image, _, _ := unstructured.NestedString(c, "image")
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if image == "" {
		return Spec{}, fmt.Errorf("container 0 has no image")
	}
	return Spec{Image: image, Args: args}, nil
}

// TemplateCopy is a copy of AddOnTemplate base named name, with container
// 0 of its manifest idx set to spec: what a member's add-on is pointed at
// to run other flags or another image.
func TemplateCopy(base *unstructured.Unstructured, name string, idx int, spec Spec) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": base.GetAPIVersion(), "kind": base.GetKind(),
		"metadata": map[string]any{"name": name},
	}}
	specObj, ok, _ := unstructured.NestedMap(base.Object, "spec") // a deep copy
	if !ok {
		return nil, fmt.Errorf("AddOnTemplate %s has no spec", base.GetName())
	}
	out.Object["spec"] = specObj
	manifests, _, _ := unstructured.NestedSlice(out.Object, "spec", "agentSpec", "workload", "manifests")
	if idx < 0 || idx >= len(manifests) {
		return nil, fmt.Errorf("AddOnTemplate %s has no manifest %d", base.GetName(), idx)
	}
	m := asMap(manifests[idx])
	cs, _, _ := unstructured.NestedSlice(m, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return nil, fmt.Errorf("AddOnTemplate %s manifest %d has no container", base.GetName(), idx)
	}
	c := asMap(cs[0])
	c["image"] = spec.Image
	args := make([]any, 0, len(spec.Args))
	for _, a := range spec.Args {
		args = append(args, a)
	}
	c["args"] = args
	cs[0] = c
	if err := unstructured.SetNestedSlice(m, cs, "spec", "template", "spec", "containers"); err != nil {
		return nil, err
	}
	manifests[idx] = m
	if err := unstructured.SetNestedSlice(out.Object, manifests, "spec", "agentSpec", "workload", "manifests"); err != nil {
		return nil, err
	}
	return out, nil
}

// AddonConfigs are a ManagedClusterAddOn's spec.configs pointed at
// AddOnTemplate tmpl: the template first, its other configs (an
// AddOnDeploymentConfig) kept.
func AddonConfigs(current []any, tmpl string) []any {
	out := []any{map[string]any{"group": "addon.open-cluster-management.io", "resource": "addontemplates", "name": tmpl}}
	for _, c := range current {
		m := asMap(c)
		r, _ := m["resource"].(string)
		if r == "" || r == "addontemplates" {
			continue
		}
		kept := map[string]any{"group": m["group"], "resource": r, "name": m["name"]}
		if ns, _ := m["namespace"].(string); ns != "" {
			kept["namespace"] = ns
		}
		out = append(out, kept)
	}
	return out
}

// AddonMergePatch sets a ManagedClusterAddOn's spec.configs (nil: removed)
// and its annotations (nil values: removed).
func AddonMergePatch(configs []any, annotations map[string]*string) ([]byte, error) {
	p := map[string]any{"spec": map[string]any{"configs": configs}}
	if len(annotations) > 0 {
		p["metadata"] = map[string]any{"annotations": annotations}
	}
	return json.Marshal(p)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
