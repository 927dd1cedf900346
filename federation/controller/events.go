package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// The events of a status change, emitted once the status holding it is
// written.

// NewEventBroadcaster returns the hub's event broadcaster: client-go's, with
// its spam filter keyed per reason as well as per object (eventSpamKey).
// client-go's filter allows 25 events per object, then one per 5 minutes,
// across every reason: a rolling update writes a FleetSet's works once per
// instance step, and its WorksApplied events used to use up the allowance so
// that the rollout's own SubsetUpdating/SubsetUpdated events, and any
// Warning after them, were dropped without a trace. Per reason, each kind of
// event keeps client-go's 25 and one per 5 minutes.
func NewEventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: eventSpamKey}))
}

// eventSpamKey returns the spam filter's key of event: client-go's fields
// (source, involved object, type) and the reason.
func eventSpamKey(event *corev1.Event) string {
	return strings.Join([]string{
		event.Source.Component, event.Source.Host,
		event.InvolvedObject.Kind, event.InvolvedObject.Namespace, event.InvolvedObject.Name,
		string(event.InvolvedObject.UID), event.InvolvedObject.APIVersion,
		event.Type, event.Reason,
	}, "/")
}

// statusEvents returns the events of the change from old to cur: Degraded
// reported or changed (counted in degradedReports), rollout steps and
// switchover steps.
func statusEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	events := problemEvents(old, cur)
	for _, e := range events {
		degradedReports.WithLabelValues(e.reason).Inc()
	}
	events = append(events, rolloutEvents(old, cur)...)
	return append(events, switchoverEvents(old, cur)...)
}

// problemEvents returns a Warning event when Degraded became True or changed
// its message, so a lasting problem is reported once, not per reconcile.
func problemEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	c := apimeta.FindStatusCondition(cur.Conditions, fleetv1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	if o := apimeta.FindStatusCondition(old.Conditions, fleetv1.ConditionDegraded); o != nil && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
		return nil
	}
	return []pendingEvent{{corev1.EventTypeWarning, c.Reason, c.Message}}
}

// rolloutEvents returns one Normal event per subset step of a rollout: a
// subset that became Updating, or that became Updated while old shows a
// rollout under way (its updateRevision set and not yet current): from
// Updating, and also from any other phase, since a subset whose cluster was
// cut off mid-step may come back already updated without its status ever
// showing the end of Updating.
func rolloutEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	rolling := old.UpdateRevision != "" && old.UpdateRevision != old.CurrentRevision
	was := map[string]fleetv1.SubsetRolloutPhase{}
	for _, ss := range old.Subsets {
		was[ss.Name] = ss.Rollout
	}
	var out []pendingEvent
	for _, ss := range cur.Subsets {
		switch {
		case ss.Rollout == fleetv1.SubsetUpdating && was[ss.Name] != fleetv1.SubsetUpdating:
			out = append(out, pendingEvent{corev1.EventTypeNormal, EventSubsetUpdating,
				fmt.Sprintf("Updating subset %s on cluster %s to revision %s", ss.Name, ss.Cluster, cur.UpdateRevision)})
		case ss.Rollout == fleetv1.SubsetUpdated && was[ss.Name] != fleetv1.SubsetUpdated &&
			(was[ss.Name] == fleetv1.SubsetUpdating || rolling):
			out = append(out, pendingEvent{corev1.EventTypeNormal, EventSubsetUpdated,
				fmt.Sprintf("Subset %s on cluster %s updated to revision %s", ss.Name, ss.Cluster, cur.UpdateRevision)})
		}
	}
	return out
}

// switchoverEvents returns the events of a role-ordered rollout's
// switchover: requested (Normal), skipped after the deadline (Warning,
// BestEffort), held (Warning, Required), each once.
func switchoverEvents(old, cur *fleetv1.FleetSetStatus) []pendingEvent {
	s := cur.Switchover
	if s == nil {
		return nil
	}
	var out []pendingEvent
	o := old.Switchover
	if o == nil || o.Pod != s.Pod {
		out = append(out, pendingEvent{corev1.EventTypeNormal, "SwitchoverRequested",
			fmt.Sprintf("Every other instance is updated: asked leader %s in cluster %s to hand its role over before it is updated", s.Pod, s.Cluster)})
		o = &fleetv1.SwitchoverStatus{}
	}
	if s.Skipped && !o.Skipped {
		out = append(out, pendingEvent{corev1.EventTypeWarning, fleetv1.ReasonSwitchoverSkipped,
			fmt.Sprintf("Leader %s in cluster %s did not hand its role over before the deadline: updating it anyway (switchover policy BestEffort)", s.Pod, s.Cluster)})
	}
	if s.Held && !o.Held {
		out = append(out, pendingEvent{corev1.EventTypeWarning, fleetv1.ReasonSwitchoverHeld,
			fmt.Sprintf("Leader %s in cluster %s did not hand its role over before the deadline: the rollout holds (switchover policy Required)", s.Pod, s.Cluster)})
	}
	return out
}
