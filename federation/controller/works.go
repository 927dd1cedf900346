package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"open-cluster-management.io/api/utils/work/v1/workvalidator"

	discoveryv1 "k8s.io/api/discovery/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// The FleetSet's ManifestWorks: the indexes that find them, and the
// reconcile step that writes them (chooseWrites decides, writeAll writes).

// WorkOwnerIndex is the ManifestWork field index holding the owning
// FleetSet as "<namespace>/<name>" (from the owner labels), so a reconcile
// finds its works by lookup instead of matching labels over every cached
// work.
const WorkOwnerIndex = "metadata.labels.fleetset.io/owner"

// deletingWorkIndex is "true" for FleetSet ManifestWorks (owner labels)
// being deleted: an index of the resync lease controller, so that its reads
// do not grow with the works a cluster holds.
const deletingWorkIndex = "fleetset.io/deleting"

// workOwnerKey is the WorkOwnerIndex value of FleetSet namespace/name.
func workOwnerKey(namespace, name string) string { return namespace + "/" + name }

// workOwnerOf is the WorkOwnerIndex function: the owning FleetSet of a
// ManifestWork with both owner labels, else none.
func workOwnerOf(o client.Object) []string {
	owner, ok := manifestwork.Owner(o)
	if !ok {
		return nil
	}
	return []string{workOwnerKey(owner.Namespace, owner.Name)}
}

// deletingWork is the deletingWorkIndex function. Fleet DNS works
// (manifestwork.IsFleetDNSWork) deliver no StatefulSet and are left out.
func deletingWork(o client.Object) []string {
	if o.GetDeletionTimestamp().IsZero() || len(workOwnerOf(o)) == 0 || manifestwork.IsFleetDNSWork(o) {
		return nil
	}
	return []string{"true"}
}

// ownedWorks lists the ManifestWorks of FleetSet key in every cluster
// namespace, through the WorkOwnerIndex (a lookup, not a scan of every
// work).
func (r *FleetSetReconciler) ownedWorks(ctx context.Context, key types.NamespacedName) (map[types.NamespacedName]*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.List(ctx, &list, client.MatchingFields{WorkOwnerIndex: workOwnerKey(key.Namespace, key.Name)}); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks of %s: %w", key, err)
	}
	out := make(map[types.NamespacedName]*workv1.ManifestWork, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out, nil
}

// workWrite is one ManifestWork to apply: desired, as rendered, over
// existing, the work as the cache holds it (nil: none exists).
type workWrite struct {
	existing, desired *workv1.ManifestWork
	// restore: existing's spec was changed by someone else; it is written
	// even though its labels and annotations match desired's.
	restore bool
}

// workChanges is what one reconcile writes of a FleetSet's ManifestWorks.
type workChanges struct {
	// apply are the works to create or update, sorted by cluster.
	apply []workWrite
	// remove are the works to delete, sorted by cluster.
	remove []*workv1.ManifestWork
	// records are the fleet DNS records the works carry.
	records *manifestwork.Records
	// tooLarge are the works not written for being over OCM's manifest
	// limit, as WorkTooLarge problems.
	tooLarge []problem
}

