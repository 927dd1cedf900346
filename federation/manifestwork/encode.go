package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// UpToDate reports whether existing already holds what desired renders: the
// same spec hash, labels and annotations the hub sets. The hub rewrites a
// ManifestWork only when this is false. (The stored spec itself cannot be
// hashed again: the apiserver adds the ManifestWork CRD's defaults, e.g.
// feedbackScrapeType, to it.)
func UpToDate(existing, desired *workv1.ManifestWork) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	return true
}

// stampHash sets AnnotationSpecHash to a hash of w's spec.
func stampHash(w *workv1.ManifestWork) error {
	h, err := specHash(w)
	if err != nil {
		return err
	}
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[fleetv1.AnnotationSpecHash] = h
	return nil
}

// specHash returns the first 16 hex digits of the SHA-256 of w's spec as
// JSON.
func specHash(w *workv1.ManifestWork) (string, error) {
	b, err := json.Marshal(w.Spec)
	if err != nil {
		return "", fmt.Errorf("encoding work spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

// encode turns objects into manifests: each converted to unstructured by
// apimachinery's converter, without status and without the null
// creationTimestamps typed objects carry (the fields OCM sdk-go's
// ManifestWorkEqual also drops), encoded with sorted keys as the apiserver
// returns them.
func encode(objs []runtime.Object) ([]workv1.Manifest, error) {
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

// orphanNamespace returns the delete option of a ManifestWork that carries
// the namespace ns: deleting the work deletes its other manifests but leaves
// the namespace, which other works or users may still hold objects in.
func orphanNamespace(ns string) *workv1.DeleteOption {
	return &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
			{Group: "", Resource: "namespaces", Name: ns},
		}},
	}
}
