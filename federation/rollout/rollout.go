// Package rollout plans a FleetSet's RollingUpdate: from the fleet's spec and
// what each subset's StatefulSet reports, it computes every subset's
// StatefulSet partition so that a new revision goes over the fleet subset by
// subset, in fleet order, within a fleet-wide maxUnavailable.
//
// Fleet order is the subsets in their update order and, inside a subset, its
// ordinals from the highest down: the order in which the StatefulSet
// controller updates a StatefulSet whose partition is lowered (Kubernetes
// StatefulSet RollingUpdate with partitions). The per-pod work stays the
// StatefulSet controller's; the planner only decides how far each subset's
// partition may go. It is a pure function: the caller reads status and
// writes partitions.
package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Spec is the fleet-wide input.
type Spec struct {
	// Revision is the fleet's update revision (a hash of the template).
	Revision string
	// MaxUnavailable is the most instances that may be unavailable
	// fleet-wide while the rollout proceeds (≥ 1).
	MaxUnavailable int32
	// Partition is how many instances, from the end of fleet order, stay on
	// the old revision.
	Partition int32
	// MaxConcurrent is how many subsets may update at once (≥ 1).
	MaxConcurrent int32
	// Paused holds every subset before its next instance.
	Paused bool
	// LeaderLast makes the rollout role-ordered (FleetSet spec.roles): the
	// leader goes after every other instance of the fleet (see Plan).
	LeaderLast bool
}

// Subset is one subset as the hub plans and observes it, in fleet order.
type Subset struct {
	// Name of the subset; Cluster its ManagedCluster.
	Name, Cluster string
	// Replicas is the subset's desired replicas.
	Replicas int32
	// ClusterAvailable is whether its ManagedCluster is Available.
	ClusterAvailable bool
	// Target is the subset revision the hub delivers (manifestwork.Subset
	// Revision); "": Spec.Revision.
	Target string
	// Revision is the subset revision the member StatefulSet carries, as
	// fed back ("" before any report).
	Revision string
	// Current is whether the fed-back status is of the StatefulSet's current
	// spec (status.observedGeneration = metadata.generation).
	Current bool
	// Observed, Updated, Ready and Available are the StatefulSet's
	// status.replicas, updatedReplicas, readyReplicas and availableReplicas.
	Observed, Updated, Ready, Available int32
	// LeaderOutdated is true in a role-ordered rollout (Spec.LeaderLast)
	// for the subset whose member reports the leader role among its
	// instances while not all of them are updated: its leader is deferred
	// to the end of the rollout.
	LeaderOutdated bool
}

// Decision is the plan for one reconcile.
type Decision struct {
	// Partitions is each subset's StatefulSet partition, by name: how many
	// of its lowest instances stay on the old revision.
	Partitions map[string]int32
	// Phases is each subset's place in the rollout, by name.
	Phases map[string]Phase
	// Updating names the subsets being updated, in fleet order.
	Updating []string
	// Blocked describes, in fleet order, each updating subset that cannot
	// proceed because its cluster is unavailable.
	Blocked []string
	// Held is true when some updating subset was held back by
	// MaxUnavailable or Paused.
	Held bool
	// Complete is true when every instance before the partition in fleet
	// order runs Revision and the subsets holding them are available.
	Complete bool
	// Updated counts the instances that run Revision; UpdatedReady those of
	// them that are ready (a lower bound: the fed-back counts do not say
	// which instances are ready).
	Updated, UpdatedReady int32
	// Allowed is, in a role-ordered rollout, how many instances of each
	// subset may be unavailable at once while its member replaces them
	// (SubsetPlacement spec.update.maxUnavailable): its cost when released,
	// 0 when held.
	Allowed map[string]int32
	// LeaderTurn names, in a role-ordered rollout, the subset whose leader
	// is to be updated now: every other instance of the fleet is.
	LeaderTurn string
}

// Phase is a subset's place in the rollout.
type Phase string

