package manifestwork

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	sigsjson "sigs.k8s.io/json"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// SubsetTemplate returns subset s's pod and claim templates: fs's, then s's
// image rewrites, container resources, tolerations, storage classes and
// patch, in the API's order (api/v1alpha1/overrides.go); s nil gives fs's.
// Errors name the field (field is s's path) of an override that cannot apply.
func SubsetTemplate(fs *fleetv1.FleetSet, s *fleetv1.Subset, field string) (*corev1.PodTemplateSpec, []corev1.PersistentVolumeClaim, error) {
	tmpl := fs.Spec.Template.DeepCopy()
	var claims []corev1.PersistentVolumeClaim
	for _, c := range fs.Spec.VolumeClaimTemplates {
		c := *c.DeepCopy()
		c.Status = corev1.PersistentVolumeClaimStatus{}
		claims = append(claims, c)
	}
	if s == nil {
		return tmpl, claims, nil
	}
	if len(s.ImageRegistryRewrites) > 0 {
		for _, cs := range [][]corev1.Container{tmpl.Spec.InitContainers, tmpl.Spec.Containers} {
			for i := range cs {
				img, err := RewriteImage(cs[i].Image, s.ImageRegistryRewrites)
				if err != nil {
					return nil, nil, fmt.Errorf("%s.imageRegistryRewrites: container %s: %w", field, cs[i].Name, err)
				}
				cs[i].Image = img
			}
		}
	}
	for i, cr := range s.ContainerResources {
		c := container(&tmpl.Spec, cr.Name)
		if c == nil {
			return nil, nil, fmt.Errorf("%s.containerResources[%d].name: no container or init container %q in spec.template", field, i, cr.Name)
		}
		if c.Resources.Requests == nil && len(cr.Resources.Requests) > 0 {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for k, v := range cr.Resources.Requests {
			c.Resources.Requests[k] = v
		}
		if c.Resources.Limits == nil && len(cr.Resources.Limits) > 0 {
			c.Resources.Limits = corev1.ResourceList{}
		}
		for k, v := range cr.Resources.Limits {
			c.Resources.Limits[k] = v
		}
	}
	tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, s.Tolerations...)
	for _, sc := range s.StorageClassNames {
		for i := range claims {
			if claims[i].Name == sc.Claim {
				claims[i].Spec.StorageClassName = &sc.StorageClassName
			}
		}
	}
	if s.Patch != nil && len(s.Patch.Raw) > 0 {
		patched, err := patchTemplate(tmpl, s.Patch.Raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s.patch: %w", field, err)
		}
		tmpl = patched
	}
	return tmpl, claims, nil
}

// patchTemplate applies a strategic merge patch to tmpl (the patch
// strategies of corev1.PodTemplateSpec: containers merged by name, and so
// on). It returns an error when the patch does not apply or its result has
// a field PodTemplateSpec does not (a misspelt key is not dropped silently).
func patchTemplate(tmpl *corev1.PodTemplateSpec, patch []byte) (*corev1.PodTemplateSpec, error) {
	orig, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	b, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("not a strategic merge patch of a pod template: %w", err)
	}
	out := &corev1.PodTemplateSpec{}
	strict, err := sigsjson.UnmarshalStrict(b, out)
	if err != nil {
		return nil, fmt.Errorf("the patched pod template does not decode: %w", err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("the patched pod template has fields a pod template does not: %s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// container returns the container or init container named name, or nil.
func container(spec *corev1.PodSpec, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		if i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &cs[i]
		}
	}
	return nil
}

// RewriteImage returns image with its registry prefix rewritten by the
// first rule whose From prefixes its normalised reference (docker's rules,
// github.com/distribution/reference: "nginx" is
// "docker.io/library/nginx"), on whole path components; image unchanged
// when none matches. Tag and digest are kept. It returns an error when image
// is not a valid reference.
func RewriteImage(image string, rules []fleetv1.ImageRegistryRewrite) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	name := named.Name()
	rest := strings.TrimPrefix(named.String(), name) // ":tag", "@digest" or both
	for _, r := range rules {
		from := strings.TrimSuffix(r.From, "/")
		if name == from || strings.HasPrefix(name, from+"/") {
			out := strings.TrimSuffix(r.To, "/") + strings.TrimPrefix(name, from) + rest
			if _, err := reference.ParseNamed(out); err != nil {
				return "", fmt.Errorf("image %q rewritten to %q: %w", image, out, err)
			}
			return out, nil
		}
	}
	return image, nil
}