// chooseWrites decides what a reconcile writes of fs's ManifestWorks: the
// work rendered per cluster a subset is delivered to (delivered), where it
// differs from the existing one or edited (nil: never) says someone else
// changed its spec, except in clusters not found; and the deletion of the
// works not rendered now (in clusters no subset uses, and fleet DNS works
// no longer needed). Each cluster's works carry the fleet DNS records of
// the other clusters' instances accepted from reports (the members'
// EndpointSlices on the hub, by cluster; manifestwork.AcceptRecords): in
// its ManifestWork, or for a large fleet in its fleet DNS works; and, in
// the clusters of acks, the hub's acknowledgement of the member's
// heartbeat (v1alpha1.AnnotationMemberAck: acks[cluster], a renewTime). The
// error names the spec field.
func chooseWrites(fs *fleetv1.FleetSet, subsets []subsetPlan, existing map[types.NamespacedName]*workv1.ManifestWork, edited func(*workv1.ManifestWork) bool, reports map[string]*discoveryv1.EndpointSlice, acks map[string]string) (workChanges, error) {
	var delivered []manifestwork.Subset
	missing := map[string]bool{}
	for i := range subsets {
		sp := &subsets[i]
		if !sp.clusterExists {
			missing[sp.planned.Cluster] = true
		}
		delivered = append(delivered, sp.delivered())
	}
	records := manifestwork.AcceptRecords(fs, delivered, reports)
	desired, err := manifestwork.Works(fs, delivered, records)
	if err != nil {
		return workChanges{}, err
	}
	out := workChanges{records: records}
	kept := keptWorks{used: map[string]bool{}, rendered: map[types.NamespacedName]bool{}}
	for _, w := range desired {
		kept.used[w.Namespace] = true
		kept.rendered[client.ObjectKeyFromObject(w)] = true
		if missing[w.Namespace] {
			continue
		}
		if ack, ok := acks[w.Namespace]; ok {
			if w.Annotations == nil {
				w.Annotations = map[string]string{}
			}
			w.Annotations[fleetv1.AnnotationMemberAck] = ack
		}
		cur := existing[client.ObjectKeyFromObject(w)]
		restore := cur != nil && edited != nil && edited(cur)
		if cur != nil && manifestwork.UpToDate(cur, w) && !restore {
			// Stored as rendered: it passed the validation below when
			// it was written, which decodes every manifest; a settled
			// FleetSet's reconcile need not pay for it again.
			continue
		}
		// What the spec this write replaces (and, if it was never
		// reported Applied, the ones before) may have made the member
		// enforce: the fence deadline counts it until this spec is
		// Applied (fenceDeadline).
		if cur != nil {
			if w.Annotations == nil {
				w.Annotations = map[string]string{}
			}
			w.Annotations[fleetv1.AnnotationDeliveredFenceSeconds] = strconv.FormatInt(max(0, manifestwork.EnforceableFence(cur)), 10)
		}
		if err := workvalidator.ManifestValidator.ValidateManifests(w.Spec.Workload.Manifests); err != nil {
			out.tooLarge = append(out.tooLarge, clusterProblem(fleetv1.ReasonWorkTooLarge, w.Namespace, fmt.Sprintf(
				"the ManifestWork %s/%s rendered for this cluster is refused by OCM's validation (%v); it is not written, and the cluster keeps the work it has: fewer subsets, instances or delivered ConfigMaps and Secrets in this cluster bring it under the limit", w.Namespace, w.Name, err)))
			continue
		}
		out.apply = append(out.apply, workWrite{existing: cur, desired: w, restore: restore})
	}
	out.remove = deletable(existing, kept)
	return out, nil
}

// delivered is the subset as federation/manifestwork renders it: the plan
// with every step's output, at replicas 0 and partition 0 while draining.
func (sp *subsetPlan) delivered() manifestwork.Subset {
	p := manifestwork.FromPlan(sp.planned)
	p.Template, p.Claims = sp.rendered.template, sp.rendered.claims
	p.Dependencies, p.DependenciesHash = sp.rendered.dependencies, sp.rendered.dependenciesHash
	p.Epoch, p.Fencing = sp.epoch, sp.fencing
	p.Revision, p.Partition, p.Update = sp.rollout.revision, sp.partition(), sp.rollout.update
	if sp.roles != nil {
		p.Roles, p.Leaders = sp.roles.Roles, sp.roles.Leaders
	}
	sp.lifecycle.apply(&p)
	p.ClaimsLeft = sp.claimsLeft
	if sp.draining {
		p.Replicas, p.Partition, p.Draining = 0, 0, true
	}
	return p
}

// keptWorks are the works a reconcile keeps: every work in the clusters
// used, except fleet DNS works not rendered now (the fleet shrank to
// carry its records in the clusters' works, or a bucket emptied).
type keptWorks struct {
	used     map[string]bool
	rendered map[types.NamespacedName]bool
}

// keeps reports whether w, at key k, is kept.
func (kw keptWorks) keeps(k types.NamespacedName, w *workv1.ManifestWork) bool {
	return kw.rendered[k] || (kw.used[k.Namespace] && !manifestwork.IsFleetDNSWork(w))
}

