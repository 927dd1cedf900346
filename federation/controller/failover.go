package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/failover"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// Event reasons of failover steps.
const (
	EventFailedOver  = "FailedOver"
	EventFailingBack = "FailingBack"
	EventFailedBack  = "FailedBack"
	// EventRelocationHeld: a due relocation is held (full disruption, the
	// FleetSet's majority lost, or no heartbeat from the lost member).
	EventRelocationHeld = "RelocationHeld"
	// EventMoved: a subset whose spec cluster was edited reached its new
	// cluster, after its old cluster removed it.
	EventMoved = "Moved"
)

// failoverSpec resolves fs.spec.failover.
func failoverSpec(fs *fleetv1.FleetSet) failover.Spec {
	f := fs.Spec.Failover
	if f == nil || f.Policy != fleetv1.FailoverRelocate {
		return failover.Spec{}
	}
	secs := f.TolerationSecondsOrDefault()
	_, requested := fs.Annotations[fleetv1.AnnotationFailback]
	return failover.Spec{Relocate: true, Toleration: time.Duration(secs) * time.Second,
		Automatic: f.Failback == fleetv1.FailbackAutomatic, FailbackRequested: requested}
}

// terminationGrace is the largest time a pod of fs's template may take to
// stop once deleted: terminationGracePeriodSeconds (default 30, as the API
// defaults it).
func terminationGrace(fs *fleetv1.FleetSet) time.Duration {
	return time.Duration(fs.Spec.TerminationGracePeriodSecondsOrDefault()) * time.Second
}

