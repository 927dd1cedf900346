package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// The reconcile step of a switchover an operator asked for
// (v1alpha1.AnnotationSwitchoverTo, kubectl fleetset switchover): outside
// any rollout, the leader's member runs the FleetSet's switchover
// lifecycle action in the leader once, with the instance asked for as its
// candidate; the hub waits for the leader role to move, up to
// spec.switchover.deadlineSeconds, then removes the annotation.
//
//  1. The hub takes the request: it checks it (manifestwork.SwitchoverTarget:
//     a leader role, a switchover action, an instance of the fleet other
//     than the leader), that the candidate can take the role
//     (unfitCandidate: delivered, Ready, in contact, unfenced) and that
//     exactly one leader is reported now, and
//     records it in status.requestedSwitchover (the leader, and when). A
//     request it cannot take is refused: a Warning event saying why, and
//     the annotation removed.
//  2. Once that status is written (read back from the cache, so a failed
//     status write never names a second request), the leader's subset gets
//     spec.actions.switchover {id, leader, candidate}; its member runs the
//     action once per id and reports it (status.actions.switchover, or
//     switchoverFailed while it fails and runs again).
//  3. When the members report another leader, the request is done (a
//     Normal event); when the deadline passes first, it failed (a Warning
//     event with the action's last failure). Either way the status entry
//     and the annotation are removed. Nothing else changes: the hub never
//     moves the role itself, nor replaces the leader.
//
// Changing the annotation replaces the request; removing it withdraws it
// (the member may still be running the action).

// Results of requested switchovers (fleetset_hub_requested_switchovers_total).
const (
	switchoverDone    = "done"
	switchoverFailed  = "failed"
	switchoverRefused = "refused"
)

var requestedSwitchovers = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fleetset_hub_requested_switchovers_total",
	Help: "Switchovers operators asked for (FleetSet annotation fleetset.io/switchover-to), by result: done (the leader role moved), failed (not within spec.switchover.deadlineSeconds), refused (not a valid request, or no single leader known).",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(requestedSwitchovers)
}

// Event reasons of requested switchovers.
const (
	EventSwitchoverRequested = "SwitchoverRequested"
	EventSwitchoverDone      = "SwitchoverDone"
	EventSwitchoverFailed    = "SwitchoverFailed"
	EventSwitchoverRefused   = "SwitchoverRefused"
	EventSwitchoverWithdrawn = "SwitchoverWithdrawn"
)

// switchoverPlan is the requested-switchover step's output.
type switchoverPlan struct {
	// status is status.requestedSwitchover to write (nil: none).
	status *fleetv1.RequestedSwitchoverStatus
	// clear: remove the annotation once the status is written.
	clear bool
	// result counts the request's end (requestedSwitchovers) once the
	// annotation is removed; "" while it runs.
	result string
	// events to emit once the status is written.
	events []pendingEvent
	// requeue is when the deadline passes (0: none).
	requeue time.Duration
}

// switchoverID names request r to the member (PlacementSwitchover.ID): the
// leader, when the hub took it (to the second) and the target, so that a
// request replaced within the same second by one for another target is
// another request.
func switchoverID(r *fleetv1.RequestedSwitchoverStatus) string {
	return r.Pod + "@" + r.RequestedAt.UTC().Format(time.RFC3339) + ">" + r.To
}

