package updater

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Input is what Compute decides from.
type Input struct {
	// StatefulSet is the placement's StatefulSet S.
	StatefulSet *appsv1.StatefulSet
	// Pods are candidate pods; only those whose controller is S (by UID)
	// count.
	Pods []*v1.Pod
	// Roles are the placement's spec.roles.roles.
	Roles []fleetv1.Role
	// Update is the placement's spec.update.
	Update fleetv1.PlacementUpdate
	// Now is the time availability (minReadySeconds) is measured at.
	Now time.Time
	// Deleting holds the UIDs of pods this process deleted that may still
	// look alive in its cache: they count as being deleted.
	Deleting map[types.UID]bool
}

// Plan is what Compute decided.
type Plan struct {
	// Wait, when not empty, says why nothing is to be done (S is not on
	// OnDelete, or its status is not up to date).
	Wait string
	// Settling is true when Wait is about S's status not being up to date
	// yet (a passing state).
	Settling bool
	// Revision is S's status.updateRevision.
	Revision string
	// Outdated are the pods of S's desired ordinals, not being deleted,
	// whose controller-revision-hash is not Revision, in deletion order
	// (leaders last).
	Outdated []*v1.Pod
	// Unavailable names the desired ordinals whose pod is missing, being
	// deleted or not available, as "<pod> (<why>)".
	Unavailable []string
	// Budget is update.maxUnavailable minus len(Unavailable) (may be
	// negative).
	Budget int
	// Delete are the pods to delete now, in order.
	Delete []*v1.Pod
	// Switchover are the outdated leaders to annotate
	// fleetset.io/switchover-requested (leader Switchover, not annotated
	// yet).
	Switchover []*v1.Pod
	// HeldLeaders are the outdated leaders left as they are (leader Hold or
	// Switchover, or Update while other instances are outdated).
	HeldLeaders []*v1.Pod
}

// Compute decides, for the StatefulSet of a placement with spec.update and
// spec.roles, which of its outdated pods to delete now and which leader to
// ask for a switchover (see the package documentation). It is pure: it
// reads only in.
func Compute(in Input) Plan {
	sts := in.StatefulSet
	var pl Plan
	if pl.Wait, pl.Settling = unplannable(sts); pl.Wait != "" {
		return pl
	}
	pl.Revision = sts.Status.UpdateRevision
	followers, leaders := pl.survey(in)
	order := updateOrder(sts.Name, in.Roles)
	slices.SortFunc(followers, order)
	slices.SortFunc(leaders, order)
	pl.Outdated = append(slices.Clip(followers), leaders...)
	pl.Budget = int(in.Update.MaxUnavailable) - len(pl.Unavailable)
	pl.choose(in.Update, followers, leaders)
	return pl
}

// unplannable says why sts cannot be planned for yet, and whether that is a
// passing state (its status not up to date yet); "" when it can be.
func unplannable(sts *appsv1.StatefulSet) (wait string, settling bool) {
	switch {
	case sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType:
		t := cmp.Or(string(sts.Spec.UpdateStrategy.Type), string(appsv1.RollingUpdateStatefulSetStrategyType))
		return fmt.Sprintf("StatefulSet %s has updateStrategy %s, not OnDelete", sts.Name, t), false
	case sts.Status.ObservedGeneration != sts.Generation:
		return fmt.Sprintf("StatefulSet %s: status.observedGeneration %d, generation %d", sts.Name, sts.Status.ObservedGeneration, sts.Generation), true
	case sts.Status.UpdateRevision == "":
		return fmt.Sprintf("StatefulSet %s has no status.updateRevision yet", sts.Name), true
	}
	return "", false
}

// survey fills pl.Unavailable from the pods of the StatefulSet's desired
// ordinals and returns its outdated followers and leaders, unordered.
func (pl *Plan) survey(in Input) (followers, leaders []*v1.Pod) {
	sts := in.StatefulSet
	start, replicas := Ordinals(sts)
	byOrdinal := map[int]*v1.Pod{}
	for _, p := range in.Pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != sts.UID {
			continue
		}
		n, ok := Ordinal(sts.Name, p.Name)
		if !ok || n < start || n >= start+replicas {
			continue // scaled away: the StatefulSet controller removes it
		}
		byOrdinal[n] = p
	}
	leaderRole := map[string]bool{}
	for _, r := range in.Roles {
		leaderRole[r.Name] = r.IsLeader
	}
	for n := start; n < start+replicas; n++ {
		name := sts.Name + "-" + strconv.Itoa(n)
		p := byOrdinal[n]
		switch {
		case p == nil:
			pl.Unavailable = append(pl.Unavailable, name+" (missing)")
			continue
		case p.DeletionTimestamp != nil || in.Deleting[p.UID]:
			pl.Unavailable = append(pl.Unavailable, name+" (being deleted)")
			continue
		}
		if why := unavailable(p, sts.Spec.MinReadySeconds, in.Now); why != "" {
			pl.Unavailable = append(pl.Unavailable, name+" ("+why+")")
		}
		if hash := p.Labels[appsv1.ControllerRevisionHashLabelKey]; hash == "" || hash == pl.Revision {
			continue
		}
		if leaderRole[p.Labels[fleetv1.LabelRole]] {
			leaders = append(leaders, p)
		} else {
			followers = append(followers, p)
		}
	}
	return followers, leaders
}

