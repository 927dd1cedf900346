// Package failover plans fenced relocation of a FleetSet's subsets: when a
// subset's cluster is lost, the subset moves, with its identity (StatefulSet
// name, ordinal block, replicas), to a fallback cluster, but only once the
// lost cluster is certainly fenced, and it comes home the same way.
//
// The fence is the member's own (api/v1alpha1/member.go): a member that
// cannot reach the hub, while a peer can or no peer answers, stops its
// failover-protected pods once its heartbeat timeout and fence grace are
// over. The hub therefore moves a subset only after that deadline as the
// member computes it, counted from the hub's own observation of the last
// heartbeat (+ the pods' termination grace + a margin), or on a positive
// confirmation (the ManagedCluster tainted out of service); never
// without the member's heartbeat, and never while most members, or most of
// the FleetSet's clusters, are lost at once (the node lifecycle
// controller's full-disruption rule). A deleted ManagedCluster confirms
// nothing: its member may still run its pods (it fences only once its
// heartbeats stop reaching the hub), so its subsets wait for the same
// deadline, counted from the last heartbeat the hub observed of it. Every move raises the subset's epoch,
// a fencing token in-cluster actors compare. The package is pure: the
// caller reads clusters, heartbeats and works and writes the decision.
package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Spec is the FleetSet's failover spec, resolved.
type Spec struct {
	// Relocate is true for policy Relocate; false plans nothing.
	Relocate bool
	// Toleration is how long a cluster may be unavailable before its
	// subsets move, and how long a home cluster must be Available again
	// before automatic failback.
	Toleration time.Duration
	// Automatic is true for failback Automatic.
	Automatic bool
	// FailbackRequested is true when the FleetSet carries the
	// fleetset.io/failback annotation (failback Manual).
	FailbackRequested bool
	// Disrupted is true while more than half of all members are lost at
	// once (the hub's heartbeat observer): nothing is relocated.
	Disrupted bool
}

// Cluster is what the hub knows of one ManagedCluster.
type Cluster struct {
	// Exists and Available are the ManagedCluster's existence and its
	// ManagedClusterConditionAvailable. A cluster that does not exist is
	// unknown, never out of service: Heartbeat, Fenced and Deadline are
	// then the hub's record of its member's heartbeats from before (and
	// after) it departed.
	Exists, Available bool
	// Since is when Available last changed.
	Since time.Time
	// Heartbeat is true when the hub has observed the member's heartbeat:
	// only then can it count on the member to fence itself.
	Heartbeat bool
	// NoPeers is true when the member's last heartbeat reported that it
	// knew no peer: it never fences on hub silence, so the hub holds.
	NoPeers bool
	// Fenced is when the member has certainly fenced itself and its pods
	// have stopped: the hub-observed last heartbeat (or the end of the last
	// full disruption) + the heartbeat timeout + the fence grace + the
	// pods' termination grace + the margin. Meaningful with Heartbeat.
	Fenced time.Time
	// Deadline explains Fenced ("heartbeat observed at ... + ..."), for
	// messages.
	Deadline string
	// Confirmed is true when the cluster is certainly not running the
	// subset: its ManagedCluster is tainted v1alpha1.TaintOutOfService.
	Confirmed bool
	// Cordoned is true when the FleetSet cordons the cluster
	// (spec.topology.cordonedClusters): it is never a relocation target.
	Cordoned bool
	// Removed is true when the cluster has applied the hub's latest
	// ManifestWork for this FleetSet (or the work is gone): what the hub
	// took out of it is gone from the member. Plan ignores it for a
	// cluster that does not exist (its works are gone with it, its member
	// unheard).
	Removed bool
}

// Subset is one subset's failover state.
type Subset struct {
	// Name of the subset; Home its spec cluster.
	Name, Home string
	// Current is the cluster it runs on now (status), Home when empty.
	Current string
	// Phase and Epoch are its status.subsets[].failover and epoch.
	Phase fleetv1.SubsetFailoverPhase
	Epoch int64
	// Replicas is its desired replicas (for the default fallback order).
	Replicas int32
	// Fallbacks is spec.topology.subsets[].fallbackClusters.
	Fallbacks []string
}

