package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fleetset/fleetset/internal/apportion"
)

// Invariant names one checked promise.
type Invariant string

const (
	DualRunning  Invariant = "dual-running"
	PVCDeleted   Invariant = "pvc-deleted"
	WrongZone    Invariant = "wrong-zone"
	RolloutUnav  Invariant = "rollout-unavailability"
	NotConverged Invariant = "not-converged"
	// FencedUnisolated: a member recorded a fence (a SubsetPlacement's
	// fleetset.io/fenced-epoch set or changed) while no fault that may
	// isolate it (FaultKind.Isolates) was active on it or ended less than
	// Options.FenceSlack before. A hub outage, stale peers or not, fences
	// nothing (docs/failover.md: the members hold during a full
	// disruption).
	FencedUnisolated Invariant = "fenced-without-isolation"
	// PodReplaced: a pod of a FleetSet a hub-restore re-created with a new
	// UID stopped or was replaced between the restore and RestoreQuiet
	// after the hub was back (CheckRestores).
	PodReplaced Invariant = "pod-replaced"
)

// Invariants are every invariant, in report order.
var Invariants = []Invariant{DualRunning, PVCDeleted, WrongZone, RolloutUnav, NotConverged, FencedUnisolated, PodReplaced}

// Violation is one broken invariant: when, the faults active then, the
// objects involved.
type Violation struct {
	Invariant Invariant `json:"invariant"`
	T         time.Time `json:"t"`
	Faults    []string  `json:"faults,omitempty"`
	Objects   []string  `json:"objects"`
	Detail    string    `json:"detail"`
}

func (v Violation) String() string {
	f := "none"
	if len(v.Faults) > 0 {
		f = strings.Join(v.Faults, ", ")
	}
	return fmt.Sprintf("%s %s: %s [objects: %s; active faults: %s]", v.T.Format("15:04:05"), v.Invariant, v.Detail, strings.Join(v.Objects, ", "), f)
}

// Options are the checkers' bounds.
type Options struct {
	// Recovery: unavailability of a subset in a cluster counts as the
	// faults' while a fault on that cluster is active or ended less than
	// Recovery ago (its pods are fenced, relocated, failed back, or wait
	// for a scheduler or controller manager coming back).
	Recovery time.Duration `json:"recovery"`
	// ConvergeBound: every FleetSet must converge within it of the last
	// fault's end or the last operation, whichever is later.
	ConvergeBound time.Duration `json:"convergeBound"`
	// FenceSlack: a fence record first seen less than FenceSlack after an
	// isolating fault on its member ended is the fault's (the member
	// unreadable while frozen, a record written as the link came back).
	FenceSlack time.Duration `json:"fenceSlack"`
}

// DefaultOptions: 2 minutes of recovery, 5 minutes to converge, 30
// seconds of fence slack (two heartbeat timeouts of the local fleet).
var DefaultOptions = Options{Recovery: 2 * time.Minute, ConvergeBound: 5 * time.Minute, FenceSlack: 30 * time.Second}

// Result is what Check found.
type Result struct {
	Violations []Violation `json:"violations"`
	// Convergence is, per FleetSet (namespace/name), how long it took to
	// converge after the quiet point; absent if it never did.
	Convergence map[string]time.Duration `json:"convergence"`
	Quiet       time.Time                `json:"quiet"`
	// RolloutSamples counts the samples with a rollout in progress, per
	// FleetSet; PeakRolloutUnavailable and PeakFaultUnavailable the most
	// instances unavailable in one of them, counted apart: outside and
	// inside what the active faults took down.
	RolloutSamples         map[string]int `json:"rolloutSamples"`
	PeakRolloutUnavailable map[string]int `json:"peakRolloutUnavailable"`
	PeakFaultUnavailable   map[string]int `json:"peakFaultUnavailable"`
	// RestoredPods counts, per hub-restore fault (its String), the pods
	// CheckRestores followed through it to the end of its window.
	RestoredPods map[string]int `json:"restoredPods,omitempty"`
}