// planRequestedSwitchover decides st.switchover from st.fs's annotation,
// its last status.requestedSwitchover and the leaders the subsets report
// now, and gives the leader's subset its instruction (step 2 above). It
// runs after planLifecycle, which renders the subsets' actions.
func planRequestedSwitchover(st *state) {
	fs, sw := st.fs, &st.switchover
	to, asked := fs.Annotations[fleetv1.AnnotationSwitchoverTo]
	cur := fs.Status.RequestedSwitchover.DeepCopy()
	if !asked {
		if cur != nil {
			sw.events = append(sw.events, pendingEvent{corev1.EventTypeNormal, EventSwitchoverWithdrawn, fmt.Sprintf(
				"Annotation %s removed: the switchover of leader %s to %s is withdrawn (an action already started in it may still run)",
				fleetv1.AnnotationSwitchoverTo, cur.Pod, describeSwitchoverTarget(cur.To))})
		}
		return
	}
	if cur != nil && cur.To != to {
		cur = nil // replaced by a new request
	}
	leaders, _, _ := leadersOf(st)
	if cur == nil {
		takeSwitchover(st, to, leaders)
		return
	}
	deadline := time.Duration(fs.Spec.Switchover.DeadlineSecondsOrDefault()) * time.Second
	if len(leaders) == 1 && leaders[0].Name != cur.Pod {
		msg := fmt.Sprintf("The leader role moved from %s (cluster %s) to %s (cluster %s)", cur.Pod, cur.Cluster, leaders[0].Name, leaders[0].Cluster)
		if cur.To != fleetv1.SwitchoverToAny && cur.To != leaders[0].Name {
			msg += fmt.Sprintf(", not to %s as asked: the workload chose", cur.To)
		}
		sw.end(switchoverDone, corev1.EventTypeNormal, EventSwitchoverDone, msg+"; annotation "+fleetv1.AnnotationSwitchoverTo+" removed")
		return
	}
	sw.status = cur
	id, candidate := switchoverID(cur), cur.To
	if candidate == fleetv1.SwitchoverToAny {
		candidate = ""
	}
	var leaderSubset *subsetPlan
	for i := range st.subsets {
		if sp := &st.subsets[i]; sp.planned.Name == cur.Subset && sp.planned.Cluster == cur.Cluster && !sp.draining && sp.lifecycle.on {
			leaderSubset = sp
		}
	}
	ran := false
	if leaderSubset != nil && leaderSubset.actions != nil {
		a := leaderSubset.actions
		ran = a.Switchover == id
		if ran {
			cur.Failed = ""
		} else {
			cur.Failed = a.SwitchoverFailed
		}
	}
	end := cur.RequestedAt.Add(deadline)
	switch {
	case leaderSubset == nil:
		sw.end(switchoverFailed, corev1.EventTypeWarning, EventSwitchoverFailed, fmt.Sprintf(
			"Leader %s's subset %s is no longer delivered to cluster %s: the switchover is abandoned; annotation %s removed",
			cur.Pod, cur.Subset, cur.Cluster, fleetv1.AnnotationSwitchoverTo))
	case !st.now.Time.Before(end):
		// Ended: the instruction is not delivered again, so no member
		// runs the action after the hub gave up.
		why := "its member has not reported the switchover action done"
		switch {
		case ran:
			why = "the switchover action succeeded in it, but no member reported another leader"
		case cur.Failed != "":
			why = "the switchover action fails: " + cur.Failed
		}
		sw.end(switchoverFailed, corev1.EventTypeWarning, EventSwitchoverFailed, fmt.Sprintf(
			"Leader %s (cluster %s) did not hand its role to %s within %v (spec.switchover.deadlineSeconds): %s; annotation %s removed, the leader is unchanged",
			cur.Pod, cur.Cluster, describeSwitchoverTarget(cur.To), deadline, why, fleetv1.AnnotationSwitchoverTo))
	default:
		leaderSubset.lifecycle.switchover = &fleetv1.PlacementSwitchover{ID: id, Leader: cur.Pod, Candidate: candidate}
		sw.requeue = end.Sub(st.now.Time) + time.Second
	}
}