const (
	// Waiting: not the subset's turn (or nothing of it to update, because of
	// the partition); its partition holds every instance.
	Waiting Phase = "Waiting"
	// Updating: the subset is in the window of subsets being updated.
	Updating Phase = "Updating"
	// Updated: every instance the subset must update runs Revision, and all
	// its instances are available.
	Updated Phase = "Updated"
)

// Plan returns the partitions and phases for subsets, given in fleet order:
// the first MaxConcurrent subsets neither Updated nor left out by the
// partition form the window (measure), released within MaxUnavailable
// (release); subsets after it hold at partition = replicas. With
// spec.LeaderLast the outdated leader waits until every other subset is
// Updated; then Decision.LeaderTurn names its subset.
func Plan(spec Spec, subsets []Subset) Decision {
	d := plan(spec, subsets, true)
	if !spec.LeaderLast || !d.Complete {
		return d
	}
	// Every other instance is updated: the leader's turn.
	for _, s := range subsets {
		if s.LeaderOutdated {
			d = plan(spec, subsets, false)
			d.LeaderTurn = s.Name
			return d
		}
	}
	return d
}

// plan is Plan, deferring the outdated leader when deferLeader (and
// spec.LeaderLast): each subset's progress, the window of subsets to update,
// and the window's release within MaxUnavailable.
func plan(spec Spec, subsets []Subset, deferLeader bool) Decision {
	d := Decision{Partitions: map[string]int32{}, Phases: map[string]Phase{}, Complete: true}
	if spec.LeaderLast {
		d.Allowed = map[string]int32{}
	}
	pr := measure(spec, subsets, deferLeader)
	d.Updated, d.UpdatedReady = pr.updatedTotal, pr.updatedReady
	window := make([]int, 0, spec.MaxConcurrent)
	for i, s := range subsets {
		switch {
		case pr.target[i] == s.Replicas && s.Replicas > 0:
			// Left out by the partition: nothing of it to update.
			d.Phases[s.Name] = Waiting
			d.Partitions[s.Name] = s.Replicas
		case pr.done[i]:
			d.Phases[s.Name] = Updated
			d.Partitions[s.Name] = pr.target[i]
		case len(window) < int(max(spec.MaxConcurrent, 1)):
			window = append(window, i)
			d.Complete = false
		default:
			d.Phases[s.Name] = Waiting
			d.Partitions[s.Name] = s.Replicas
			d.Complete = false
		}
	}
	release(&d, spec, subsets, window, pr)
	return d
}

// progress is each subset's (in fleet order) target partition, instances
// updated and whether it is done, and the fleet's updated counts.
type progress struct {
	target, updated            []int32
	done                       []bool
	updatedTotal, updatedReady int32
}

// measure computes the subsets' progress: targets from spec.Partition
// counted from the end of fleet order (one more, the leader, for a
// deferred outdated leader), instances updated per the fed-back status. A
// subset is done (Updated) when its StatefulSet reports the revision with a
// current status, all its replicas, replicas − target updated, all available.
func measure(spec Spec, subsets []Subset, deferLeader bool) progress {
	var total int32
	for _, s := range subsets {
		total += s.Replicas
	}
	toUpdate := max(0, total-spec.Partition)
	pr := progress{target: make([]int32, len(subsets)), updated: make([]int32, len(subsets)), done: make([]bool, len(subsets))}
	for i, s := range subsets {
		k := min(s.Replicas, toUpdate)
		toUpdate -= k
		pr.target[i] = s.Replicas - k
		if spec.LeaderLast && deferLeader && s.LeaderOutdated && k > 0 {
			pr.target[i]++ // the leader waits for every other instance
		}
		want := s.Target
		if want == "" {
			want = spec.Revision
		}
		if s.Revision == want && s.Current {
			pr.updated[i] = min(s.Updated, s.Replicas)
		}
		pr.updatedTotal += pr.updated[i]
		pr.updatedReady += max(0, pr.updated[i]-(s.Replicas-min(s.Ready, s.Replicas)))
		pr.done[i] = s.Revision == want && s.Current && s.Observed == s.Replicas &&
			pr.updated[i] >= s.Replicas-pr.target[i] && s.Available >= s.Replicas
	}
	return pr
}

