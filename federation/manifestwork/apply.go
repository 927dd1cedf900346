package manifestwork

import (
	"context"
	"fmt"

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
	w := existing.DeepCopy()
	w.Labels = labels.Merge(w.Labels, desired.Labels)
	w.Annotations = labels.Merge(w.Annotations, desired.Annotations)
	w.Spec = *desired.Spec.DeepCopy()
	if err := c.Update(ctx, w); err != nil {
		return controllerutil.OperationResultNone, nil, fmt.Errorf("updating ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return controllerutil.OperationResultUpdated, w, nil
}