// planFailover runs the failover planner (package failover) over the plan's
// subsets and applies its decision in place: each subset's cluster (where it
// runs now), epoch and fencing. A relocated subset keeps its domains, so
// that every ordinal keeps its zone, when a subset homed in the fallback
// cluster names each of them; otherwise it is spread only there (the hub
// knows no other domains of that cluster) and its FailedOver problem says
// so. It records which subsets
// drain (failing back or moving) and their phases, in planned's order, and the
// failover problems, step events and when to plan again. Errors are reads
// of ManagedClusters or works.
func (r *FleetSetReconciler) planFailover(ctx context.Context, st *state, planned []plan.Subset) ([]subsetFailover, error) {
	fs := st.fs
	spec := failoverSpec(fs)
	spec.Disrupted = r.Heartbeats != nil && r.Heartbeats.Disrupted()
	out := make([]subsetFailover, len(planned))
	prev := map[string]fleetv1.SubsetStatus{}
	for _, ss := range fs.Status.Subsets {
		prev[ss.Name] = ss
	}
	subsets := make([]failover.Subset, len(planned))
	names := map[string]bool{}
	moving := false
	for i, p := range planned {
		ps := prev[p.Name]
		s := failover.Subset{Name: p.Name, Home: p.Cluster, Epoch: ps.Epoch, Replicas: p.Replicas}
		switch {
		case ps.Failover != "":
			s.Current, s.Phase = ps.Cluster, ps.Failover
		case ps.Cluster != "" && ps.Cluster != p.Cluster:
			// The spec cluster was edited: a two-phase move.
			s.Current, s.Phase = ps.Cluster, fleetv1.SubsetMoving
		}
		if s.Phase == fleetv1.SubsetMoving {
			moving = true
		}
		for _, spec := range fs.Spec.Topology.Subsets {
			if spec.Name == p.Name {
				s.Fallbacks = spec.FallbackClusters
			}
		}
		subsets[i] = s
		for _, c := range append([]string{p.Cluster, s.Current}, s.Fallbacks...) {
			if c != "" {
				names[c] = true
			}
		}
	}
	clusters := map[string]failover.Cluster{}
	if spec.Relocate || moving {
		for c := range names {
			cl, err := r.failoverCluster(ctx, st, c, subsets)
			if err != nil {
				return nil, err
			}
			clusters[c] = cl
		}
	}
	now := st.now.Time
	homes := slices.Clone(planned)    // each subset at its spec cluster
	spreadOnly := map[string]string{} // subset → why it runs without its domains
	for i, d := range failover.Plan(spec, subsets, clusters, now) {
		p, s := &planned[i], subsets[i]
		p.Cluster, p.Epoch = d.Cluster, d.Epoch
		if d.Cluster != s.Home {
			var missing string
			if p.Domains, missing = plan.RelocatedDomains(homes, homes[i], d.Cluster); missing != "" {
				spreadOnly[p.Name] = fmt.Sprintf("spread over %s's nodes without its domains: no subset of cluster %s names domain %s", d.Cluster, d.Cluster, missing)
			}
		}
		if spec.Relocate {
			p.Fencing = &fleetv1.PlacementFencing{GraceSeconds: fs.Spec.Failover.FenceGraceSeconds, Epoch: d.Epoch}
		}
		// Not delivered to run (failing back, or moving by a spec edit):
		// scaled to 0 where it runs now, so that it reaches its next
		// cluster only once this one reports its pods gone, not merely its
		// ManifestWork applied (the work agent reports Applied before a
		// removed StatefulSet's pods have stopped).
		out[i] = subsetFailover{draining: !d.Deliver, failoverPhase: d.Phase}
		switch d.Phase {
		case fleetv1.SubsetFailingOver:
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonFailingOver, Subset: p.Name, Cluster: d.Cluster, Message: d.Waiting})
		case fleetv1.SubsetFailedOver:
			msg := fmt.Sprintf("relocated from home cluster %s, epoch %d", s.Home, d.Epoch)
			if why := spreadOnly[p.Name]; why != "" {
				msg += "; " + why
			}
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonFailedOver, Subset: p.Name, Cluster: d.Cluster, Message: msg})
		case fleetv1.SubsetMoving:
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonMoving, Subset: p.Name, Cluster: d.Cluster, Message: d.Waiting})
		case fleetv1.SubsetFailingBack:
			msg := d.Waiting
			if msg == "" {
				msg = fmt.Sprintf("being removed before it returns to %s", s.Home)
			}
			st.problems = append(st.problems, plan.Problem{Reason: fleetv1.ReasonFailingBack, Subset: p.Name, Cluster: d.Cluster, Message: msg})
		}
		if d.Step != "" {
			reason, typ := EventFailedOver, corev1.EventTypeWarning
			switch {
			case d.Phase == fleetv1.SubsetFailingBack:
				reason, typ = EventFailingBack, corev1.EventTypeNormal
			case s.Phase == fleetv1.SubsetFailingBack:
				reason, typ = EventFailedBack, corev1.EventTypeNormal
			case s.Phase == fleetv1.SubsetMoving:
				reason, typ = EventMoved, corev1.EventTypeNormal
			}
			st.failoverEvents = append(st.failoverEvents, pendingEvent{typ, reason, d.Step})
			relocations.WithLabelValues(reason).Inc()
		}
		if d.Held && !heldBefore(fs, d.Waiting) {
			st.failoverEvents = append(st.failoverEvents, pendingEvent{corev1.EventTypeWarning, EventRelocationHeld, d.Waiting})
			relocationHolds.Inc()
		}
		if d.Held {
			st.problems[len(st.problems)-1].Reason = fleetv1.ReasonRelocationHeld
		}
		if !d.Retry.IsZero() {
			st.failoverRequeue = minPositive(st.failoverRequeue, max(time.Second, d.Retry.Sub(now)+time.Second))
		}
	}
	return out, nil
}

