package envelope

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Encode turns objects into manifests: unstructured, without status and the
// null creationTimestamps typed objects carry (what OCM sdk-go's
// ManifestWorkEqual drops too), as JSON with sorted keys.
func Encode(objs []runtime.Object) ([]workv1.Manifest, error) {
	out := make([]workv1.Manifest, 0, len(objs))
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", o, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		if claims, ok, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates"); ok {
			for i := range claims {
				if c, ok := claims[i].(map[string]any); ok {
					unstructured.RemoveNestedField(c, "status")
					unstructured.RemoveNestedField(c, "metadata", "creationTimestamp")
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, claims, "spec", "volumeClaimTemplates"); err != nil {
				return nil, fmt.Errorf("encoding %T: %w", o, err)
			}
		}
		b, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", o, err)
		}
		out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}})
	}
	return out, nil
}
