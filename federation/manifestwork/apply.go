package manifestwork

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Writer is what ApplyTo writes through: a controller-runtime client.Client,
// which reads back the whole object the apiserver answers with, or a
// metawrite.Writer, which reads back its metadata only (fleetset-hub's).
type Writer interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
	Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error
}

// ApplyTo writes desired over existing (nil: none) with at most one write
// through c: a create, nothing when UpToDate, or an update at existing's
// resourceVersion merging the hub's labels and annotations and replacing the
// spec. It returns what it did, the work as it now is (metadata from the
// answer), and the write's error wrapped with the work's key.
func ApplyTo(ctx context.Context, c Writer, existing, desired *workv1.ManifestWork) (controllerutil.OperationResult, *workv1.ManifestWork, error) {
	if err := hasManifests(desired); err != nil {
		return controllerutil.OperationResultNone, nil, err
	}
	if existing == nil {
		w := desired.DeepCopy()
		if err := c.Create(ctx, w); err != nil {
			return controllerutil.OperationResultNone, nil, fmt.Errorf("creating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return controllerutil.OperationResultCreated, w, nil
	}
	if UpToDate(existing, desired) {
		return controllerutil.OperationResultNone, existing, nil
	}
	return Update(ctx, c, existing, desired)
}

// Update writes desired over existing whatever UpToDate says (a work whose
// spec someone else changed under an unchanged spec hash): desired's spec,
// and its labels and annotations merged over existing's, with existing's
// resourceVersion as the precondition. It returns OperationResultUpdated and
// the work as written, or the write's error.
func Update(ctx context.Context, c Writer, existing, desired *workv1.ManifestWork) (controllerutil.OperationResult, *workv1.ManifestWork, error) {
	if err := hasManifests(desired); err != nil {
		return controllerutil.OperationResultNone, nil, err
	}
	w := existing.DeepCopy()
	w.Labels = labels.Merge(w.Labels, desired.Labels)
	w.Annotations = labels.Merge(w.Annotations, desired.Annotations)
	w.Spec = *desired.Spec.DeepCopy()
	if err := c.Update(ctx, w); err != nil {
		return controllerutil.OperationResultNone, nil, fmt.Errorf("updating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return controllerutil.OperationResultUpdated, w, nil
}

// hasManifests returns an error when desired has no manifests or one of
// them is empty: the hub's cache holds works with most manifests emptied
// (StripForCache), and a cached copy written back would make the work agent
// delete what the work delivered. Every work the hub renders has at least
// one manifest, none empty.
func hasManifests(desired *workv1.ManifestWork) error {
	if len(desired.Spec.Workload.Manifests) == 0 {
		return fmt.Errorf("refusing to write ManifestWork %s/%s without manifests (a cached copy, not a rendered work)", desired.Namespace, desired.Name)
	}
	for i, m := range desired.Spec.Workload.Manifests {
		if len(m.Raw) == 0 && m.Object == nil {
			return fmt.Errorf("refusing to write ManifestWork %s/%s: spec.workload.manifests[%d] is empty (a cached copy, not a rendered work)", desired.Namespace, desired.Name, i)
		}
	}
	return nil
}

// readBackKinds are the kinds of manifest the hub reads back from a written
// work (envelope.Find): the StatefulSet (heldStatefulSet, Drained), the
// SubsetPlacement (HeldEpoch) and the resync Lease (LeaseOf). A new reader
// of another kind must add it here, or it finds nothing in a cached work.
var readBackKinds = []string{"StatefulSet", "SubsetPlacement", "Lease"}

// StripForCache empties, in place, every manifest of w whose kind is not in
// readBackKinds, keeping each manifest's place in the list, and returns w.
// The emptied ones (the fleet view ConfigMap, fleet DNS EndpointSlices,
// Services) are most of a work's bytes and carry every subset's instances,
// so that a cache of whole works grows with FleetSets × subsets²; the hub
// decides whether to write from the spec-hash annotation (UpToDate), never
// from a written work's manifests. ApplyTo and Update refuse to write a work
// with an empty manifest.
func StripForCache(w *workv1.ManifestWork) *workv1.ManifestWork {
	for i := range w.Spec.Workload.Manifests {
		m := &w.Spec.Workload.Manifests[i]
		var h struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(m.Raw, &h) == nil && slices.Contains(readBackKinds, h.Kind) {
			continue
		}
		m.Raw, m.Object = nil, nil
	}
	return w
}