// failoverCluster reads what failover needs of cluster c: existence,
// availability and since when, an out-of-service taint, what the hub has
// observed of the member's heartbeat and so when the member has certainly
// fenced itself (fenceDeadline), and whether it has applied the hub's latest
// ManifestWork of this FleetSet without the subsets failing back from it.
func (r *FleetSetReconciler) failoverCluster(ctx context.Context, st *state, c string, subsets []failover.Subset) (failover.Cluster, error) {
	var out failover.Cluster
	mc := &clusterv1.ManagedCluster{}
	switch err := r.Get(ctx, types.NamespacedName{Name: c}, mc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return out, fmt.Errorf("getting ManagedCluster %s: %w", c, err)
	default:
		out.Exists, out.Available, out.Since = true, isAvailable(mc), mc.CreationTimestamp.Time
		if cond := apimeta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); cond != nil {
			out.Since = cond.LastTransitionTime.Time
		}
		out.Confirmed = outOfService(mc)
	}
	if out.Exists && !out.Available {
		if err := r.fenceDeadline(ctx, st.fs, c, &out); err != nil {
			return out, err
		}
	}
	w, ok := st.existingWorks[st.workKey(c)]
	out.Removed = !ok || (w.DeletionTimestamp.IsZero() && manifestwork.AppliedAtGeneration(w))
	if ok && out.Removed {
		for _, s := range subsets {
			sts := manifestwork.StatefulSetName(st.fs.Name, s.Name)
			if (s.Phase == fleetv1.SubsetFailingBack || s.Phase == fleetv1.SubsetMoving) && manifestwork.HoldsStatefulSet(w, sts) {
				// Delivered with replicas 0 (draining): removed once c
				// reports that none of its pods is left.
				out.Removed = manifestwork.Drained(w, sts)
			}
			if !out.Removed {
				break
			}
		}
	}
	return out, nil
}

// fenceDeadline sets out.Heartbeat, out.Fenced and out.Deadline for lost
// cluster c: the member's fence deadline as the member computes it,
// counted from the hub's own observation (api/v1alpha1/member.go). It reads
// the heartbeat Lease live first, so that a renewal the cache has not shown
// yet counts.
func (r *FleetSetReconciler) fenceDeadline(ctx context.Context, fs *fleetv1.FleetSet, c string, out *failover.Cluster) error {
	if r.Heartbeats == nil {
		return nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	if err := r.Heartbeats.Refresh(ctx, reader, c); err != nil {
		return err
	}
	v, ok := r.Heartbeats.View(c)
	if !ok {
		return nil
	}
	var grace time.Duration
	if f := fs.Spec.Failover; f != nil {
		grace = time.Duration(f.FenceGraceSeconds) * time.Second
	}
	term := terminationGrace(fs)
	since := r.Heartbeats.Since(v)
	out.Heartbeat = true
	confirm := fleetv1.FenceConfirmation(v.Timeout)
	out.Fenced = since.Add(v.Timeout + confirm + grace + term + r.RelocationMargin)
	out.Deadline = fmt.Sprintf("heartbeat last observed or disruption ended at %s + timeout %s + confirmation %s + fenceGraceSeconds %s + terminationGracePeriodSeconds %s + margin %s",
		since.UTC().Format(time.RFC3339), v.Timeout, confirm, grace, term, r.RelocationMargin)
	if v.State != "" {
		out.Deadline += fmt.Sprintf("; member last reported %s: %s", v.State, v.Reason)
	}
	return nil
}

// heldBefore reports whether fs's Degraded condition already carries the
// hold message msg, so its event is emitted once per hold and subset.
func heldBefore(fs *fleetv1.FleetSet, msg string) bool {
	c := apimeta.FindStatusCondition(fs.Status.Conditions, fleetv1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, msg)
}

// clearFailbackRequest removes the fleetset.io/failback annotation once no
// subset is relocated or failing back.
func (r *FleetSetReconciler) clearFailbackRequest(ctx context.Context, st *state) error {
	if _, ok := st.fs.Annotations[fleetv1.AnnotationFailback]; !ok || len(st.subsets) == 0 {
		return nil
	}
	for _, sp := range st.subsets {
		if sp.failoverPhase != "" {
			return nil
		}
	}
	patch := client.MergeFrom(st.fs.DeepCopy())
	delete(st.fs.Annotations, fleetv1.AnnotationFailback)
	if err := r.Patch(ctx, st.fs, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.expectations.expectWrite(r.owner(st.fs), kindFleetSet, st.fs)
	return nil
}

// minPositive returns the smaller of two durations, ignoring zeros.
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