// updateOrder orders the pods of StatefulSet name by their role's
// updatePriority, then the highest ordinal first.
func updateOrder(name string, roles []fleetv1.Role) func(a, b *v1.Pod) int {
	priority := map[string]int32{}
	for _, r := range roles {
		priority[r.Name] = r.UpdatePriority
	}
	return func(a, b *v1.Pod) int {
		if c := cmp.Compare(priority[a.Labels[fleetv1.LabelRole]], priority[b.Labels[fleetv1.LabelRole]]); c != 0 {
			return c
		}
		na, _ := Ordinal(name, a.Name)
		nb, _ := Ordinal(name, b.Name)
		return cmp.Compare(nb, na)
	}
}

// choose fills pl.Delete, pl.Switchover and pl.HeldLeaders from the ordered
// outdated followers and leaders, within pl.Budget.
func (pl *Plan) choose(update fleetv1.PlacementUpdate, followers, leaders []*v1.Pod) {
	budget := pl.Budget
	for _, p := range followers {
		if budget <= 0 {
			break
		}
		pl.Delete = append(pl.Delete, p)
		budget--
	}
	for _, p := range leaders {
		switch {
		case update.Leader == fleetv1.LeaderUpdateNow && len(followers) == 0 && budget > 0:
			pl.Delete = append(pl.Delete, p)
			budget--
		case update.Leader == fleetv1.LeaderSwitchover && p.Annotations[fleetv1.AnnotationSwitchoverRequested] == "":
			pl.Switchover = append(pl.Switchover, p)
			pl.HeldLeaders = append(pl.HeldLeaders, p)
		default:
			pl.HeldLeaders = append(pl.HeldLeaders, p)
		}
	}
}

// unavailable says why p does not count as available ("" when it does): it
// must be Running and Ready for at least minReadySeconds.
func unavailable(p *v1.Pod, minReadySeconds int32, now time.Time) string {
	if p.Status.Phase != v1.PodRunning {
		return "phase " + cmp.Or(string(p.Status.Phase), "unknown")
	}
	for _, c := range p.Status.Conditions {
		if c.Type != v1.PodReady {
			continue
		}
		if c.Status != v1.ConditionTrue {
			return "not Ready"
		}
		if minReadySeconds > 0 && (c.LastTransitionTime.IsZero() ||
			c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now)) {
			return fmt.Sprintf("Ready for less than minReadySeconds %d", minReadySeconds)
		}
		return ""
	}
	return "not Ready"
}

// Ordinals returns S's desired ordinals [start, start+replicas).
func Ordinals(sts *appsv1.StatefulSet) (start, replicas int) {
	if sts.Spec.Ordinals != nil {
		start = int(sts.Spec.Ordinals.Start)
	}
	replicas = 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	return start, replicas
}

// Ordinal parses the ordinal of pod name of StatefulSet set.
func Ordinal(set, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, set+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// names lists the pods' names.
func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// Candidate returns the instance a switchover hands the leader role to: the
// lowest ordinal of in's StatefulSet that runs the update revision, is
// available and holds no leader role; else the first of fleet (the hub's
// updated, Ready instances of the whole fleet, SubsetPlacement
// spec.actions.candidates) other than leader; "" when there is none (the
// workload chooses). It is pure.
func Candidate(in Input, leader string, fleet []string) string {
	sts := in.StatefulSet
	leaderRole := map[string]bool{}
	for _, r := range in.Roles {
		leaderRole[r.Name] = r.IsLeader
	}
	best, bestN := "", -1
	for _, p := range in.Pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != sts.UID || p.Name == leader || p.DeletionTimestamp != nil || in.Deleting[p.UID] {
			continue
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision || leaderRole[p.Labels[fleetv1.LabelRole]] ||
			unavailable(p, sts.Spec.MinReadySeconds, in.Now) != "" {
			continue
		}
		if n, ok := Ordinal(sts.Name, p.Name); ok && (bestN < 0 || n < bestN) {
			best, bestN = p.Name, n
		}
	}
	if best != "" {
		return best
	}
	for _, name := range fleet {
		if name != leader {
			return name
		}
	}
	return ""
}
