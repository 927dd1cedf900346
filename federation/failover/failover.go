// Package failover plans fenced relocation of a FleetSet's subsets: when a
// subset's cluster is lost, the subset moves, with its identity (StatefulSet
// name, ordinal block, replicas), to a fallback cluster, but only once the
// lost cluster is certainly fenced, and it comes home the same way.
//
// The fence is the resync lease (api/v1alpha1/resync.go): the hub renews a
// member's Lease only while it reaches the member, and the member's
// fleetset-scheduler stops and deletes fenced pods once the Lease has expired
// by the member's own clock. The hub therefore moves a subset only after the
// last renewal it delivered + the lease duration + a clock-skew margin, and
// after the toleration (leases as fencing: Gray and Cheriton, "Leases: an
// efficient fault-tolerant mechanism for distributed file cache
// consistency", SOSP 1989). Every move raises the subset's epoch, a fencing
// token in-cluster actors compare. The package is pure: the caller reads
// clusters and works and writes the decision.
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
}

// Cluster is what the hub knows of one ManagedCluster.
type Cluster struct {
	// Exists and Available are the ManagedCluster's existence and its
	// ManagedClusterConditionAvailable.
	Exists, Available bool
	// Since is when Available last changed.
	Since time.Time
	// Fenced is when the member's resync lease has certainly expired by its
	// own clock: the last renewal the hub delivered + the lease duration +
	// the skew margin. Zero: no lease was ever delivered (fenced).
	Fenced time.Time
	// Removed is true when the cluster has applied the hub's latest
	// ManifestWork for this FleetSet (or the work is gone): what the hub
	// took out of it is gone from the member.
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
}

// Plan decides, for each subset (in spec order), where it runs at now.
//
// A subset whose current cluster is unavailable is FailingOver; it moves
// once the cluster has been unavailable for the toleration and its lease is
// certainly expired, to the first Available cluster of its fallbacks (or, by
// default, of the other subsets' clusters, fewest replicas first), with
// epoch + 1 (FailedOver). A relocated subset whose home is Available (for
// the toleration, with Automatic; on request, with Manual) and has applied
// the hub's latest ManifestWork (its stale copy is gone) is FailingBack:
// delivered nowhere until its fallback cluster has removed it (or is itself
// fenced), then delivered home with epoch + 1. Without Relocate every subset
// stays at its spec cluster.
func Plan(spec Spec, subsets []Subset, clusters map[string]Cluster, now time.Time) []Decision {
	out := make([]Decision, len(subsets))
	load := map[string]int32{}
	for _, s := range subsets {
		load[current(s)] += s.Replicas
	}
	for i, s := range subsets {
		d := Decision{Cluster: current(s), Deliver: true, Phase: s.Phase, Epoch: s.Epoch}
		if !spec.Relocate {
			out[i] = Decision{Cluster: s.Home, Deliver: true, Epoch: s.Epoch}
			continue
		}
		cur := clusters[d.Cluster]
		lost := !cur.Exists || !cur.Available
		switch {
		case s.Phase == fleetv1.SubsetFailingBack:
			// Removed from the fallback cluster (or that cluster is fenced):
			// deliver home.
			d.Deliver = false
			if cur.Removed || (lost && !cur.Fenced.After(now)) {
				d.Cluster, d.Phase, d.Epoch, d.Deliver = s.Home, "", s.Epoch+1, true
				d.Step = fmt.Sprintf("subset %s failed back from %s to %s, epoch %d", s.Name, current(s), s.Home, d.Epoch)
			} else {
				d.Waiting = fmt.Sprintf("subset %s: waiting for cluster %s to remove it before it returns to %s", s.Name, current(s), s.Home)
			}
		case lost:
			d.Phase = fleetv1.SubsetFailingOver
			ready := cur.Since.Add(spec.Toleration)
			if !cur.Exists {
				ready = now
			}
			if ready.Before(cur.Fenced) {
				ready = cur.Fenced
			}
			if now.Before(ready) {
				d.Waiting = fmt.Sprintf("subset %s: cluster %s unavailable; relocating at %s (toleration and lease expiry)", s.Name, d.Cluster, ready.UTC().Format(time.RFC3339))
				d.Retry = ready
				break
			}
			target := fallback(s, subsets, clusters, load)
			if target == "" {
				d.Waiting = fmt.Sprintf("subset %s: cluster %s lost and fenced, but no fallback cluster is available", s.Name, d.Cluster)
				break
			}
			load[d.Cluster] -= s.Replicas
			load[target] += s.Replicas
			d.Step = fmt.Sprintf("subset %s relocated from %s to %s, epoch %d", s.Name, d.Cluster, target, s.Epoch+1)
			d.Cluster, d.Epoch = target, s.Epoch+1
			d.Phase = fleetv1.SubsetFailedOver
			if target == s.Home {
				d.Phase = ""
			}
		case d.Cluster != s.Home:
			d.Phase = fleetv1.SubsetFailedOver
			home := clusters[s.Home]
			if !home.Exists || !home.Available {
				break
			}
			if back := home.Since.Add(spec.Toleration); spec.Automatic && now.Before(back) {
				d.Retry = back
				break
			}
			if (spec.Automatic || spec.FailbackRequested) && !home.Removed {
				// The home's work agent has not yet applied the work that
				// took the subset away: its stale copy may still be there,
				// and an agent that does not apply could not bring the
				// subset back either.
				d.Waiting = fmt.Sprintf("subset %s: waiting for cluster %s to apply its ManifestWork (remove its stale copy) before failing back", s.Name, s.Home)
				break
			}
			if spec.Automatic || spec.FailbackRequested {
				d.Phase, d.Deliver = fleetv1.SubsetFailingBack, false
				d.Step = fmt.Sprintf("subset %s failing back from %s to %s", s.Name, d.Cluster, s.Home)
			}
		default:
			d.Phase = ""
		}
		out[i] = d
	}
	return out
}

func current(s Subset) string {
	if s.Current != "" {
		return s.Current
	}
	return s.Home
}

// fallback returns the cluster to relocate s to: the first Available one of
// its home (when it is leaving a fallback cluster), of its fallbacks, or
// else of the other subsets' clusters with the fewest replicas (then by
// name); "" when none is Available. It never returns the cluster s is
// leaving.
func fallback(s Subset, subsets []Subset, clusters map[string]Cluster, load map[string]int32) string {
	from := current(s)
	ok := func(c string) bool {
		cl := clusters[c]
		return c != from && cl.Exists && cl.Available
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
