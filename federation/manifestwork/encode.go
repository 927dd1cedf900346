package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

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
