package controller

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/failover"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// Restore: a FleetSet restored from a backup of the hub (docs/operations.md,
// "Restoring the hub from a backup") comes back with a new UID and its
// status lost or old. Its owner identity (annotation fleetset.io/identity)
// lets it take its own objects back; what its status said of failover is
// rebuilt from its ManifestWorks, the record of what each member was told
// to run, or, when there are none, held.

// restored reports whether fs was restored from a backup: it carries an
// owner identity other than its UID.
func restored(fs *fleetv1.FleetSet) bool {
	id, ok := fs.Annotations[fleetv1.AnnotationIdentity]
	return ok && fs.UID != "" && id != string(fs.UID)
}

// restoreHold returns why the hub holds FleetSet fs ("" when it does not):
// fs was restored (restored), its status.subsets is empty, the hub holds
// none of its ManifestWorks (works), and the annotation
// fleetset.io/restore-confirmed is absent. The hub then cannot know where
// fs's subsets run: delivering them to their spec clusters could start a
// relocated subset at home while it runs on its fallback cluster.
func restoreHold(fs *fleetv1.FleetSet, works map[types.NamespacedName]*workv1.ManifestWork) string {
	if !restored(fs) || len(fs.Status.Subsets) > 0 || len(works) > 0 {
		return ""
	}
	if _, ok := fs.Annotations[fleetv1.AnnotationRestoreConfirmed]; ok {
		return ""
	}
	return fmt.Sprintf("restored from a backup (identity %s, UID %s) without status.subsets and without ManifestWorks: "+
		"the hub cannot know where the subsets run (a relocated subset may run on a fallback cluster), so it delivers nothing; "+
		"restore the FleetSet's ManifestWorks too, or, once the subsets are known to run on the clusters the spec names, "+
		"annotate the FleetSet %s=true; the members' work agents delete the objects of a ManifestWork gone longer than their eviction grace period (60 minutes by default)",
		fs.Annotations[fleetv1.AnnotationIdentity], fs.UID, fleetv1.AnnotationRestoreConfirmed)
}