// takeSwitchover takes a new request for to (step 1), given the leaders
// reported now.
func takeSwitchover(st *state, to string, leaders []fleetv1.LeaderStatus) {
	sw := &st.switchover
	if len(leaders) == 1 && leaders[0].Name == to {
		sw.end(switchoverDone, corev1.EventTypeNormal, EventSwitchoverDone, fmt.Sprintf(
			"%s is the leader already; annotation %s removed", to, fleetv1.AnnotationSwitchoverTo))
		return
	}
	if r := st.fs.Status.Switchover; r != nil || st.rollout.switchover != nil {
		// A role-ordered rollout is asking the leader already: two
		// switchovers at once would run the action twice, with two
		// candidates.
		sw.end(switchoverRefused, corev1.EventTypeWarning, EventSwitchoverRefused, fmt.Sprintf(
			"%s=%q refused: a rolling update is at the leader's turn and asks it for a switchover itself (status.switchover); annotation removed",
			fleetv1.AnnotationSwitchoverTo, to))
		return
	}
	if _, err := manifestwork.SwitchoverTarget(st.fs, to); err != nil {
		sw.end(switchoverRefused, corev1.EventTypeWarning, EventSwitchoverRefused, fmt.Sprintf(
			"%s=%q refused: %v; annotation removed", fleetv1.AnnotationSwitchoverTo, to, err))
		return
	}
	if why := unfitCandidate(st, to); why != "" {
		sw.end(switchoverRefused, corev1.EventTypeWarning, EventSwitchoverRefused, fmt.Sprintf(
			"%s=%q refused: candidate %s %s; annotation removed", fleetv1.AnnotationSwitchoverTo, to, to, why))
		return
	}
	if len(leaders) != 1 {
		sw.end(switchoverRefused, corev1.EventTypeWarning, EventSwitchoverRefused, fmt.Sprintf(
			"%s=%q refused: %d instances report the leader role now, and a switchover needs exactly one; annotation removed",
			fleetv1.AnnotationSwitchoverTo, to, len(leaders)))
		return
	}
	l := leaders[0]
	deadline := time.Duration(st.fs.Spec.Switchover.DeadlineSecondsOrDefault()) * time.Second
	sw.status = &fleetv1.RequestedSwitchoverStatus{To: to, Pod: l.Name, Subset: l.Subset, Cluster: l.Cluster, RequestedAt: st.now}
	// The next reconcile hands the request to the leader's subset, once
	// the cache holds this status (step 2); the status write itself
	// brings no reconcile (FleetSet events pass on generation and
	// annotation changes only).
	sw.requeue = cacheWaitDelay
	sw.events = append(sw.events, pendingEvent{corev1.EventTypeNormal, EventSwitchoverRequested, fmt.Sprintf(
		"Asked leader %s (cluster %s) to hand its role to %s: its member runs the switchover action in it; deadline %v",
		l.Name, l.Cluster, describeSwitchoverTarget(to), deadline)})
}

// end ends the request with result: no status entry, the annotation
// removed, and an event.
func (sw *switchoverPlan) end(result, eventType, reason, message string) {
	sw.status, sw.clear, sw.result = nil, true, result
	sw.events = append(sw.events, pendingEvent{eventType, reason, message})
}

// describeSwitchoverTarget names a switchover target for messages.
func describeSwitchoverTarget(to string) string {
	if to == fleetv1.SwitchoverToAny {
		return "an instance the workload chooses"
	}
	return to
}

// foldRequestedSwitchover writes st.switchover's status entry.
func foldRequestedSwitchover(st *state, status *fleetv1.FleetSetStatus) {
	status.RequestedSwitchover = st.switchover.status
}

