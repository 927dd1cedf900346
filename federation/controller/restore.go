package controller

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
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
