package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// The FleetSet reconciler's writes: the parallel ManifestWork executor that
// both the reconcile (writeWorks) and the deletion (deleteWorks) use, and
// what it writes through.

// Writer is what the FleetSet reconciler writes ManifestWorks and FleetSet
// status through (metawrite.Writer is one).
type Writer interface {
	manifestwork.Writer
	UpdateStatus(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error
}

// clientWriter is a Writer over a controller-runtime client.
type clientWriter struct{ client.Client }

// UpdateStatus writes obj's status subresource.
func (c clientWriter) UpdateStatus(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return c.Status().Update(ctx, obj, opts...)
}

// writer returns r.Writer, else a Writer over r.Client.
func (r *FleetSetReconciler) writer() Writer {
	if r.Writer != nil {
		return r.Writer
	}
	return clientWriter{r.Client}
}

// applyOutcome is what applying one ManifestWork did: created, updated or
// nothing, the work as it now is, and the write's error.
type applyOutcome struct {
	op      controllerutil.OperationResult
	written *workv1.ManifestWork
	err     error
}

// writeAll makes changes to fs's ManifestWorks, up to MaxParallelWrites at
// a time (applyWork, deleteWork), counts them and emits one event of reason
// naming the clusters written. It returns each apply's outcome and each
// delete's error (nil for a work already gone), in changes' order.
func (r *FleetSetReconciler) writeAll(ctx context.Context, fs *fleetv1.FleetSet, changes workChanges, reason string) ([]applyOutcome, []error) {
	applied := make([]applyOutcome, len(changes.apply))
	deleted := make([]error, len(changes.remove))
	var g errgroup.Group
	g.SetLimit(max(1, r.MaxParallelWrites))
	for i, ww := range changes.apply {
		g.Go(func() error {
			applied[i] = r.applyWork(ctx, fs, ww)
			return nil
		})
	}
	for i, w := range changes.remove {
		g.Go(func() error {
			deleted[i] = r.deleteWork(ctx, fs, w)
			return nil
		})
	}
	_ = g.Wait()

	var sum worksSummary
	for i, ww := range changes.apply {
		switch applied[i].op {
		case controllerutil.OperationResultCreated:
			workWrites.WithLabelValues("create").Inc()
			sum.created = append(sum.created, ww.desired.Namespace)
		case controllerutil.OperationResultUpdated:
			workWrites.WithLabelValues("update").Inc()
			sum.updated = append(sum.updated, ww.desired.Namespace)
		}
	}
	for i, w := range changes.remove {
		if deleted[i] == nil {
			workWrites.WithLabelValues("delete").Inc()
			sum.deleted = append(sum.deleted, w.Namespace)
		}
	}
	if msg := sum.message(manifestwork.WorkName(fs.Namespace, fs.Name)); msg != "" {
		r.Recorder.Event(fs, corev1.EventTypeNormal, reason, msg)
	}
	return applied, deleted
}

// applyWork writes ww.desired over ww.existing (manifestwork.ApplyTo) for
// fs, once the expectations admit one more unobserved write, and, when it
// wrote, expects the informer to deliver the work as written. It returns
// what ApplyTo did, or the admission's error (ctx ended).
func (r *FleetSetReconciler) applyWork(ctx context.Context, fs *fleetv1.FleetSet, ww workWrite) applyOutcome {
	release, err := r.expectations.admit(ctx)
	defer release()
	if err != nil {
		return applyOutcome{err: err}
	}
	write := manifestwork.ApplyTo
	if ww.restore {
		write = manifestwork.Update // its spec hash still matches
	}
	op, written, err := write(ctx, r.writer(), ww.existing, ww.desired)
	if op != controllerutil.OperationResultNone {
		r.expectations.expectWrite(r.owner(fs), kindManifestWork, written)
		r.writtenGenerations.Store(client.ObjectKeyFromObject(written), written.Generation)
	}
	return applyOutcome{op: op, written: written, err: err}
}

// orphanOnDelete sets ManifestWork w's deleteOption to Orphan: applying it,
// the work agent removes its owner references from every object w
// delivered (StatefulSets, and so their pods and PersistentVolumeClaims),
// after which deleting w leaves them in its cluster (deletionPolicy Retain;
// deleteWorks waits for that). It returns the update's error (nil when w is
// gone).
func (r *FleetSetReconciler) orphanOnDelete(ctx context.Context, fs *fleetv1.FleetSet, w *workv1.ManifestWork) error {
	release, err := r.expectations.admit(ctx)
	defer release()
	if err != nil {
		return err
	}
	// A merge patch of deleteOption alone, at w's resourceVersion: w comes
	// from the cache, which holds most manifests emptied (CacheOptions).
	orphan := w.DeepCopy()
	orphan.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	if err := r.Patch(ctx, orphan, client.MergeFromWithOptions(w, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	manifestwork.StripForCache(orphan) // as cached
	r.expectations.expectWrite(r.owner(fs), kindManifestWork, orphan)
	*w = *orphan
	return nil
}

// deleteWork deletes ManifestWork w of fs, once the expectations admit one
// more unobserved write, and, when the delete was accepted, expects the
// informer to deliver it. It returns the delete's error, nil when w was
// already gone.
func (r *FleetSetReconciler) deleteWork(ctx context.Context, fs *fleetv1.FleetSet, w *workv1.ManifestWork) error {
	release, err := r.expectations.admit(ctx)
	defer release()
	if err != nil {
		return err
	}
	err = r.Delete(ctx, w)
	r.writtenGenerations.Delete(client.ObjectKeyFromObject(w))
	if err == nil {
		r.expectations.expectDelete(r.owner(fs), kindManifestWork, client.ObjectKeyFromObject(w))
	}
	return client.IgnoreNotFound(err)
}

// worksSummary is what one reconcile wrote: the clusters whose ManifestWork
// it created, updated and deleted.
type worksSummary struct {
	created, updated, deleted []string
}

// maxEventClusters is how many cluster names an event lists per operation;
// the rest are counted.
const maxEventClusters = 10

// message returns the event message for the FleetSet's ManifestWork name,
// e.g. "ManifestWork db.mydb: created in 2 clusters (east, west); updated in
// 1 cluster (north)", or "" when nothing was written.
func (s worksSummary) message(name string) string {
	var parts []string
	for _, op := range []struct {
		verb     string
		clusters []string
	}{{"created in", s.created}, {"updated in", s.updated}, {"deleted from", s.deleted}} {
		if len(op.clusters) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", op.verb, countClusters(len(op.clusters)), listClusters(op.clusters)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "ManifestWork " + name + ": " + strings.Join(parts, "; ")
}

// countClusters returns "1 cluster" or "n clusters".
func countClusters(n int) string {
	if n == 1 {
		return "1 cluster"
	}
	return fmt.Sprintf("%d clusters", n)
}

// listClusters returns the names, sorted, comma-separated, at most
// maxEventClusters of them and then "and n more".
func listClusters(clusters []string) string {
	c := slices.Sorted(slices.Values(clusters))
	if len(c) <= maxEventClusters {
		return strings.Join(c, ", ")
	}
	return strings.Join(c[:maxEventClusters], ", ") + fmt.Sprintf(" and %d more", len(c)-maxEventClusters)
}

// editedByOthers reports whether ManifestWork w, as the cache holds it, has
// a spec someone else wrote after this process last wrote it: its
// metadata.generation (which only spec changes raise) is above the one the
// hub's own write returned. Such a work is rewritten (restored) even though
// its labels and spec-hash annotation still match.
func (r *FleetSetReconciler) editedByOthers(w *workv1.ManifestWork) bool {
	g, ok := r.writtenGenerations.Load(client.ObjectKeyFromObject(w))
	return ok && w.Generation > g.(int64)
}
