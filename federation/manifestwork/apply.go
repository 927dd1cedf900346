package manifestwork

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Apply creates the ManifestWork desired renders, or brings the existing one
// in line with it, with controller-runtime's CreateOrUpdate: the hub's
// labels and annotations are merged in (others are kept) and the spec
// replaced. Nothing is written when the work is UpToDate. It returns what
// was done (created, updated, unchanged), the work as it now is (its status
// kept), and the error of the read or write, wrapped with the work's key;
// conflicts stay detectable with apierrors.IsConflict.
func Apply(ctx context.Context, c client.Client, desired *workv1.ManifestWork) (controllerutil.OperationResult, *workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{}
	w.Namespace, w.Name = desired.Namespace, desired.Name
	op, err := controllerutil.CreateOrUpdate(ctx, c, w, func() error {
		if w.CreationTimestamp.IsZero() || !UpToDate(w, desired) {
			w.Labels = labels.Merge(w.Labels, desired.Labels)
			w.Annotations = labels.Merge(w.Annotations, desired.Annotations)
			w.Spec = *desired.Spec.DeepCopy()
		}
		return nil
	})
	if err != nil {
		return op, nil, fmt.Errorf("writing ManifestWork %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return op, w, nil
}