// Check runs every checker over h.
func Check(h *History, o Options) Result {
	r := Result{Convergence: map[string]time.Duration{}, RolloutSamples: map[string]int{},
		PeakRolloutUnavailable: map[string]int{}, PeakFaultUnavailable: map[string]int{}}
	r.Violations = append(r.Violations, CheckDualRunning(h)...)
	r.Violations = append(r.Violations, CheckPVCs(h)...)
	r.Violations = append(r.Violations, CheckZones(h)...)
	r.Violations = append(r.Violations, CheckRollout(h, o, &r)...)
	r.Violations = append(r.Violations, CheckFences(h, o)...)
	r.Violations = append(r.Violations, CheckRestores(h, o, &r)...)
	conv, quiet, vs := CheckConvergence(h, o)
	r.Violations = append(r.Violations, vs...)
	r.Convergence, r.Quiet = conv, quiet
	sort.SliceStable(r.Violations, func(i, j int) bool { return r.Violations[i].T.Before(r.Violations[j].T) })
	return r
}

// activeFaults names the faults in effect at t.
func (h *History) activeFaults(t time.Time) []string {
	var out []string
	for _, f := range h.Faults {
		if f.activeAt(t) {
			out = append(out, f.Fault.String())
		}
	}
	return out
}

// faultWithin reports whether cluster had a fault whose kind kinds accepts
// active at t or ended less than window before t.
func (h *History) faultWithin(cluster string, t time.Time, window time.Duration, kinds func(FaultKind) bool) bool {
	for _, f := range h.Faults {
		if f.Cluster != cluster || !kinds(f.Kind) || f.Injected.IsZero() || t.Before(f.Injected) {
			continue
		}
		if f.Healed.IsZero() || t.Sub(f.Healed) < window {
			return true
		}
	}
	return false
}

// disturbed reports whether cluster had a fault of its own active at t or
// ended less than recovery before t.
func (h *History) disturbed(cluster string, t time.Time, recovery time.Duration) bool {
	return h.faultWithin(cluster, t, recovery, func(FaultKind) bool { return true })
}

// isolated reports whether cluster had a fault that may isolate it
// (FaultKind.Isolates) active at t or ended less than slack before t.
func (h *History) isolated(cluster string, t time.Time, slack time.Duration) bool {
	return h.faultWithin(cluster, t, slack, FaultKind.Isolates)
}

// lostToHub reports whether cluster had a fault that cuts it from the hub
// (a cut of its link, its OCM agents stopped) or restarts its member
// component active at t or ended less than recovery before t.
func (h *History) lostToHub(cluster string, t time.Time, recovery time.Duration) bool {
	return h.faultWithin(cluster, t, recovery, func(k FaultKind) bool { return k.cutsLink() || k == MemberOCM || k == MemberScheduler })
}

// CheckFences: a fence record (PlacementObs.FencedEpoch) that appears on a
// SubsetPlacement, or changes epoch, between two readings of its member is
// a fence the member decided; it must fall while the member was isolated
// (History.isolated, o.FenceSlack). A record present at the member's first
// reading counts as appearing then. One violation per record seen.
func CheckFences(h *History, o Options) []Violation {
	var out []Violation
	last := map[string]*int64{} // cluster/ns/placement → record at the member's last reading
	for _, s := range h.Samples {
		for _, m := range sortedMembers(s) {
			mo := s.Members[m]
			if mo.Err != "" {
				continue
			}
			for _, pl := range mo.Placements {
				k := m + "/" + pl.Namespace + "/" + pl.Name
				was := last[k]
				last[k] = pl.FencedEpoch
				if pl.FencedEpoch == nil || (was != nil && *was == *pl.FencedEpoch) {
					continue
				}
				if h.isolated(m, s.T, o.FenceSlack) {
					continue
				}
				out = append(out, Violation{Invariant: FencedUnisolated, T: s.T, Faults: h.activeFaults(s.T),
					Objects: []string{"subsetplacement " + k, "member " + m},
					Detail: fmt.Sprintf("member %s fenced SubsetPlacement %s/%s at epoch %d (spec.fencing.epoch %d) while no fault isolated it (none active or ended less than %v before)",
						m, pl.Namespace, pl.Name, *pl.FencedEpoch, pl.Epoch, o.FenceSlack)})
			}
		}
	}
	return out
}

