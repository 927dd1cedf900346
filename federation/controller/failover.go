package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
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

// planFailover is the reconcile's failover step (package failover): it
// gathers the planner's inputs (failoverInputs), lets failover.Plan decide
// where each subset runs (placeSubsets) and reports the decision as
// problems, step events and when to plan again (reportFailover). It returns
// the subsets placed where they run (Cluster, Domains) and each one's
// decision, in planned's order. Errors are heartbeat reads.
func (r *FleetSetReconciler) planFailover(ctx context.Context, st *state, planned []plan.Subset) ([]plan.Subset, []subsetFailover, error) {
	in, err := r.failoverInputs(ctx, st, planned)
	if err != nil {
		return nil, nil, err
	}
	decisions := failover.Plan(in.spec, in.subsets, in.clusters, st.now.Time)
	placed, out := placeSubsets(st.fs, planned, in, decisions)
	admitPlaced(st, placed)
	reportFailover(st, in, decisions, out)
	return placed, out, nil
}

// failoverInput is what failover.Plan decides from.
type failoverInput struct {
	spec    failover.Spec
	subsets []failover.Subset
	// clusters are read only with policy Relocate or a subset moving.
	clusters map[string]failover.Cluster
}

// failoverInputs resolves the failover spec and each planned subset's
// failover state (status.subsets), and reads the clusters they use or may
// use (failoverCluster).
func (r *FleetSetReconciler) failoverInputs(ctx context.Context, st *state, planned []plan.Subset) (failoverInput, error) {
	fs := st.fs
	in := failoverInput{spec: failoverSpec(fs), subsets: make([]failover.Subset, len(planned)), clusters: map[string]failover.Cluster{}}
	in.spec.Disrupted = r.Heartbeats != nil && r.Heartbeats.Disrupted()
	prev := map[string]fleetv1.SubsetStatus{}
	for name, ss := range st.rebuilt {
		prev[name] = ss
	}
	for _, ss := range fs.Status.Subsets {
		prev[ss.Name] = ss
	}
	for name, ss := range st.learned {
		prev[name] = ss
	}
	names := map[string]bool{}
	moving := false
	for i, p := range planned {
		s := failoverSubset(fs, p, prev[p.Name])
		moving = moving || s.Phase == fleetv1.SubsetMoving
		in.subsets[i] = s
		for _, c := range append([]string{p.Cluster, s.Current}, s.Fallbacks...) {
			if c != "" {
				names[c] = true
			}
		}
	}
	if !in.spec.Relocate && !moving {
		return in, nil
	}
	for c := range names {
		cl, err := r.failoverCluster(ctx, st, c, in.subsets)
		if err != nil {
			return in, err
		}
		cl.Cordoned = fs.Spec.Topology.Cordoned(c)
		in.clusters[c] = cl
	}
	return in, nil
}

// failoverSubset is planned subset p's failover state, from its status ps:
// in failover, or moving when its spec cluster was edited.
func failoverSubset(fs *fleetv1.FleetSet, p plan.Subset, ps fleetv1.SubsetStatus) failover.Subset {
	s := failover.Subset{Name: p.Name, Home: p.Cluster, Epoch: ps.Epoch, Replicas: p.Replicas}
	switch {
	case ps.Failover != "":
		s.Current, s.Phase = ps.Cluster, ps.Failover
	case ps.Cluster != "" && ps.Cluster != p.Cluster:
		// The spec cluster was edited: a two-phase move.
		s.Current, s.Phase = ps.Cluster, fleetv1.SubsetMoving
	}
	for _, spec := range fs.Spec.Topology.Subsets {
		if spec.Name == p.Name {
			s.Fallbacks = spec.FallbackClusters
		}
	}
	return s
}