// Decision is one subset's plan.
type Decision struct {
	// Cluster is where the subset runs now (status.subsets[].cluster).
	Cluster string
	// Deliver is false while the subset must run nowhere: failing back,
	// until the fallback cluster has removed it.
	Deliver bool
	// Phase and Epoch are the subset's new failover phase and epoch.
	Phase fleetv1.SubsetFailoverPhase
	Epoch int64
	// Waiting says what a subset that is failing over or back waits for.
	Waiting string
	// Step describes the move made in this plan ("" when none).
	Step string
	// Retry is when to plan again because a wait ends (zero: none).
	Retry time.Time
	// Held is true when a relocation that is due is held back: full
	// disruption, or no heartbeat from the lost member.
	Held bool
}

// HoldRetry is how often a held relocation is planned again.
const HoldRetry = 5 * time.Second

// fenceDone reports whether a lost (unavailable or deleted) cluster has
// certainly stopped its pods at now: confirmed out of service, or past its
// fence deadline with a heartbeat the hub observed, outside a full
// disruption. A deleted ManagedCluster is no confirmation.
func fenceDone(spec Spec, c Cluster, now time.Time) bool {
	if c.Confirmed {
		return true
	}
	return c.Heartbeat && !c.NoPeers && !spec.Disrupted && !c.Fenced.After(now)
}

// Plan decides, for each subset (in spec order), where it runs at now: a
// subset on a lost cluster fails over (failOver), a relocated one fails
// back (failedOver, failBack), a moved one moves (move). Without Relocate
// every subset stays at its spec cluster.
func Plan(spec Spec, subsets []Subset, clusters map[string]Cluster, now time.Time) []Decision {
	p := planner{spec: spec, subsets: subsets, clusters: clusters, now: now, load: map[string]int32{}}
	for _, s := range subsets {
		p.load[current(s)] += s.Replicas
	}
	p.lost, p.total = lostClusters(subsets, clusters)
	out := make([]Decision, len(subsets))
	for i, s := range subsets {
		cur := clusters[current(s)]
		switch {
		case s.Phase == fleetv1.SubsetMoving:
			out[i] = move(spec, s, cur, now)
		case !spec.Relocate:
			out[i] = Decision{Cluster: s.Home, Deliver: true, Epoch: s.Epoch}
		case s.Phase == fleetv1.SubsetFailingBack:
			out[i] = p.failBack(s, cur)
		case !cur.Exists || !cur.Available:
			out[i] = p.failOver(s, cur)
		case current(s) != s.Home:
			out[i] = p.failedOver(s)
		default:
			out[i] = Decision{Cluster: s.Home, Deliver: true, Epoch: s.Epoch}
		}
	}
	return out
}

// planner is one Plan: its inputs, the replicas each cluster runs as the
// plan moves subsets (load), and the FleetSet's lost clusters of all.
type planner struct {
	spec        Spec
	subsets     []Subset
	clusters    map[string]Cluster
	now         time.Time
	load        map[string]int32
	lost, total int
}

// failBack plans subset s failing back from cur: not delivered to run
// (Deliver false) until cur has removed it (Removed: for the controller,
// drained to 0 pods) or is itself fenced, then delivered home with epoch + 1.
func (p *planner) failBack(s Subset, cur Cluster) Decision {
	d := Decision{Cluster: current(s), Phase: s.Phase, Epoch: s.Epoch}
	lost := !cur.Exists || !cur.Available
	if (cur.Exists && cur.Removed) || (lost && fenceDone(p.spec, cur, p.now)) {
		d.Cluster, d.Phase, d.Epoch, d.Deliver = s.Home, "", s.Epoch+1, true
		d.Step = fmt.Sprintf("subset %s failed back from %s to %s, epoch %d", s.Name, current(s), s.Home, d.Epoch)
	} else {
		d.Waiting = fmt.Sprintf("subset %s: waiting for cluster %s to remove it before it returns to %s", s.Name, current(s), s.Home)
	}
	return d
}