// release sets the partitions of the window's subsets: each released to its
// target while the fleet stays within MaxUnavailable, at a cost of max(1,
// its unavailable instances), those outside the window counting first; else
// held at max(target, replicas − updated), as on an unavailable cluster
// (Blocked) or in a paused rollout (Held).
func release(d *Decision, spec Spec, subsets []Subset, window []int, pr progress) {
	budget := max(spec.MaxUnavailable, 1)
	for i, s := range subsets {
		if !slices.Contains(window, i) {
			budget -= unavailable(s)
		}
	}
	for _, i := range window {
		s := subsets[i]
		d.Phases[s.Name] = Updating
		d.Updating = append(d.Updating, s.Name)
		cost := max(1, unavailable(s))
		hold := max(pr.target[i], s.Replicas-pr.updated[i])
		switch {
		case !s.ClusterAvailable:
			d.Blocked = append(d.Blocked, fmt.Sprintf("subset %s: cluster %s is unavailable", s.Name, s.Cluster))
			d.Partitions[s.Name] = hold
		case spec.Paused || budget < cost:
			d.Held = true
			d.Partitions[s.Name] = hold
		default:
			budget -= cost
			d.Partitions[s.Name] = pr.target[i]
			if d.Allowed != nil {
				d.Allowed[s.Name] = cost
			}
		}
	}
}

// unavailable returns how many of the subset's existing instances are not
// available; replicas not yet created (a scale-up) do not count.
func unavailable(s Subset) int32 {
	return max(0, min(s.Observed, s.Replicas)-s.Available)
}

// ResolveMaxUnavailable returns maxUnavailable in instances: an int as is,
// a percent of replicas rounded down, never below 1; nil gives
// fleetv1.DefaultMaxUnavailable. It
// returns an error naming the value if it is neither.
func ResolveMaxUnavailable(v *intstr.IntOrString, replicas int32) (int32, error) {
	if v == nil {
		return fleetv1.DefaultMaxUnavailable, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(replicas), false)
	if err != nil {
		return 0, fmt.Errorf("spec.updateStrategy.rollingUpdate.maxUnavailable: %w", err)
	}
	return max(int32(n), 1), nil
}

// SubsetRevision returns a subset's revision: Revision of its pod template
// and claim templates (after its overrides) when it delivers no
// dependencies (dependencies "", so a FleetSet without overrides or
// dependencies keeps the revision it always had), else the first 10 hex
// digits of the SHA-256 of that revision and dependencies (the content
// hash of what is delivered with it). It returns an error only if the
// templates cannot be encoded.
func SubsetRevision(template corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim, dependencies string) (string, error) {
	rev, err := Revision(template, claims)
	if err != nil || dependencies == "" {
		return rev, err
	}
	sum := sha256.Sum256([]byte(rev + "/" + dependencies))
	return hex.EncodeToString(sum[:])[:10], nil
}

// FleetRevision returns the fleet revision (FleetSet status.updateRevision)
// of subsets' revisions, given as name=revision in spec order: the common
// revision when they are all equal (so it is the revision of the template
// when no subset overrides anything), else the first 10 hex digits of the
// SHA-256 of the list; "" for none.
func FleetRevision(revisions []string) string {
	if len(revisions) == 0 {
		return ""
	}
	first := revisions[0][strings.IndexByte(revisions[0], '=')+1:]
	same := true
	for _, r := range revisions[1:] {
		same = same && r[strings.IndexByte(r, '=')+1:] == first
	}
	if same {
		return first
	}
	sum := sha256.Sum256([]byte(strings.Join(revisions, ",")))
	return hex.EncodeToString(sum[:])[:10]
}

// Revision returns the fleet revision of a FleetSet spec: the first 10 hex
// digits of the SHA-256 of the JSON of its pod template and volume claim
// templates, the two things a StatefulSet rollout changes. It returns an
// error only if they cannot be encoded.
func Revision(template corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) (string, error) {
	b, err := json.Marshal(struct {
		Template corev1.PodTemplateSpec         `json:"template"`
		Claims   []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	}{template, claims})
	if err != nil {
		return "", fmt.Errorf("hashing spec.template: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10], nil
}