// placeSubsets turns the planner's decisions into the subsets placed where
// they run and each one's failover decision (epoch, fencing, phase). A
// relocated subset keeps its domains when the fallback cluster's subsets
// name them all, else runs without (spreadOnly says why). A subset not
// delivered to run drains: scaled to 0 where it runs, until its pods are gone.
func placeSubsets(fs *fleetv1.FleetSet, planned []plan.Subset, in failoverInput, decisions []failover.Decision) ([]plan.Subset, []subsetFailover) {
	placed := slices.Clone(planned)
	out := make([]subsetFailover, len(decisions))
	for i, d := range decisions {
		placed[i].Cluster = d.Cluster
		out[i] = subsetFailover{epoch: d.Epoch, draining: !d.Deliver, failoverPhase: d.Phase}
		if d.Cluster != in.subsets[i].Home {
			var missing string
			if placed[i].Domains, missing = plan.RelocatedDomains(planned, planned[i], d.Cluster); missing != "" {
				out[i].spreadOnly = fmt.Sprintf("spread over %s's nodes without its domains: no subset of cluster %s names domain %s", d.Cluster, d.Cluster, missing)
			}
		}
		if in.spec.Relocate {
			out[i].fencing = &fleetv1.PlacementFencing{GraceSeconds: fs.Spec.Failover.FenceGraceSeconds, Epoch: d.Epoch}
		}
	}
	return placed, out
}