// failOver plans subset s whose cluster cur is lost: FailingOver until cur
// has been unavailable for the toleration and is certainly fenced
// (fenceDone), then relocated to its fallback with epoch + 1 (FailedOver).
// It is held (Held, retried every HoldRetry) while the member's heartbeat
// was never observed, during a full disruption, or while most of the
// FleetSet's clusters are lost at once; a confirmed cluster is never held.
// A deleted cluster is held until its fence deadline (a RelocationHeld
// that says the cluster is unknown, not out of service), and for good when
// the hub holds no record of its member's heartbeat.
func (p *planner) failOver(s Subset, cur Cluster) Decision {
	d := Decision{Cluster: current(s), Deliver: true, Phase: fleetv1.SubsetFailingOver, Epoch: s.Epoch}
	ready := cur.Since.Add(p.spec.Toleration)
	confirmed := cur.Confirmed
	if confirmed {
		ready = p.now // KEP-2268: an out-of-service confirmation needs no wait
	}
	if held := holdReason(p.spec, cur, d.Cluster, p.lost, p.total); held != "" && !confirmed {
		d.Waiting = fmt.Sprintf("subset %s: cluster %s lost; relocation held: %s", s.Name, d.Cluster, held)
		d.Held, d.Retry = true, p.now.Add(HoldRetry)
		return d
	}
	if !confirmed && ready.Before(cur.Fenced) && !UnsafeNoFence {
		ready = cur.Fenced
	}
	if p.now.Before(ready) {
		why := "toleration"
		if !confirmed && !ready.After(cur.Fenced) {
			why = "fence deadline: " + cur.Deadline
		}
		d.Waiting = fmt.Sprintf("subset %s: cluster %s unavailable; relocating at %s (%s)", s.Name, d.Cluster, ready.UTC().Format(time.RFC3339), why)
		d.Retry = ready
		if !cur.Exists {
			// Held, and said so: a deleted ManagedCluster is read as
			// confirmed by whoever deleted it, and it is not.
			d.Waiting = fmt.Sprintf("subset %s: relocation held: ManagedCluster %s was deleted, which does not confirm that its member stopped the subset's pods (it fences only once its heartbeats stop reaching the hub); relocating at %s (%s)", s.Name, d.Cluster, ready.UTC().Format(time.RFC3339), why)
			d.Held = true
		}
		return d
	}
	target := fallback(s, p.subsets, p.clusters, p.load)
	if target == "" {
		d.Waiting = fmt.Sprintf("subset %s: cluster %s lost and fenced, but no fallback cluster is available", s.Name, d.Cluster)
		return d
	}
	p.load[d.Cluster] -= s.Replicas
	p.load[target] += s.Replicas
	d.Step = fmt.Sprintf("subset %s relocated from %s to %s, epoch %d", s.Name, d.Cluster, target, s.Epoch+1)
	d.Cluster, d.Epoch = target, s.Epoch+1
	d.Phase = fleetv1.SubsetFailedOver
	if target == s.Home {
		d.Phase = ""
	}
	return d
}

// failedOver plans subset s, relocated away from its home: it stays
// FailedOver until its home is Available (for the toleration, with
// Automatic; on request, with Manual), uncordoned (a failback would put
// new instances on a cordoned cluster: api/v1alpha1/cordon.go) and has
// applied the hub's latest ManifestWork, then starts FailingBack.
func (p *planner) failedOver(s Subset) Decision {
	d := Decision{Cluster: current(s), Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: s.Epoch}
	home := p.clusters[s.Home]
	if !home.Exists || !home.Available {
		return d
	}
	if home.Cordoned {
		d.Waiting = fmt.Sprintf("subset %s: home cluster %s is cordoned (spec.topology.cordonedClusters): it stays on %s until %s is uncordoned", s.Name, s.Home, d.Cluster, s.Home)
		return d
	}
	if back := home.Since.Add(p.spec.Toleration); p.spec.Automatic && p.now.Before(back) {
		d.Retry = back
		return d
	}
	asked := p.spec.Automatic || p.spec.FailbackRequested
	if asked && !home.Removed {
		// The home's work agent has not yet applied the work that took the
		// subset away: its stale copy may still be there, and an agent that
		// does not apply could not bring the subset back either.
		d.Waiting = fmt.Sprintf("subset %s: waiting for cluster %s to apply its ManifestWork (remove its stale copy) before failing back", s.Name, s.Home)
		return d
	}
	if asked {
		d.Phase, d.Deliver = fleetv1.SubsetFailingBack, false
		d.Step = fmt.Sprintf("subset %s failing back from %s to %s", s.Name, d.Cluster, s.Home)
	}
	return d
}