// deletable returns the works not being deleted yet, except those kept,
// sorted by cluster (then name).
func deletable(works map[types.NamespacedName]*workv1.ManifestWork, kept keptWorks) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for k, w := range works {
		if !kept.keeps(k, w) && w.DeletionTimestamp.IsZero() {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *workv1.ManifestWork) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// writeWorks makes the writes chooseWrites chose (writeAll), once st.fs is
// known to be the apiserver's current FleetSet (else errStaleFleetSet,
// nothing written), and records them in st. Write failures are ApplyFailed
// problems, tried again after writeFailureRetry (st.writeRetry), and so is
// a create refused by a work of the same name that is not st.fs's
// (foreignWork); a conflict, or a create of st.fs's own work the cache does
// not hold yet, is returned as errWorkConflict (a *conflictedWrites naming
// the works), to retry with fresh objects.
func (r *FleetSetReconciler) writeWorks(ctx context.Context, st *state) error {
	if st.holdWrites {
		return nil
	}
	reports, err := r.readMemberEndpoints(ctx, st.fs)
	if err != nil {
		return err
	}
	acks, err := r.memberAcks(ctx, st)
	if err != nil {
		return err
	}
	changes, err := chooseWrites(st.deliveredFleetSet(), st.subsets, st.existingWorks, r.editedByOthers, reports, acks)
	if err != nil {
		st.invalidSpec(err)
		return nil
	}
	observeRecords(st, changes.records)
	st.report(changes.tooLarge...)
	if err := r.holdForTenants(ctx, st, &changes); err != nil {
		return err
	}
	if len(changes.apply)+len(changes.remove) > 0 {
		switch ok, err := r.current(ctx, st.fs); {
		case err != nil:
			return err
		case !ok:
			return errStaleFleetSet
		}
	}
	applied, deleted := r.writeAll(ctx, st.fs, changes, EventWorksApplied)
	var conflicts *conflictedWrites
	conflicted := func(key types.NamespacedName, err error) {
		if conflicts == nil {
			conflicts = &conflictedWrites{}
		}
		conflicts.works, conflicts.last = append(conflicts.works, key), err
	}
	var readErr error
	var written []*workv1.ManifestWork
	var gone []types.NamespacedName
	for i, ww := range changes.apply {
		switch err := applied[i].err; {
		case err == nil:
			written = append(written, applied[i].written)
		case apierrors.IsConflict(err):
			// The cache is behind: retry with fresh objects.
			workConflicts.WithLabelValues("conflict").Inc()
			conflicted(client.ObjectKeyFromObject(ww.desired), err)
		case apierrors.IsAlreadyExists(err):
			foreign, ferr := r.foreignWork(ctx, st.fs, ww.desired)
			if ferr != nil {
				// Returned once the other writes are recorded.
				readErr = ferr
				continue
			}
			if foreign == "" {
				// Ours, created meanwhile: the cache is behind.
				workConflicts.WithLabelValues("already_exists").Inc()
				conflicted(client.ObjectKeyFromObject(ww.desired), err)
				continue
			}
			// Not the FleetSet's: never overwritten. No event of the
			// hub's caches (which hold only its own works) announces
			// its removal, so the write is tried again later.
			workConflicts.WithLabelValues("foreign").Inc()
			st.writeFailed(ww.desired.Namespace, foreign)
		default:
			st.writeFailed(ww.desired.Namespace, err.Error())
		}
	}
	for i, w := range changes.remove {
		key := client.ObjectKeyFromObject(w)
		if err := deleted[i]; err != nil {
			st.report(clusterProblem(fleetv1.ReasonApplyFailed, w.Namespace, fmt.Sprintf("deleting ManifestWork %s: %v", key, err)))
			st.writeRetry = writeFailureRetry
			continue
		}
		gone = append(gone, key)
	}
	st.recordWrites(written, gone)
	if readErr != nil {
		return readErr
	}
	if conflicts != nil {
		return conflicts
	}
	return nil
}

// writeFailureRetry is how long after a refused ManifestWork write or
// delete (a webhook, RBAC, a foreign work of the same name) the reconcile
// runs again: the hub's caches announce no end to such a refusal.
const writeFailureRetry = 30 * time.Second

// writeFailed records message as an ApplyFailed problem of every
// subset of st placed on cluster, and the write's retry.
func (st *state) writeFailed(cluster, message string) {
	for _, sp := range st.subsets {
		if sp.planned.Cluster == cluster {
			st.report(subsetProblem(fleetv1.ReasonApplyFailed, sp.planned.Name, sp.planned.Cluster, message))
		}
	}
	st.writeRetry = writeFailureRetry
}

// foreignWork reads desired's ManifestWork live (liveReader)
// after its create was refused as AlreadyExists, and returns why it is not
// fs's, naming it and its owner labels ("" when it is fs's work, or is gone
// again: the cache is behind). It returns the read's other errors.
func (r *FleetSetReconciler) foreignWork(ctx context.Context, fs *fleetv1.FleetSet, desired *workv1.ManifestWork) (string, error) {
	key := client.ObjectKeyFromObject(desired)
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWork"))
	if err := r.liveReader().Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading ManifestWork %s live after its create was refused: %w", key, err)
	}
	owner, owned := manifestwork.Owner(live)
	if owned && owner == client.ObjectKeyFromObject(fs) && live.Labels[fleetv1.LabelManagedBy] == fleetv1.ManagedByHub {
		return "", nil
	}
	return fmt.Sprintf("ManifestWork %s exists and is not this FleetSet's (labels %s=%q, %s=%q, %s=%q): the hub does not overwrite it; delete or rename it",
		key, fleetv1.LabelOwnerNamespace, live.Labels[fleetv1.LabelOwnerNamespace], fleetv1.LabelOwnerName, live.Labels[fleetv1.LabelOwnerName],
		fleetv1.LabelManagedBy, live.Labels[fleetv1.LabelManagedBy]), nil
}