// rebuiltSubsetStatus returns planned subset p's failover state as fs's
// ManifestWorks (works) record it, for a FleetSet whose status.subsets is
// lost: the cluster whose work holds p's StatefulSet, other than p's spec
// cluster (Cluster; the relocated or moving subset stays where it runs,
// and goes home only through the failback or move protocol, drained
// first), FailedOver with policy Relocate (FailingBack when that work
// holds it at 0 replicas, draining), and the highest fencing epoch any
// work delivers for p (Epoch; a lower one would be stale to the members).
// It returns false, and why, when two clusters other than p's own run p
// (more than one holds it with replicas above 0): the hub cannot tell
// which is current. A work being deleted counts as not holding p.
func rebuiltSubsetStatus(fs *fleetv1.FleetSet, p plan.Subset, works map[types.NamespacedName]*workv1.ManifestWork) (fleetv1.SubsetStatus, string) {
	sts := manifestwork.StatefulSetName(fs.Name, p.Name)
	keys := make([]types.NamespacedName, 0, len(works))
	for k := range works {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := fleetv1.SubsetStatus{Name: p.Name}
	var running, draining []string
	for _, k := range keys {
		w := works[k]
		if !w.DeletionTimestamp.IsZero() || !manifestwork.HoldsStatefulSet(w, sts) {
			continue
		}
		if e, ok := manifestwork.HeldEpoch(w, sts); ok && e > out.Epoch {
			out.Epoch = e
		}
		if w.Namespace == p.Cluster {
			continue
		}
		if r, ok := manifestwork.HeldReplicas(w, sts); ok && r == 0 {
			draining = append(draining, w.Namespace)
		} else {
			running = append(running, w.Namespace)
		}
	}
	relocate := fs.Spec.Failover != nil && fs.Spec.Failover.Policy == fleetv1.FailoverRelocate
	switch {
	case len(running) > 1:
		return out, fmt.Sprintf("status.subsets is lost and the ManifestWorks of clusters %v all run subset %s: the hub cannot know which is current", running, p.Name)
	case len(running) == 1:
		out.Cluster = running[0]
		if relocate {
			out.Failover = fleetv1.SubsetFailedOver
		}
	case len(draining) > 0:
		out.Cluster = draining[0]
		if relocate {
			out.Failover = fleetv1.SubsetFailingBack
		}
	}
	return out, ""
}

// Event reasons of a restore.
const (
	// EventStatusRebuilt: status.subsets was empty and the hub rebuilt
	// where the subsets run from the FleetSet's ManifestWorks.
	EventStatusRebuilt = "StatusRebuilt"
)

// rebuildStatus is the reconcile's restore step, for a FleetSet whose
// status.subsets is empty: it holds the FleetSet (restoreHold, or two
// clusters running one subset: rebuiltSubsetStatus), reporting
// ReasonRestoreHeld with a Warning event, and returns false; else it
// records in st.rebuilt each planned subset's failover state as the
// ManifestWorks tell it, with a StatusRebuilt event naming the subsets
// found away from their spec cluster, and returns true. A held FleetSet's
// ManifestWorks are left as they are (the reconcile stops at the plan, as
// for an invalid spec).
func rebuildStatus(st *state, planned []plan.Subset) bool {
	fs := st.fs
	if len(fs.Status.Subsets) > 0 {
		return true
	}
	hold := func(why string) bool {
		st.report(fleetProblem(fleetv1.ReasonRestoreHeld, why))
		st.failoverEvents = append(st.failoverEvents, pendingEvent{corev1.EventTypeWarning, fleetv1.ReasonRestoreHeld, why})
		return false
	}
	if why := restoreHold(fs, st.existingWorks); why != "" {
		return hold(why)
	}
	if len(st.existingWorks) == 0 {
		return true
	}
	st.rebuilt = map[string]fleetv1.SubsetStatus{}
	var away []string
	for _, p := range planned {
		ss, why := rebuiltSubsetStatus(fs, p, st.existingWorks)
		if why != "" {
			return hold(why)
		}
		st.rebuilt[p.Name] = ss
		if ss.Cluster != "" && ss.Cluster != p.Cluster {
			away = append(away, fmt.Sprintf("%s on %s (spec: %s, epoch %d)", p.Name, ss.Cluster, p.Cluster, ss.Epoch))
		}
	}
	msg := "status.subsets was empty: rebuilt from the ManifestWorks; every subset runs on its spec cluster"
	if len(away) > 0 {
		msg = fmt.Sprintf("status.subsets was empty: rebuilt from the ManifestWorks; away from their spec cluster: %v", away)
	}
	st.failoverEvents = append(st.failoverEvents, pendingEvent{corev1.EventTypeNormal, EventStatusRebuilt, msg})
	return true
}

// EventEpochLearned: a member ran a subset at a higher fencing epoch than
// the FleetSet's status says (a hub restored from a backup taken before a
// relocation or failback); the hub took the member's epoch and cluster.
const EventEpochLearned = "EpochLearned"

// learnEpochs is the reconcile's epoch step (epochs are fencing tokens,
// issue 48). A FleetSet restored from a backup (restored) is held
// (ReasonRestoreHeld, retried every failover.HoldRetry) until the hub has
// observed, since it started, a heartbeat renewal of every Available
// member heard among the clusters its subsets use or may use (unless
// annotated AnnotationRestoreConfirmed): their heartbeats
// report the highest epoch each ran each placement at
// (AnnotationMemberEpochs), which a Lease restored with the backup may not
// say. Then, for every FleetSet, a planned subset that a member reports at
// a higher epoch than its status (or rebuilt state) is taken to run where
// that member ran it, at that epoch (st.learned: FailedOver there with
// policy Relocate when that is not its spec cluster), with a Warning event
// EpochLearned: it is never delivered below what ran, and a move from
// there goes through the failback or move protocol, drained first. It
// returns false when it holds.
func (r *FleetSetReconciler) learnEpochs(st *state, planned []plan.Subset) bool {
	if r.Heartbeats == nil {
		return true
	}
	fs := st.fs
	if _, confirmed := fs.Annotations[fleetv1.AnnotationRestoreConfirmed]; restored(fs) && !confirmed {
		var waiting []string
		for _, c := range fleetClusters(fs, planned) {
			mc := st.clusters[c]
			if mc == nil || !isAvailable(mc) {
				continue
			}
			// A member never heard reports nothing to wait for.
			if v, ok := r.Heartbeats.View(c); ok && !v.Renewed {
				waiting = append(waiting, c)
			}
		}
		if len(waiting) > 0 {
			why := fmt.Sprintf("restored from a backup (identity %s): waiting for a heartbeat of the members of %v observed since this hub started, to learn the epochs they ran the subsets at before moving anything (annotate the FleetSet %s=true to stop waiting)", fs.Identity(), waiting, fleetv1.AnnotationRestoreConfirmed)
			st.report(fleetProblem(fleetv1.ReasonRestoreHeld, why))
			st.failoverRequeue = minPositive(st.failoverRequeue, failover.HoldRetry)
			return false
		}
	}
	cur := map[string]fleetv1.SubsetStatus{}
	for name, ss := range st.rebuilt {
		cur[name] = ss
	}
	for _, ss := range fs.Status.Subsets {
		cur[ss.Name] = ss
	}
	relocate := fs.Spec.Failover != nil && fs.Spec.Failover.Policy == fleetv1.FailoverRelocate
	for _, p := range planned {
		key := fs.Namespace + "." + manifestwork.StatefulSetName(fs.Name, p.Name) + "." + fs.Identity()
		c, e, ok := r.Heartbeats.HighestEpoch(key)
		ss := cur[p.Name]
		if !ok || e <= ss.Epoch {
			continue
		}
		learned := fleetv1.SubsetStatus{Name: p.Name, Cluster: c, Epoch: e, Claims: ss.Claims}
		if c != p.Cluster && relocate {
			learned.Failover = fleetv1.SubsetFailedOver
		}
		if st.learned == nil {
			st.learned = map[string]fleetv1.SubsetStatus{}
		}
		st.learned[p.Name] = learned
		msg := fmt.Sprintf("subset %s: member %s ran it at epoch %d, above the %d the FleetSet's status says (%s): the status is older than what ran (a hub restored from a backup?); taking epoch %d on %s",
			p.Name, c, e, ss.Epoch, orNone(ss.Cluster), e, c)
		st.failoverEvents = append(st.failoverEvents, pendingEvent{corev1.EventTypeWarning, EventEpochLearned, msg})
	}
	return true
}

// orNone is s, or "none" when empty.
func orNone(s string) string {
	if s == "" {
		return "no cluster recorded"
	}
	return "on " + s
}

// fleetClusters returns the clusters fs's planned subsets use or may use:
// their spec clusters, where the status says they run, and their fallback
// clusters, sorted, each once.
func fleetClusters(fs *fleetv1.FleetSet, planned []plan.Subset) []string {
	seen := map[string]bool{}
	for _, p := range planned {
		seen[p.Cluster] = true
	}
	for _, ss := range fs.Status.Subsets {
		if ss.Cluster != "" {
			seen[ss.Cluster] = true
		}
	}
	for _, s := range fs.Spec.Topology.Subsets {
		for _, c := range s.FallbackClusters {
			seen[c] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		if c != "" {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}