// clearSwitchoverRequest removes st.fs's AnnotationSwitchoverTo when the
// request ended, with a resourceVersion precondition, so that a request
// made since is not removed unread (a conflict: the reconcile runs again).
// It runs before the status write that drops status.requestedSwitchover:
// were the status written first and this patch lost, the next reconcile
// would take the annotation as a new request (with "*", a second
// switchover).
func (r *FleetSetReconciler) clearSwitchoverRequest(ctx context.Context, st *state) error {
	sw := &st.switchover
	if !sw.clear {
		return nil
	}
	if _, ok := st.fs.Annotations[fleetv1.AnnotationSwitchoverTo]; !ok {
		return nil
	}
	patch := client.MergeFromWithOptions(st.fs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(st.fs.Annotations, fleetv1.AnnotationSwitchoverTo)
	if err := r.Patch(ctx, st.fs, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing annotation %s: %w", fleetv1.AnnotationSwitchoverTo, err)
	}
	r.expectations.expectWrite(r.owner(st.fs), kindFleetSet, st.fs)
	if sw.result != "" {
		requestedSwitchovers.WithLabelValues(sw.result).Inc()
	}
	return nil
}

// memberInContact is the state a member reports on its heartbeat Lease
// (v1alpha1.AnnotationMemberState) while it reaches the hub: member/fence's
// InContact. Holding and Fenced members do not.
const memberInContact = "InContact"

// readContact fills st.contact, for a pending switchover request naming
// an instance, with why each cluster the subsets run on is out of the
// hub's contact ("" in contact): its member's heartbeat (r.Heartbeats)
// never observed, older than the member's heartbeat timeout (cut off), or
// its member reporting itself Holding or Fenced. Without a heartbeat
// observer nothing is recorded (the ManagedCluster's availability still
// counts, unfitCandidate).
func (r *FleetSetReconciler) readContact(st *state) {
	to, asked := st.fs.Annotations[fleetv1.AnnotationSwitchoverTo]
	if !asked || to == fleetv1.SwitchoverToAny || r.Heartbeats == nil {
		return
	}
	if cur := st.fs.Status.RequestedSwitchover; cur != nil && cur.To == to {
		return // taken already: only a new request is checked
	}
	st.contact = map[string]string{}
	for _, sp := range st.subsets {
		c := sp.planned.Cluster
		if _, done := st.contact[c]; done {
			continue
		}
		v, ok := r.Heartbeats.View(c)
		switch age := st.now.Sub(v.Observed); {
		case !ok:
			st.contact[c] = fmt.Sprintf("the hub has never observed the heartbeat of cluster %s's fleetset member component", c)
		case age > v.Timeout:
			st.contact[c] = fmt.Sprintf("cluster %s's member heartbeat was last observed %v ago, beyond its timeout %v: it is cut off from the hub",
				c, age.Round(time.Second), v.Timeout)
		case v.State != "" && v.State != memberInContact:
			st.contact[c] = fmt.Sprintf("cluster %s's member reports itself %s (%s)", c, v.State, v.Reason)
		default:
			st.contact[c] = ""
		}
	}
}

// unfitCandidate says why instance to (a desired instance, as
// manifestwork.SwitchoverTarget checked; "*" is always fit) cannot take the
// leader role now; "" when it can. A candidate must be
//
//   - delivered: in the ordinal block the hub delivers to its subset now,
//     the subset neither being removed (failing back, moving) nor failing
//     over;
//   - in contact: its cluster's ManagedCluster Available and its member's
//     heartbeat fresh, the member not Holding or Fenced (st.contact);
//   - Ready: the hub sees readiness per subset (the StatefulSet's
//     readyReplicas its member feeds back), so every instance of the
//     candidate's subset must be Ready, for the subset's current spec.
//
// A candidate cut off from the hub may be fenced at any moment (its member
// stops the pods once its fence grace is over), or already stopped: the
// role handed to it would be lost with it.
func unfitCandidate(st *state, to string) string {
	if to == fleetv1.SwitchoverToAny || to == "" {
		return ""
	}
	for _, sp := range st.subsets {
		p := sp.planned
		rest, ok := strings.CutPrefix(to, manifestwork.StatefulSetName(st.fs.Name, p.Name)+"-")
		if !ok {
			continue
		}
		n, err := manifestwork.ParseOrdinal(rest)
		if err != nil || !manifestwork.InBlock(n, p.OrdinalStart, p.Replicas) {
			continue
		}
		f := sp.feedback
		switch {
		case sp.draining:
			return fmt.Sprintf("is not delivered to run: subset %s is being removed from cluster %s (%s)", p.Name, p.Cluster, sp.failoverPhase)
		case sp.failoverPhase == fleetv1.SubsetFailingOver:
			return fmt.Sprintf("is on a lost cluster: subset %s is failing over from cluster %s", p.Name, p.Cluster)
		case !sp.clusterExists || !sp.clusterAvailable:
			return fmt.Sprintf("is out of contact: ManagedCluster %s is not Available", p.Cluster)
		case st.contact[p.Cluster] != "":
			return "is out of contact: " + st.contact[p.Cluster]
		case f == nil || !f.Current():
			return fmt.Sprintf("is not known Ready: cluster %s has not fed back subset %s's StatefulSet status for its current spec", p.Cluster, p.Name)
		case f.ReadyReplicas < p.Replicas:
			return fmt.Sprintf("is not known Ready: subset %s on cluster %s reports %d of its %d instances Ready (the hub sees readiness per subset: every instance of the candidate's subset must be Ready)",
				p.Name, p.Cluster, f.ReadyReplicas, p.Replicas)
		}
		return ""
	}
	return "is not an instance the hub delivers now (status.subsets may be ahead of the current division)"
}