// holdForTenants drops from changes.apply every work that would run as an
// executor its cluster does not have yet: a work to create, or one whose
// spec.executor changes (an upgrade from the shared executor), waits until
// the tenant work of st.fs's namespace in that cluster (TenantReconciler)
// is Applied at its generation, since the work agent, refused by its
// SubjectAccessReview, would retry only a minute later. A tenant work the
// agent reports not applied is an ApplyFailed problem of the cluster's
// subsets, with the agent's message; one not there or not applied yet holds
// quietly (a tenant work's change of Applied reconciles the FleetSet
// again: fleetSetsOfTenant). It returns the cache's read errors.
func (r *FleetSetReconciler) holdForTenants(ctx context.Context, st *state, changes *workChanges) error {
	kept := changes.apply[:0]
	for _, ww := range changes.apply {
		if ww.existing != nil && equality.Semantic.DeepEqual(ww.existing.Spec.Executor, ww.desired.Spec.Executor) {
			kept = append(kept, ww)
			continue
		}
		cluster := ww.desired.Namespace
		tw := &workv1.ManifestWork{}
		err := r.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.TenantWorkName(st.fs.Namespace)}, tw)
		switch {
		case apierrors.IsNotFound(err):
			log.FromContext(ctx).V(2).Info("Holding the work until the namespace's tenant work exists", "cluster", cluster)
			continue
		case err != nil:
			return fmt.Errorf("reading tenant work %s/%s: %w", cluster, fleetv1.TenantWorkName(st.fs.Namespace), err)
		case manifestwork.AppliedAtGeneration(tw):
			kept = append(kept, ww)
			continue
		}
		if c := manifestwork.NotApplied(tw); c != nil {
			msg := fmt.Sprintf("the namespace's executor is not in place: ManifestWork %s/%s (%s) is not applied: %s", cluster, tw.Name, c.Reason, c.Message)
			for _, sp := range st.subsets {
				if sp.planned.Cluster == cluster {
					st.report(subsetProblem(fleetv1.ReasonApplyFailed, sp.planned.Name, cluster, msg))
				}
			}
		}
		log.FromContext(ctx).V(2).Info("Holding the work until the namespace's tenant work is applied", "cluster", cluster)
	}
	changes.apply = kept
	return nil
}

// memberAcks returns, for every cluster of st's subsets whose member last
// reported fence records not yet lifted (heartbeat View
// FencedPlacements), the renewTime of the member's heartbeat Lease read
// live now: the acknowledgement the works written by this reconcile carry
// (v1alpha1.AnnotationMemberAck). Reconciles of one FleetSet never overlap,
// so every write decided from an older read of the Lease is done by then.
// Errors are the Lease reads'.
func (r *FleetSetReconciler) memberAcks(ctx context.Context, st *state) (map[string]string, error) {
	if r.Heartbeats == nil {
		return nil, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var out map[string]string
	for _, sp := range st.subsets {
		c := sp.planned.Cluster
		if _, done := out[c]; done {
			continue
		}
		if v, ok := r.Heartbeats.View(c); !ok || v.FencedPlacements == 0 {
			continue
		}
		if err := r.Heartbeats.Refresh(ctx, reader, c); err != nil {
			return nil, err
		}
		if v, ok := r.Heartbeats.View(c); ok && v.FencedPlacements > 0 && v.RenewTime != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[c] = v.RenewTime
			memberAcks.Inc()
		}
	}
	return out, nil
}