// reportFailover records each subset's failover problem, its step events
// (and a held relocation's, once per hold), and when a wait ends.
func reportFailover(st *state, in failoverInput, decisions []failover.Decision, out []subsetFailover) {
	for i, d := range decisions {
		s := in.subsets[i]
		if p, ok := failoverProblem(s, d, out[i].spreadOnly); ok {
			st.report(p)
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
		if d.Held && !heldBefore(st.fs, d.Waiting) {
			st.failoverEvents = append(st.failoverEvents, pendingEvent{corev1.EventTypeWarning, EventRelocationHeld, d.Waiting})
			relocationHolds.Inc()
		}
		if !d.Retry.IsZero() {
			st.failoverRequeue = minPositive(st.failoverRequeue, max(time.Second, d.Retry.Sub(st.now.Time)+time.Second))
		}
	}
}

// failoverProblem is the problem of subset s's failover phase in decision
// d (false at home): FailingOver (RelocationHeld when held), FailedOver,
// Moving or FailingBack, on the cluster where it runs now.
func failoverProblem(s failover.Subset, d failover.Decision, spreadOnly string) (problem, bool) {
	var reason string
	msg := d.Waiting
	switch d.Phase {
	case fleetv1.SubsetFailingOver:
		reason = fleetv1.ReasonFailingOver
		if d.Held {
			reason = fleetv1.ReasonRelocationHeld
		}
	case fleetv1.SubsetFailedOver:
		reason = fleetv1.ReasonFailedOver
		msg = fmt.Sprintf("relocated from home cluster %s, epoch %d", s.Home, d.Epoch)
		if d.Waiting != "" {
			msg += "; " + d.Waiting
		}
		if spreadOnly != "" {
			msg += "; " + spreadOnly
		}
	case fleetv1.SubsetMoving:
		reason = fleetv1.ReasonMoving
	case fleetv1.SubsetFailingBack:
		reason = fleetv1.ReasonFailingBack
		if msg == "" {
			msg = fmt.Sprintf("being removed before it returns to %s", s.Home)
		}
	default:
		return problem{}, false
	}
	return subsetProblem(reason, s.Name, d.Cluster, msg), true
}

// failoverCluster is what failover needs of cluster c: existence,
// availability and since when, an out-of-service taint (st.clusters), what
// the hub has observed of the member's heartbeat and so when the member has
// certainly fenced itself (fenceDeadline), and whether it has applied the
// hub's latest ManifestWork of this FleetSet without the subsets failing
// back from it.
func (r *FleetSetReconciler) failoverCluster(ctx context.Context, st *state, c string, subsets []failover.Subset) (failover.Cluster, error) {
	var out failover.Cluster
	if mc := st.clusters[c]; mc != nil {
		out.Exists, out.Available, out.Since = true, isAvailable(mc), mc.CreationTimestamp.Time
		if cond := apimeta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); cond != nil {
			out.Since = cond.LastTransitionTime.Time
		}
		out.Confirmed = outOfService(mc)
	}
	w, ok := st.existingWorks[st.workKey(c)]
	if !out.Available {
		// Deleted too: a deleted ManagedCluster is unknown, and waits
		// for its member's deadline as an unavailable one does.
		if err := r.fenceDeadline(ctx, st.fs, w, c, out.Exists, &out); err != nil {
			return out, err
		}
	}
	// For a deleted cluster the planner ignores it: its works go with it.
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

// fenceDeadline sets out.Heartbeat, out.NoPeers, out.Fenced and out.Deadline for lost
// cluster c: the member's fence deadline as the member computes it,
// counted from the hub's own observation (api/v1alpha1/member.go). It reads
// the heartbeat Lease live first, so that a renewal the cache has not shown
// yet counts. The fence in it is the longest of the spec's (fenceGraceSeconds
// + terminationGracePeriodSeconds), the one the member reported at its last
// heartbeat (AnnotationMemberFenceSeconds) and the one fs's ManifestWork w
// for c (nil: none) may have made it enforce (manifestwork.EnforceableFence:
// a longer grace delivered and applied after the member's last heartbeat).
// For a cluster whose ManagedCluster does not exist (exists false) it
// counts from the hub's record of the departed member's heartbeats
// (heartbeat.Observer.Departed); none: out.Heartbeat stays false, and the
// planner holds.
func (r *FleetSetReconciler) fenceDeadline(ctx context.Context, fs *fleetv1.FleetSet, w *workv1.ManifestWork, c string, exists bool, out *failover.Cluster) error {
	if r.Heartbeats == nil {
		return nil
	}
	if err := r.Heartbeats.Refresh(ctx, r.liveReader(), c); err != nil {
		return err
	}
	v, ok := r.Heartbeats.View(c)
	if !ok && !exists {
		v, ok = r.Heartbeats.Departed(c)
	}
	if !ok {
		return nil
	}
	var grace time.Duration
	if f := fs.Spec.Failover; f != nil {
		grace = time.Duration(f.FenceGraceSeconds) * time.Second
	}
	term := terminationGrace(fs)
	since := r.Heartbeats.Since(v)
	out.Heartbeat, out.NoPeers = true, v.Peers == 0
	confirm := fleetv1.FenceConfirmation(v.Timeout)
	fence := fmt.Sprintf("fenceGraceSeconds %s + terminationGracePeriodSeconds %s", grace, term)
	// The member enforces the fence it had at its last heartbeat, whatever
	// the spec says now: wait for the longer of the two.
	if enforced := time.Duration(v.FenceSeconds) * time.Second; enforced > grace+term {
		grace, term = enforced, 0
		fence = fmt.Sprintf("the fence the member enforces %s (its fence grace and its pods' termination grace, as it last reported them; the spec's is shorter)", enforced)
	}
	// A longer grace the hub delivered may have reached the member after
	// its last heartbeat: it enforces that one, reported or not.
	if delivered := time.Duration(manifestwork.EnforceableFence(w)) * time.Second; delivered > grace+term {
		grace, term = delivered, 0
		fence = fmt.Sprintf("the fence the hub delivered to %s %s (a longer fence grace, or its pods' termination grace, its work agent may have applied after its last heartbeat; the spec's and the member's last report are shorter)", c, delivered)
	}
	out.Fenced = since.Add(v.Timeout + confirm + grace + term + r.RelocationMargin)
	out.Deadline = fmt.Sprintf("heartbeat last observed or disruption ended at %s + timeout %s + confirmation %s + %s + margin %s",
		since.UTC().Format(time.RFC3339), v.Timeout, confirm, fence, r.RelocationMargin)
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
