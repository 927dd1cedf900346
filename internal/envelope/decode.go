package envelope

import (
	"encoding/json"
	"fmt"

	workv1 "open-cluster-management.io/api/work/v1"
)

// Key selects manifests by kind, namespace and name; an empty field matches
// any value.
type Key struct {
	Kind, Namespace, Name string
}

// head is the part of a manifest a Key is matched against.
type head struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

func (k Key) matches(h head) bool {
	return (k.Kind == "" || k.Kind == h.Kind) &&
		(k.Namespace == "" || k.Namespace == h.Metadata.Namespace) &&
		(k.Name == "" || k.Name == h.Metadata.Name)
}

// Find decodes into obj the first manifest of w's spec that key selects and
// returns its index, or -1 if none does. Manifests whose kind and metadata
// do not decode are skipped; the error names the selected manifest when it
// does not decode into obj.
func Find(w *workv1.ManifestWork, key Key, obj any) (int, error) {
	for i, m := range w.Spec.Workload.Manifests {
		var h head
		if json.Unmarshal(m.Raw, &h) != nil || !key.matches(h) {
			continue
		}
		if err := json.Unmarshal(m.Raw, obj); err != nil {
			return i, fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		}
		return i, nil
	}
	return -1, nil
}