// move plans a subset whose spec cluster was edited (phase Moving, Current
// the old cluster): not delivered to run until the old cluster has removed
// it, is gone or out of service, or (policy Relocate) is certainly fenced;
// then delivered to its new cluster with epoch + 1. A move back is no move.
func move(spec Spec, s Subset, old Cluster, now time.Time) Decision {
	from := current(s)
	if from == s.Home {
		return Decision{Cluster: s.Home, Deliver: true, Epoch: s.Epoch}
	}
	lost := !old.Exists || !old.Available
	if (old.Exists && old.Removed) || old.Confirmed || (spec.Relocate && lost && fenceDone(spec, old, now)) {
		return Decision{Cluster: s.Home, Deliver: true, Epoch: s.Epoch + 1,
			Step: fmt.Sprintf("subset %s moved from %s to %s, epoch %d", s.Name, from, s.Home, s.Epoch+1)}
	}
	d := Decision{Cluster: from, Phase: fleetv1.SubsetMoving, Epoch: s.Epoch,
		Waiting: fmt.Sprintf("subset %s: moving from %s to %s: waiting for %s to remove it", s.Name, from, s.Home, from)}
	switch {
	case !old.Exists:
		d.Waiting += fmt.Sprintf(" (ManagedCluster %s was deleted, which does not confirm that it stopped the subset's pods: it is moved at %s's fence deadline with policy Relocate, or once a ManagedCluster %s, re-created, is tainted %s)", from, from, from, fleetv1.TaintOutOfService)
		d.Retry = now.Add(HoldRetry)
	case lost:
		d.Waiting += fmt.Sprintf(" (%s is unavailable: it is moved once %s is back and has removed it, or is tainted %s)", from, from, fleetv1.TaintOutOfService)
		d.Retry = now.Add(HoldRetry)
	}
	return d
}

// holdReason says why a due relocation from lost cluster c is held ("" when
// it is not): no heartbeat observed, a member without peers, a full
// disruption of the members, or more than half of the FleetSet's clusters
// lost at once.
func holdReason(spec Spec, c Cluster, name string, lost, total int) string {
	switch {
	case !c.Exists && !c.Heartbeat:
		return fmt.Sprintf("ManagedCluster %s was deleted, which does not confirm that its member stopped the subset's pods, and this hub holds no record of that member's heartbeats (it started after the deletion), so it cannot count a fence deadline; re-create ManagedCluster %s tainted %s once it runs none of the subset's pods", name, name, fleetv1.TaintOutOfService)
	case !c.Heartbeat:
		return fmt.Sprintf("the hub has never observed a heartbeat of %s's fleetset member component, so it cannot know that %s fenced itself; taint ManagedCluster %s %s once it runs none of the subset's pods", name, name, name, fleetv1.TaintOutOfService)
	case c.NoPeers:
		return fmt.Sprintf("%s's fleetset member component knew no peer at its last heartbeat, so it does not fence on hub silence (it cannot tell its own isolation from a hub outage); give the members peer endpoints, or taint ManagedCluster %s %s once it runs none of the subset's pods", name, name, fleetv1.TaintOutOfService)
	case spec.Disrupted:
		return "full disruption: more than half of the member clusters are lost at once (the hub may be the one cut off); relocating nothing"
	case 2*lost > total:
		return fmt.Sprintf("%d of the FleetSet's %d clusters are lost at once; relocating nothing", lost, total)
	}
	return ""
}

// lostClusters counts the distinct clusters the subsets run on now, and
// how many of them are lost (missing or unavailable).
func lostClusters(subsets []Subset, clusters map[string]Cluster) (lost, total int) {
	seen := map[string]bool{}
	for _, s := range subsets {
		c := current(s)
		if seen[c] {
			continue
		}
		seen[c] = true
		total++
		if cl := clusters[c]; !cl.Exists || !cl.Available {
			lost++
		}
	}
	return lost, total
}

func current(s Subset) string {
	if s.Current != "" {
		return s.Current
	}
	return s.Home
}

// fallback returns the cluster to relocate s to: the first Available,
// uncordoned one of its home (when it is leaving a fallback cluster), of
// its fallbacks, or else of the other subsets' clusters with the fewest
// replicas (then by name); "" when none is. It never returns the cluster s is
// leaving.
func fallback(s Subset, subsets []Subset, clusters map[string]Cluster, load map[string]int32) string {
	from := current(s)
	ok := func(c string) bool {
		cl := clusters[c]
		return c != from && cl.Exists && cl.Available && !cl.Cordoned
	}
	if s.Home != from && ok(s.Home) {
		return s.Home // a relocated subset whose fallback is lost goes home first
	}
	if len(s.Fallbacks) > 0 {
		for _, c := range s.Fallbacks {
			if ok(c) {
				return c
			}
		}
		return ""
	}
	var cands []string
	for _, o := range subsets {
		for _, c := range []string{current(o), o.Home} {
			if ok(c) && !slices.Contains(cands, c) {
				cands = append(cands, c)
			}
		}
	}
	slices.SortFunc(cands, func(a, b string) int {
		if load[a] != load[b] {
			return int(load[a] - load[b])
		}
		return strings.Compare(a, b)
	})
	if len(cands) == 0 {
		return ""
	}
	return cands[0]
}