// CheckRestores: for each hub-restore fault, the pods of the FleetSets it
// restored (Fault.Restore) that were Running and Ready in their member's
// last reading before it (at most o.FenceSlack before: a frozen member's
// older one), where the hub's last status before it put their subset, the FleetSet neither
// rolling out nor any subset of it failed over or moving, keep running
// with the same UID in every later sample of their member up to
// RestoreQuiet after the hub came back (the operations on those FleetSets
// are deferred past that: deferOps). A pod whose member lost the hub by a
// fault of its own (a cut, its OCM agents stopped, its fleetset-scheduler
// killed; active or ended less than o.Recovery before: its pods may be
// fenced, relocated, failed back) is no longer followed; a kube-controller-
// manager kill or a freeze replaces no pod, so they do not stop it. One violation per pod; r.RestoredPods counts the pods followed
// to the end.
func CheckRestores(h *History, o Options, r *Result) []Violation {
	var out []Violation
	for _, f := range h.Faults {
		if f.Kind != HubRestore || f.Injected.IsZero() {
			continue
		}
		// The hub's last answer before the restore, and each member's last
		// reading (a frozen member is read again after): at most
		// o.FenceSlack before it.
		var before *Sample
		read := map[string]MemberObs{}
		for i := range h.Samples {
			s := &h.Samples[i]
			if s.T.After(f.Injected) {
				break
			}
			if f.Injected.Sub(s.T) > o.FenceSlack {
				continue
			}
			if s.Hub != nil {
				before = s
			}
			for m, mo := range s.Members {
				if mo.Err == "" {
					read[m] = mo
				}
			}
		}
		if before == nil {
			continue
		}
		members := make([]string, 0, len(read))
		for m := range read {
			members = append(members, m)
		}
		sort.Strings(members)
		type pod struct{ member, key, uid, set string }
		var follow []pod
		for _, fs := range before.Hub.FleetSets {
			if !slices.Contains(f.Restore, fs.Name) || fs.Deleted || fs.rollingOut() {
				continue
			}
			// Subsets failed over, failing over or moving: their pods may
			// move; the others' stay where they are.
			at := map[string]string{}
			for _, ss := range fs.Subsets {
				if ss.Failover == "" {
					at[ss.Name] = ss.Cluster
				}
			}
			for _, m := range members {
				for _, p := range read[m].Pods {
					if p.Namespace == fs.Namespace && p.Set == fs.Name && at[p.Subset] == m && p.Available() {
						follow = append(follow, pod{m, p.Namespace + "/" + p.Name, p.UID, fs.key()})
					}
				}
			}
		}
		end := time.Time{}
		if !f.Healed.IsZero() {
			end = f.Healed.Add(RestoreQuiet)
		}
		dropped := map[int]bool{}
		for _, s := range h.Samples {
			if !s.T.After(f.Injected) || (!end.IsZero() && s.T.After(end)) {
				continue
			}
			for i, p := range follow {
				if dropped[i] {
					continue
				}
				if h.lostToHub(p.member, s.T, o.Recovery) {
					dropped[i] = true
					continue
				}
				mo := s.Members[p.member]
				if mo.Err != "" {
					continue
				}
				var what string
				j := slices.IndexFunc(mo.Pods, func(q PodObs) bool { return q.Namespace+"/"+q.Name == p.key })
				switch {
				case j < 0:
					what = "gone"
				case mo.Pods[j].UID != p.uid:
					what = "replaced (uid " + mo.Pods[j].UID + ")"
				case !mo.Pods[j].Running() || mo.Pods[j].Deleting:
					what = "stopped (" + mo.Pods[j].Phase + map[bool]string{true: ", being deleted", false: ""}[mo.Pods[j].Deleting] + ")"
				default:
					continue
				}
				dropped[i] = true
				out = append(out, Violation{Invariant: PodReplaced, T: s.T, Faults: h.activeFaults(s.T),
					Objects: []string{"pod " + p.member + "/" + p.key + " (uid " + p.uid + ")", "fleetset " + p.set},
					Detail: fmt.Sprintf("pod %s in %s %s after %v restored FleetSet %s (Running before it, no operation on it, %s not cut from the hub by a fault)",
						p.key, p.member, what, f.Fault, p.set, p.member)})
			}
		}
		if r != nil {
			if r.RestoredPods == nil {
				r.RestoredPods = map[string]int{}
			}
			r.RestoredPods[f.Fault.String()] = len(follow) - len(dropped)
		}
	}
	return out
}

func sortedMembers(s Sample) []string {
	out := make([]string, 0, len(s.Members))
	for m := range s.Members {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// CheckDualRunning: no pod name Running in two clusters in one sample.
// One violation per pod name and stretch of consecutive samples.
func CheckDualRunning(h *History) []Violation {
	var out []Violation
	open := map[string]bool{}
	for _, s := range h.Samples {
		where := map[string][]string{}
		for _, m := range sortedMembers(s) {
			for _, p := range s.Members[m].Pods {
				if p.Running() {
					k := p.Namespace + "/" + p.Name
					where[k] = append(where[k], m+" (uid "+p.UID+placementEpoch(s.Members[m], p)+")")
				}
			}
		}
		now := map[string]bool{}
		for k, ms := range where {
			if len(ms) < 2 {
				continue
			}
			now[k] = true
			if open[k] {
				continue
			}
			out = append(out, Violation{Invariant: DualRunning, T: s.T, Faults: h.activeFaults(s.T),
				Objects: append([]string{"pod " + k}, ms...), Detail: fmt.Sprintf("pod %s Running in %d clusters: %s", k, len(ms), strings.Join(ms, " and "))})
		}
		open = now
	}
	return out
}

// placementEpoch describes the fencing epoch of pod p's SubsetPlacement in
// member mo, and the member's fence record, as ", epoch N[, fenced at M]";
// "" when the sample holds no such placement or it is not fenced.
func placementEpoch(mo MemberObs, p PodObs) string {
	for _, pl := range mo.Placements {
		if pl.Namespace == p.Namespace && pl.Set == p.Set && pl.Subset == p.Subset {
			out := fmt.Sprintf(", epoch %d", pl.Epoch)
			if pl.FencedEpoch != nil {
				out += fmt.Sprintf(", fenced at %d", *pl.FencedEpoch)
			}
			return out
		}
	}
	return ""
}

// fleetSetOfClaim returns namespace/fleetset for a claim name made from one
// of the run's volume claim templates, or "".
func (h *History) fleetSetOfClaim(ns, name string) string {
	for _, fs := range h.FleetSets {
		if fs.Namespace != ns {
			continue
		}
		for _, c := range fs.Claims {
			if strings.HasPrefix(name, c+"-"+fs.Name+"-") {
				return fs.Namespace + "/" + fs.Name
			}
		}
	}
	return ""
}

// CheckPVCs: a claim of a FleetSet, once seen, is seen with the same UID
// in every later sample that read its member, as long as the FleetSet
// exists (per the hub's last answer); being deleted counts as deleted.
func CheckPVCs(h *History) []Violation {
	var out []Violation
	type seen struct {
		uid, cluster string
		t            time.Time
	}
	known := map[string]seen{} // cluster/ns/name → first UID
	reported := map[string]bool{}
	exists := map[string]bool{}
	for _, fs := range h.FleetSets {
		exists[fs.Namespace+"/"+fs.Name] = true
	}
	for _, s := range h.Samples {
		if s.Hub != nil {
			for _, fs := range s.Hub.FleetSets {
				exists[fs.key()] = !fs.Deleted
			}
		}
		for _, m := range sortedMembers(s) {
			mo := s.Members[m]
			if mo.Err != "" {
				continue
			}
			now := map[string]PVCObs{}
			for _, c := range mo.PVCs {
				now[c.Namespace+"/"+c.Name] = c
			}
			for _, c := range mo.PVCs {
				k := m + "/" + c.Namespace + "/" + c.Name
				if _, ok := known[k]; !ok && h.fleetSetOfClaim(c.Namespace, c.Name) != "" && !c.Deleting {
					known[k] = seen{uid: c.UID, cluster: m, t: s.T}
				}
			}
			for k, first := range known {
				if first.cluster != m || reported[k] {
					continue
				}
				nsName := strings.TrimPrefix(k, m+"/")
				ns, name, _ := strings.Cut(nsName, "/")
				fs := h.fleetSetOfClaim(ns, name)
				if !exists[fs] {
					continue
				}
				c, ok := now[nsName]
				var what string
				switch {
				case !ok:
					what = "deleted"
				case c.Deleting:
					what = "being deleted"
				case c.UID != first.uid:
					what = "replaced (UID " + c.UID + ")"
				default:
					continue
				}
				reported[k] = true
				out = append(out, Violation{Invariant: PVCDeleted, T: s.T, Faults: h.activeFaults(s.T),
					Objects: []string{"pvc " + m + "/" + nsName + " (uid " + first.uid + ")", "fleetset " + fs},
					Detail:  fmt.Sprintf("claim %s in %s (first seen %s) %s while FleetSet %s exists", nsName, m, first.t.Format("15:04:05"), what, fs)})
			}
		}
	}
	return out
}

// CheckZones: every Running pod with a node is in the zone of its
// ordinal's domain: its node's zone equals its fleetset.io/domain label and
// the domain of seat ordinal−ordinalStart of its SubsetPlacement's domains
// (the seat sequence, package apportion); and a pod name never runs in two
// zones over the run. One violation per pod name and kind.
func CheckZones(h *History) []Violation {
	var out []Violation
	reported := map[string]bool{}
	firstZone := map[string]string{}
	seatCache := map[string]*apportion.Seats{}
	seatsOf := func(p PlacementObs) *apportion.Seats {
		var key strings.Builder
		for _, d := range p.Domains {
			key.WriteString(d.Name + "=" + d.Replicas + ";")
		}
		if s, ok := seatCache[key.String()]; ok {
			return s
		}
		shares := make([]apportion.Share, len(p.Domains))
		for i, d := range p.Domains {
			shares[i] = apportion.Share{Name: d.Name}
			if d.Replicas != "" {
				v := intstr.Parse(d.Replicas)
				shares[i].Replicas = &v
			}
		}
		s, err := apportion.NewSeats("spec.domains", shares)
		if err != nil {
			s = nil
		}
		seatCache[key.String()] = s
		return s
	}
	add := func(kind string, s Sample, objs []string, detail string) {
		if reported[kind+objs[0]] {
			return
		}
		reported[kind+objs[0]] = true
		out = append(out, Violation{Invariant: WrongZone, T: s.T, Faults: h.activeFaults(s.T), Objects: objs, Detail: detail})
	}
	for _, s := range h.Samples {
		for _, m := range sortedMembers(s) {
			mo := s.Members[m]
			placements := map[string]PlacementObs{}
			for _, p := range mo.Placements {
				placements[p.Namespace+"/"+p.Set+"/"+p.Subset] = p
			}
			for _, p := range mo.Pods {
				if !p.Running() || p.Node == "" {
					continue
				}
				pod := "pod " + m + "/" + p.Namespace + "/" + p.Name
				node := "node " + m + "/" + p.Node + " (zone " + p.NodeZone + ")"
				if p.Domain != "" && p.Domain != p.NodeZone {
					add("label", s, []string{pod, node}, fmt.Sprintf("pod %s labelled domain %s runs in zone %s", p.Name, p.Domain, p.NodeZone))
				}
				if pl, ok := placements[p.Namespace+"/"+p.Set+"/"+p.Subset]; ok && len(pl.Domains) > 0 {
					if seats := seatsOf(pl); seats != nil && p.Ordinal >= pl.OrdinalStart {
						if i, err := seats.Of(int64(p.Ordinal - pl.OrdinalStart)); err == nil {
							if want := seats.Names()[i]; want != p.NodeZone {
								add("seat", s, []string{pod, node, "subsetplacement " + m + "/" + pl.Namespace + "/" + pl.Name},
									fmt.Sprintf("pod %s (ordinal %d, seat %d of its placement) belongs to domain %s, runs in zone %s", p.Name, p.Ordinal, p.Ordinal-pl.OrdinalStart, want, p.NodeZone))
							}
						}
					}
				}
				k := p.Namespace + "/" + p.Name
				if z, ok := firstZone[k]; !ok {
					if p.NodeZone != "" {
						firstZone[k] = p.NodeZone
					}
				} else if p.NodeZone != "" && p.NodeZone != z {
					add("moved", s, []string{pod, node}, fmt.Sprintf("pod %s ran in zone %s, now runs in zone %s", k, z, p.NodeZone))
				}
			}
		}
	}
	return out
}

// CheckRollout: while a FleetSet rolls out a new revision, the instances
// made unavailable — desired by its subsets (status.subsets, and by the
// member's StatefulSet where the sample holds it: a scale-down reaches the
// member before the hub's status shows it), Available in an earlier
// sample, not Available now — number at most maxUnavailable, once those
// of subsets whose cluster (where status puts it, or its home) is disturbed
// by a fault are counted apart. The hub's last answer stands for the
// samples in which the hub could not be read. One violation per stretch.
func CheckRollout(h *History, o Options, r *Result) []Violation {
	var out []Violation
	last := map[string]FleetSetObs{}
	wasAvailable := map[string]bool{} // ns/pod
	open := map[string]bool{}
	for _, s := range h.Samples {
		if s.Hub != nil {
			for _, fs := range s.Hub.FleetSets {
				last[fs.key()] = fs
			}
		}
		avail := map[string]bool{}
		for _, m := range sortedMembers(s) {
			for _, p := range s.Members[m].Pods {
				if p.Available() {
					avail[p.Namespace+"/"+p.Name] = true
				}
			}
		}
		// A member not read this sample: its pods count as they were.
		for _, m := range sortedMembers(s) {
			if s.Members[m].Err == "" {
				continue
			}
			for k := range wasAvailable {
				avail[k] = avail[k] || wasAvailable[k]
			}
		}
		keys := make([]string, 0, len(last))
		for k := range last {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fs := last[k]
			if !fs.rollingOut() || fs.Deleted {
				open[k] = false
				continue
			}
			if r != nil {
				r.RolloutSamples[k]++
			}
			var rollout, fault []string
			for _, ss := range fs.Subsets {
				disturbed := h.disturbed(ss.Cluster, s.T, o.Recovery) || h.disturbed(ss.Home, s.T, o.Recovery)
				desired := ss.Replicas
				if r, ok := stsReplicas(s, ss.Cluster, fs.Namespace, fs.Name+"-"+ss.Name); ok {
					// Scaled down in the member before the hub's status
					// caught up: the instances above are scaled away, not
					// made unavailable.
					desired = min(desired, r)
				}
				for i := int32(0); i < desired; i++ {
					pod := fmt.Sprintf("%s/%s-%s-%d", fs.Namespace, fs.Name, ss.Name, ss.OrdinalStart+i)
					if !wasAvailable[pod] || avail[pod] {
						continue
					}
					if disturbed {
						fault = append(fault, pod)
					} else {
						rollout = append(rollout, pod)
					}
				}
			}
			if r != nil {
				r.PeakRolloutUnavailable[k] = max(r.PeakRolloutUnavailable[k], len(rollout))
				r.PeakFaultUnavailable[k] = max(r.PeakFaultUnavailable[k], len(fault))
			}
			if int32(len(rollout)) > fs.MaxUnavailable {
				if !open[k] {
					objs := append([]string{"fleetset " + k}, prefixed("pod ", rollout)...)
					out = append(out, Violation{Invariant: RolloutUnav, T: s.T, Faults: h.activeFaults(s.T), Objects: objs,
						Detail: fmt.Sprintf("FleetSet %s rolling out %s: %d instances unavailable outside the faults (maxUnavailable %d; %d more in disturbed clusters)",
							k, fs.UpdateRevision, len(rollout), fs.MaxUnavailable, len(fault))})
				}
				open[k] = true
			} else {
				open[k] = false
			}
		}
		for k, v := range avail {
			if v {
				wasAvailable[k] = true
			}
		}
	}
	return out
}

// stsReplicas returns spec.replicas of StatefulSet namespace/name in
// cluster at sample s, and whether the sample holds it.
func stsReplicas(s Sample, cluster, namespace, name string) (int32, bool) {
	for _, sts := range s.Members[cluster].StatefulSets {
		if sts.Namespace == namespace && sts.Name == name {
			return sts.Replicas, true
		}
	}
	return 0, false
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// Quiet returns when the last fault ended or the last operation was done,
// whichever is later (the history's start if neither).
func (h *History) Quiet() time.Time {
	q := h.Start
	for _, f := range h.Faults {
		if f.Healed.After(q) {
			q = f.Healed
		}
	}
	for _, o := range h.Ops {
		if o.Done.After(q) {
			q = o.Done
		}
	}
	return q
}

// converged reports whether fs, in sample s, is converged, and why not:
// status up to date, ready = replicas, every instance updated (unless
// paused), every subset at home (or, with failback Manual, on the cluster
// failover moved it to), its pods Running and Ready there and nowhere
// else, and its per-zone counts equal to its division.
func converged(fs FleetSetObs, s Sample) (bool, string) {
	if fs.ObservedGeneration != fs.Generation {
		return false, fmt.Sprintf("observedGeneration %d of %d", fs.ObservedGeneration, fs.Generation)
	}
	if fs.ReadyReplicas != fs.Replicas {
		return false, fmt.Sprintf("ready %d of %d", fs.ReadyReplicas, fs.Replicas)
	}
	if !fs.Paused && (fs.UpdatedReplicas != fs.Replicas || fs.UpdateRevision != fs.CurrentRevision) {
		return false, fmt.Sprintf("updated %d of %d", fs.UpdatedReplicas, fs.Replicas)
	}
	var sum int32
	for _, ss := range fs.Subsets {
		sum += ss.Replicas
		switch {
		case ss.Cluster == ss.Home && ss.Failover == "":
		case ss.Failover == "FailedOver" && !fs.FailbackAutomatic:
		default:
			return false, fmt.Sprintf("subset %s at %s (home %s) %q", ss.Name, ss.Cluster, ss.Home, ss.Failover)
		}
		zones := map[string]int{}
		for _, m := range sortedMembers(s) {
			mo := s.Members[m]
			if mo.Err != "" {
				return false, "member " + m + " not read"
			}
			for _, p := range mo.Pods {
				if p.Namespace != fs.Namespace || p.Set != fs.Name || p.Subset != ss.Name || !p.Running() {
					continue
				}
				if m != ss.Cluster {
					return false, fmt.Sprintf("pod %s Running in %s, subset %s is at %s", p.Name, m, ss.Name, ss.Cluster)
				}
				if !p.Available() || p.Ordinal < ss.OrdinalStart || p.Ordinal >= ss.OrdinalStart+ss.Replicas {
					return false, fmt.Sprintf("pod %s not available or outside the subset", p.Name)
				}
				zones[p.NodeZone]++
			}
		}
		if len(ss.Domains) > 0 {
			for d, n := range ss.Domains {
				if zones[d] != n {
					return false, fmt.Sprintf("subset %s: %d instances in %s, division says %d", ss.Name, zones[d], d, n)
				}
			}
		}
	}
	if sum != fs.Replicas {
		return false, fmt.Sprintf("subsets hold %d of %d", sum, fs.Replicas)
	}
	return true, ""
}

// CheckConvergence: from the quiet point (History.Quiet), every FleetSet
// reaches a converged sample within o.ConvergeBound; it returns each one's
// time to converge.
func CheckConvergence(h *History, o Options) (map[string]time.Duration, time.Time, []Violation) {
	quiet := h.Quiet()
	out := map[string]time.Duration{}
	why := map[string]string{}
	var lastT time.Time
	for _, s := range h.Samples {
		if s.T.Before(quiet) || s.Hub == nil {
			continue
		}
		lastT = s.T
		for _, fs := range s.Hub.FleetSets {
			if _, done := out[fs.key()]; done || fs.Deleted {
				continue
			}
			if ok, w := converged(fs, s); ok {
				if d := s.T.Sub(quiet); d <= o.ConvergeBound {
					out[fs.key()] = d
				}
			} else {
				why[fs.key()] = w
			}
		}
	}
	var vs []Violation
	for _, fs := range h.FleetSets {
		k := fs.Namespace + "/" + fs.Name
		if _, ok := out[k]; ok {
			continue
		}
		w := why[k]
		if w == "" {
			w = "no sample of it after the quiet point"
		}
		t := lastT
		if t.IsZero() {
			t = quiet
		}
		vs = append(vs, Violation{Invariant: NotConverged, T: t, Faults: h.activeFaults(t), Objects: []string{"fleetset " + k},
			Detail: fmt.Sprintf("FleetSet %s not converged within %v of %s: %s", k, o.ConvergeBound, quiet.Format("15:04:05"), w)})
	}
	slices.SortFunc(vs, func(a, b Violation) int { return strings.Compare(a.Objects[0], b.Objects[0]) })
	return out, quiet, vs
}
