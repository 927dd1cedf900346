package chaos

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fleetset/fleetset/e2e/framework"
)

// FaultKind is one kind of fault the run injects.
type FaultKind string

const (
	// HubKill: fleetset-hub SIGKILLed, started again after the hold.
	HubKill FaultKind = "hub-kill"
	// HubPause: fleetset-hub SIGSTOPped, SIGCONTed after the hold.
	HubPause FaultKind = "hub-pause"
	// HubAPIServer: the hub's kube-apiserver stopped, started after the hold.
	HubAPIServer FaultKind = "hub-apiserver-stop"
	// MemberCut: a member's link to the hub cut, healed after.
	MemberCut FaultKind = "member-cut"
	// MemberOCM: a member's OCM registration and work agents stopped.
	MemberOCM FaultKind = "member-ocm-stop"
	// MemberScheduler: a member's fleetset-scheduler (with its member
	// component) SIGKILLed.
	MemberScheduler FaultKind = "member-scheduler-kill"
	// MemberKCM: a member's kube-controller-manager SIGKILLed.
	MemberKCM FaultKind = "member-kcm-kill"
)

// Kinds drawn from their own stream (Draw's extra faults), so that the
// faults of the kinds above keep, for a given seed, the schedule they had
// before these existed.
const (
	// MemberBlackhole: a member's link to the hub dropped silently
	// (agent.sh blackhole: connections hang, new ones are never answered),
	// healed after.
	MemberBlackhole FaultKind = "member-blackhole"
	// MemberFreeze: every process of one member SIGSTOPped (memberProcs:
	// its apiserver and etcd, kwok, the fleetset-scheduler with its member
	// component, the OCM agents, its hub link), SIGCONTed after the hold, a
	// VM suspended and resumed. Held shorter than the member heartbeat
	// timeout (15 s on the local fleet), so that neither the member fences
	// on its thaw nor the hub relocates anything: a pod Running in two
	// clusters after the thaw is a violation.
	MemberFreeze FaultKind = "member-freeze"
)

// Kinds of issue 35, drawn from a third stream (Config.LateGap), so that
// a seed keeps its faults of every kind above.
const (
	// ClaimGrowthCut: a FleetSet with volume claim templates scaled up to
	// its Target's MaxReplicas (an OpClaimGrowth operation ClaimGrowthLead
	// before the fault: the members create the new instances' claims), then
	// the member's link to the hub cut, healed after. No claim, the new ones
	// included, may be deleted (pvc-deleted).
	ClaimGrowthCut FaultKind = "claim-growth-cut"
	// HubStalePeers: StubPeers heartbeat Leases of clusters that are no
	// members (no ManagedCluster; the hub must delete them and deliver no
	// peer for them) created on the hub, then, StubPeerLead later, the
	// hub's kube-apiserver stopped; started after the hold and the stubs
	// deleted. Every member loses the hub and asks its peers: a member that
	// counted the stubs as silent peers would see too few confirmations of a
	// full disruption and fence (fenced-without-isolation).
	HubStalePeers FaultKind = "hub-stale-peers"
	// HubRestore: the hub restored from a backup (docs/operations.md,
	// "Restoring the hub from a backup"): fleetset-hub SIGKILLed, each
	// FleetSet of Fault.Restore backed up as Velero keeps it (no uid,
	// resourceVersion, creationTimestamp, generation, managedFields,
	// status), deleted from the hub (the hub that would cascade is down)
	// and re-created from the backup with a new UID; fleetset-hub started
	// after the hold. No pod of a restored FleetSet may stop or be replaced
	// (pod-replaced).
	HubRestore FaultKind = "hub-restore"
)

// StubPeers is how many stub peers a hub-stale-peers fault creates: with
// the three members of the chaos fleet, 4 silent peers leave the 3
// confirmations of a hub outage short of a majority of 7 members.
const StubPeers = 4

// StubPeerLead is how long a hub-stale-peers fault leaves the stubs to the
// hub (long enough for a hub that wrongly delivers them to renew every
// member's peers) before it stops the hub's kube-apiserver.
const StubPeerLead = 8 * time.Second

// ClaimGrowthLead is how long before a claim-growth-cut's cut its scale-up
// is applied: the hub divides it and the members' StatefulSet controllers
// create the new claims, a few seconds on the local fleet.
const ClaimGrowthLead = 6 * time.Second

// FaultKinds are every kind, in report order.
var FaultKinds = []FaultKind{HubKill, HubPause, HubAPIServer, MemberCut, MemberOCM, MemberScheduler, MemberKCM, MemberBlackhole, MemberFreeze,
	ClaimGrowthCut, HubStalePeers, HubRestore}

// mainKinds are the kinds of Draw's first stream; extraKinds those of its
// extra stream; lateKinds those of its third.
var (
	mainKinds  = FaultKinds[:7]
	extraKinds = []FaultKind{MemberBlackhole, MemberFreeze}
	lateKinds  = []FaultKind{ClaimGrowthCut, HubStalePeers, HubRestore}
)

// memberProcs are the processes of a member of the local fleet, in the
// order a freeze stops them (the workers first, the hub link last); a thaw
// resumes them in reverse (storage and apiserver first).
var memberProcs = []string{"fleetset-scheduler", "registration-agent", "work-agent", "kwok", "provisioner", "coredns",
	"kube-controller-manager", "kube-apiserver", "etcd", "hub-link"}

// holds is the range a fault of each kind is held for.
var holds = map[FaultKind][2]time.Duration{
	HubKill:         {5 * time.Second, 40 * time.Second},
	HubPause:        {5 * time.Second, 30 * time.Second},
	HubAPIServer:    {10 * time.Second, 45 * time.Second},
	MemberCut:       {20 * time.Second, 90 * time.Second},
	MemberOCM:       {10 * time.Second, 60 * time.Second},
	MemberScheduler: {5 * time.Second, 30 * time.Second},
	MemberKCM:       {5 * time.Second, 30 * time.Second},
	MemberBlackhole: {20 * time.Second, 90 * time.Second},
	MemberFreeze:    {5 * time.Second, 12 * time.Second},
	// The cut outlasts the toleration (20 s) and web's fence (40 s), so
	// that the grown subsets are relocated and failed back.
	ClaimGrowthCut: {30 * time.Second, 90 * time.Second},
	// StubPeerLead, then an outage of at least 30 s: the members' heartbeat
	// timeout (15 s) and their peers' answers fit in it.
	HubStalePeers: {StubPeerLead + 30*time.Second, StubPeerLead + 60*time.Second},
	// Long enough to delete and re-create three FleetSets.
	HubRestore: {20 * time.Second, 40 * time.Second},
}

// RestoreLead and RestoreQuiet: no operation touches a FleetSet a
// hub-restore restores from RestoreLead before it to RestoreQuiet after
// its end (deferOps), so that its pods keep running unchanged
// (pod-replaced) up to RestoreQuiet after the hub is back.
const (
	RestoreLead  = 20 * time.Second
	RestoreQuiet = 30 * time.Second
)

// memberScoped: the fault hits one member (Fault.Cluster); the others hit
// the hub.
func (k FaultKind) memberScoped() bool {
	switch k {
	case MemberCut, MemberOCM, MemberScheduler, MemberKCM, MemberBlackhole, MemberFreeze, ClaimGrowthCut:
		return true
	}
	return false
}

// cutsLink: the fault cuts the member's link to the hub (plainly or
// silently).
func (k FaultKind) cutsLink() bool {
	return k == MemberCut || k == MemberBlackhole || k == ClaimGrowthCut
}

// Isolates reports whether a fault of kind k may make its member fence
// (docs/failover.md): it loses the hub while its peers keep it (a cut of
// its link, its OCM agents stopped: the hub stops renewing its resync
// Lease), a freeze (its clocks jump on the thaw), or its member component
// restarted (during a hub outage it has no peer CA and fences, as
// documented). A fence record written in a member while none of these is
// active, nor ended less than Options.FenceSlack ago, is a violation
// (fenced-without-isolation).
func (k FaultKind) Isolates() bool {
	return k.cutsLink() || k == MemberOCM || k == MemberFreeze || k == MemberScheduler
}

// Fault is one scheduled fault: kind, target cluster, when (offset from
// the start of the run) and for how long.
type Fault struct {
	ID      int           `json:"id"`
	Kind    FaultKind     `json:"kind"`
	Cluster string        `json:"cluster"`
	At      time.Duration `json:"at"`
	Hold    time.Duration `json:"hold"`
	// Restore names the FleetSets a hub-restore deletes and re-creates:
	// those no operation touches from RestoreQuiet before it to
	// RestoreQuiet after its end.
	Restore []string `json:"restore,omitempty"`
}

func (f Fault) end() time.Duration { return f.At + f.Hold }

func (f Fault) String() string {
	if f.Kind == HubRestore {
		return fmt.Sprintf("#%d %s %s %v", f.ID, f.Kind, f.Cluster, f.Restore)
	}
	return fmt.Sprintf("#%d %s %s", f.ID, f.Kind, f.Cluster)
}

// target names the process (or process group) a fault acts on: two faults
// on the same target never overlap.
func (f Fault) target() string {
	switch f.Kind {
	case HubKill, HubPause, HubRestore:
		return "hub/fleetset-hub"
	case HubAPIServer, HubStalePeers:
		return "hub/kube-apiserver"
	case MemberCut, MemberBlackhole, ClaimGrowthCut:
		return f.Cluster + "/hub-link"
	case MemberFreeze:
		return f.Cluster + "/*"
	case MemberOCM:
		return f.Cluster + "/ocm"
	case MemberScheduler:
		return f.Cluster + "/fleetset-scheduler"
	case MemberKCM:
		return f.Cluster + "/kube-controller-manager"
	}
	return string(f.Kind)
}

// Actions returns the provider actions that inject f and those that undo
// it; nil for an unknown kind.
func (f Fault) Actions() (inject, heal []framework.Action) {
	one := func(in, out framework.Op, cluster, proc string) ([]framework.Action, []framework.Action) {
		return []framework.Action{{Op: in, Cluster: cluster, Proc: proc}}, []framework.Action{{Op: out, Cluster: cluster, Proc: proc}}
	}
	c := f.Cluster
	switch f.Kind {
	case HubKill, HubRestore:
		// A restore's deletions and re-creations are the run's, between
		// these (run_test.go, restoreFleetSets).
		return one(framework.OpKill, framework.OpStart, "hub", "fleetset-hub")
	case HubPause:
		return one(framework.OpPause, framework.OpResume, "hub", "fleetset-hub")
	case HubAPIServer:
		return one(framework.OpStop, framework.OpStart, "hub", "kube-apiserver")
	case MemberCut, ClaimGrowthCut:
		return one(framework.OpCut, framework.OpHeal, c, "")
	case HubStalePeers:
		// The stubs are created before and deleted after these, by the
		// run (run_test.go, stubPeers).
		return one(framework.OpStop, framework.OpStart, "hub", "kube-apiserver")
	case MemberOCM:
		return []framework.Action{{Op: framework.OpStop, Cluster: c, Proc: "registration-agent"}, {Op: framework.OpStop, Cluster: c, Proc: "work-agent"}},
			[]framework.Action{{Op: framework.OpStart, Cluster: c, Proc: "registration-agent"}, {Op: framework.OpStart, Cluster: c, Proc: "work-agent"}}
	case MemberScheduler:
		return one(framework.OpKill, framework.OpStart, c, "fleetset-scheduler")
	case MemberKCM:
		return one(framework.OpKill, framework.OpStart, c, "kube-controller-manager")
	case MemberBlackhole:
		return one(framework.OpBlackhole, framework.OpHeal, c, "")
	case MemberFreeze:
		for i := range memberProcs {
			inject = append(inject, framework.Action{Op: framework.OpPause, Cluster: c, Proc: memberProcs[i]})
			heal = append(heal, framework.Action{Op: framework.OpResume, Cluster: c, Proc: memberProcs[len(memberProcs)-1-i]})
		}
		return inject, heal
	}
	return nil, nil
}

// conflicts reports whether a and b may not overlap in time: the same
// target, or a member's fleetset component down while that member is lost
// to the hub (cut or its OCM agents stopped). That pair is the gap
// docs/failover.md leaves to the operator — nothing on the member fences
// while its component is down — so the run does not draw it.
func conflicts(a, b Fault) bool {
	if a.target() == b.target() {
		return true
	}
	// A restore writes to the hub's apiserver.
	if (a.Kind == HubRestore && b.target() == "hub/kube-apiserver") || (b.Kind == HubRestore && a.target() == "hub/kube-apiserver") {
		return true
	}
	if a.Cluster != b.Cluster || !a.Kind.memberScoped() || !b.Kind.memberScoped() {
		return false
	}
	// A frozen member is every one of its processes: nothing else on it
	// at the same time.
	if a.Kind == MemberFreeze || b.Kind == MemberFreeze {
		return true
	}
	// Two cuts of one link (plain and silent) are one target.
	if a.Kind.cutsLink() && b.Kind.cutsLink() {
		return true
	}
	lost := func(k FaultKind) bool { return k.cutsLink() || k == MemberOCM }
	return (a.Kind == MemberScheduler && lost(b.Kind)) || (b.Kind == MemberScheduler && lost(a.Kind))
}

// OpKind is one kind of operation on a FleetSet.
type OpKind string

const (
	// OpScale sets spec.replicas to Op.Replicas.
	OpScale OpKind = "scale"
	// OpTemplate changes the pod template (the VERSION env var to
	// Op.Version): a rollout.
	OpTemplate OpKind = "template"
	// OpPause and OpResume set updateStrategy.rollingUpdate.paused.
	OpPause  OpKind = "pause"
	OpResume OpKind = "resume"
	// OpFailback annotates the FleetSet fleetset.io/failback.
	OpFailback OpKind = "failback"
	// OpFenceEdit lowers spec.failover.fenceGraceSeconds and the pod
	// template's terminationGracePeriodSeconds to Op.FenceGrace and
	// Op.TerminationGrace while a member is cut (drawn inside a
	// member-cut or member-blackhole fault): the hub must still wait for
	// the fence the cut member enforces, the one of its last heartbeat.
	OpFenceEdit OpKind = "fence-edit"
	// OpFenceRestore sets them back to the Target's after that cut.
	OpFenceRestore OpKind = "fence-restore"
	// OpClaimGrowth sets spec.replicas to Op.Replicas (the Target's
	// MaxReplicas) ClaimGrowthLead before a claim-growth-cut fault, Op.Fault.
	OpClaimGrowth OpKind = "claim-growth"
)

// OpKinds are every kind, in report order.
var OpKinds = []OpKind{OpScale, OpTemplate, OpPause, OpResume, OpFailback, OpFenceEdit, OpFenceRestore, OpClaimGrowth}

// Op is one scheduled operation.
type Op struct {
	ID       int           `json:"id"`
	Kind     OpKind        `json:"kind"`
	FleetSet string        `json:"fleetSet"`
	At       time.Duration `json:"at"`
	Replicas int32         `json:"replicas,omitempty"`
	Version  int           `json:"version,omitempty"`
	// FenceGrace and TerminationGrace (seconds): OpFenceEdit and
	// OpFenceRestore.
	FenceGrace       int32 `json:"fenceGrace,omitempty"`
	TerminationGrace int64 `json:"terminationGrace,omitempty"`
	// Fault is the ID of the fault an OpClaimGrowth prepares.
	Fault int `json:"fault,omitempty"`
}

func (o Op) String() string {
	switch o.Kind {
	case OpClaimGrowth:
		return fmt.Sprintf("#%d %s %s to %d before fault #%d", o.ID, o.Kind, o.FleetSet, o.Replicas, o.Fault)
	case OpScale:
		return fmt.Sprintf("#%d %s %s to %d", o.ID, o.Kind, o.FleetSet, o.Replicas)
	case OpTemplate:
		return fmt.Sprintf("#%d %s %s VERSION=%d", o.ID, o.Kind, o.FleetSet, o.Version)
	case OpFenceEdit, OpFenceRestore:
		return fmt.Sprintf("#%d %s %s fenceGraceSeconds=%d terminationGracePeriodSeconds=%d", o.ID, o.Kind, o.FleetSet, o.FenceGrace, o.TerminationGrace)
	}
	return fmt.Sprintf("#%d %s %s", o.ID, o.Kind, o.FleetSet)
}

// Target is one FleetSet operations act on, with its replica range.
type Target struct {
	Name        string `json:"name"`
	MinReplicas int32  `json:"minReplicas"`
	MaxReplicas int32  `json:"maxReplicas"`
	// Failback: the FleetSet has failback Manual, so failback operations
	// are drawn for it.
	Failback bool `json:"failback,omitempty"`
	// FenceGrace and TerminationGrace (seconds) are the FleetSet's
	// fenceGraceSeconds and terminationGracePeriodSeconds; FenceGrace > 0
	// draws fence edits for it during cuts (OpFenceEdit, OpFenceRestore
	// back to these).
	FenceGrace       int32 `json:"fenceGrace,omitempty"`
	TerminationGrace int64 `json:"terminationGrace,omitempty"`
	// Claims: the FleetSet has volume claim templates, so claim-growth
	// operations are drawn for it.
	Claims bool `json:"claims,omitempty"`
}

// Config is what a schedule is drawn from, besides the seed.
type Config struct {
	// Duration is the fault phase; no fault or operation starts after it,
	// and every fault has ended by it.
	Duration time.Duration `json:"duration"`
	// Warmup: nothing before it.
	Warmup time.Duration `json:"warmup"`
	// MaxFaults is the most faults active at once.
	MaxFaults int      `json:"maxFaults"`
	Members   []string `json:"members"`
	FleetSets []Target `json:"fleetSets"`
	// FaultGap and OpGap bound the time between two drawn faults and two
	// operations.
	FaultGap [2]time.Duration `json:"faultGap"`
	OpGap    [2]time.Duration `json:"opGap"`
	// ExtraGap bounds the time between two drawn faults of the extra
	// kinds (member-blackhole, member-freeze), from their own stream; zero:
	// none are drawn. At most one extra fault is active at a time, on top
	// of MaxFaults of the main kinds (so that the main kinds, which fill
	// MaxFaults, leave them room).
	ExtraGap [2]time.Duration `json:"extraGap,omitempty"`
	// LateGap bounds the time between two drawn faults of the late kinds
	// (claim-growth-cut, hub-stale-peers), from a third stream; zero: none
	// are drawn. At most one late fault is active at a time, on top of the
	// others. A claim-growth-cut is drawn only with a Target that has
	// Claims, and only ClaimGrowthLead after the warmup or later.
	LateGap [2]time.Duration `json:"lateGap,omitempty"`
}

// webFenceGrace is web's fenceGraceSeconds in the run (TestChaos).
const webFenceGrace = 40

// RunConfig is the Config `make chaos` draws its schedule from (TestChaos,
// and TestPlan that prints it without a fleet): a fault phase of d after a
// 10 s warmup, at most maxFaults faults of the main kinds at once, on
// members; the FleetSets db (claims), web (failback Manual, a fence of
// webFenceGrace seconds, edited during cuts) and cache (claims); the extra
// kinds drawn, and the late kinds if late (CHAOS_LATE, off for
// chaos-unsafe, whose seed was chosen for one cut of its main kinds).
func RunConfig(d time.Duration, maxFaults int, members []string, late bool) Config {
	c := Config{Duration: d, Warmup: 10 * time.Second, MaxFaults: maxFaults, Members: members,
		FleetSets: []Target{{Name: "db", MinReplicas: 3, MaxReplicas: 9, Claims: true},
			{Name: "web", MinReplicas: 3, MaxReplicas: 8, Failback: true, FenceGrace: webFenceGrace, TerminationGrace: 0},
			{Name: "cache", MinReplicas: 2, MaxReplicas: 6, Claims: true}},
		FaultGap: [2]time.Duration{3 * time.Second, 15 * time.Second}, OpGap: [2]time.Duration{8 * time.Second, 20 * time.Second},
		ExtraGap: [2]time.Duration{15 * time.Second, 45 * time.Second}}
	if late {
		c.LateGap = [2]time.Duration{30 * time.Second, 90 * time.Second}
	}
	return c
}

// Schedule is a run's faults and operations, a pure function of the seed
// and the Config: a failing seed replays exactly.
type Schedule struct {
	Seed   uint64  `json:"seed"`
	Config Config  `json:"config"`
	Faults []Fault `json:"faults"`
	Ops    []Op    `json:"ops"`
}

// Draw draws the schedule of seed: faults whose arrivals are FaultGap
// apart, each of a kind, cluster and hold drawn from the seed, dropped
// (the draw still consumed) when it would exceed MaxFaults at once or
// conflict with an overlapping fault; and operations OpGap apart on a
// FleetSet drawn from the seed. math/rand/v2's PCG, seeded with seed.
func Draw(seed uint64, c Config) Schedule {
	s := Schedule{Seed: seed, Config: c}
	fr := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	between := func(r *rand.Rand, lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)))
	}
	// Faults: the main kinds from fr, then the extra kinds from their own
	// stream, each admitted only where it fits beside those drawn before.
	drawFaults := func(r *rand.Rand, kinds []FaultKind, gap [2]time.Duration, warmup time.Duration, limit int, counted func(Fault) bool) {
		for at := warmup + between(r, gap[0], gap[1]); at < c.Duration; at += between(r, gap[0], gap[1]) {
			kind := kinds[r.IntN(len(kinds))]
			f := Fault{Kind: kind, At: at.Truncate(100 * time.Millisecond)}
			if kind.memberScoped() {
				f.Cluster = c.Members[r.IntN(len(c.Members))]
			} else {
				f.Cluster = "hub"
			}
			h := holds[kind]
			f.Hold = between(r, h[0], h[1]).Truncate(100 * time.Millisecond)
			if f.end() > c.Duration {
				f.Hold = c.Duration - f.At
			}
			if f.Hold < time.Second {
				continue
			}
			active := 0
			ok := true
			var same []Fault // the faults limit counts
			for _, g := range s.Faults {
				if counted(g) {
					same = append(same, g)
				}
				if g.At < f.end() && f.At < g.end() {
					if counted(g) {
						active++
					}
					if conflicts(f, g) {
						ok = false
					}
				}
			}
			// Overlap with any one fault is not enough: count the faults
			// active at each instant of f's hold (the starts inside it, and
			// its own).
			if ok && active >= limit && maxConcurrent(append(same, f)) > limit {
				ok = false
			}
			if !ok {
				continue
			}
			f.ID = len(s.Faults) + 1
			s.Faults = append(s.Faults, f)
		}
	}
	isExtra := func(f Fault) bool { return slices.Contains(extraKinds, f.Kind) }
	drawFaults(fr, mainKinds, c.FaultGap, c.Warmup, c.MaxFaults, func(f Fault) bool { return !isExtra(f) })
	xr := rand.New(rand.NewPCG(seed, 0xbb67ae8584caa73b))
	if c.ExtraGap[1] > 0 {
		drawFaults(xr, extraKinds, c.ExtraGap, c.Warmup, 1, isExtra)
	}
	lr := rand.New(rand.NewPCG(seed, 0x3c6ef372fe94f82b))
	var growTargets []Target
	for _, t := range c.FleetSets {
		if t.Claims {
			growTargets = append(growTargets, t)
		}
	}
	if c.LateGap[1] > 0 {
		kinds := lateKinds
		if len(growTargets) == 0 {
			kinds = []FaultKind{HubStalePeers}
		}
		isLate := func(f Fault) bool { return slices.Contains(lateKinds, f.Kind) }
		drawFaults(lr, kinds, c.LateGap, c.Warmup+ClaimGrowthLead, 1, isLate)
	}
	slices.SortStableFunc(s.Faults, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	for i := range s.Faults {
		s.Faults[i].ID = i + 1
	}
	// Operations, from their own stream so that the fault schedule of a seed
	// does not change with the FleetSets.
	or := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	paused := map[string]bool{}
	version := map[string]int{}
	replicas := map[string]int32{}
	if len(c.FleetSets) == 0 {
		return s
	}
	for at := c.Warmup + between(or, c.OpGap[0], c.OpGap[1]); at < c.Duration; at += between(or, c.OpGap[0], c.OpGap[1]) {
		t := c.FleetSets[or.IntN(len(c.FleetSets))]
		o := Op{FleetSet: t.Name, At: at.Truncate(100 * time.Millisecond)}
		switch r := or.IntN(100); {
		case r < 35:
			o.Kind = OpScale
			for {
				o.Replicas = t.MinReplicas + or.Int32N(t.MaxReplicas-t.MinReplicas+1)
				if o.Replicas != replicas[t.Name] || t.MinReplicas == t.MaxReplicas {
					break
				}
			}
			replicas[t.Name] = o.Replicas
		case r < 70:
			o.Kind = OpTemplate
			version[t.Name]++
			o.Version = version[t.Name] + 1 // created with VERSION=1
		case r < 88:
			if paused[t.Name] {
				o.Kind = OpResume
			} else {
				o.Kind = OpPause
			}
			paused[t.Name] = !paused[t.Name]
		default:
			if !t.Failback {
				o.Kind = OpTemplate
				version[t.Name]++
				o.Version = version[t.Name] + 1
			} else {
				o.Kind = OpFailback
			}
		}
		o.ID = len(s.Ops) + 1
		s.Ops = append(s.Ops, o)
	}
	// Whatever is paused at the end is resumed, at the end of the fault
	// phase, so that every FleetSet can converge.
	for _, t := range c.FleetSets {
		if paused[t.Name] {
			s.Ops = append(s.Ops, Op{ID: len(s.Ops) + 1, Kind: OpResume, FleetSet: t.Name, At: c.Duration})
		}
	}
	s.Ops = append(s.Ops, fenceEdits(xr, c, s.Faults)...)
	s.Ops = append(s.Ops, claimGrowths(lr, growTargets, s.Faults)...)
	slices.SortStableFunc(s.Ops, func(a, b Op) int { return cmp.Compare(a.At, b.At) })
	for i := range s.Ops {
		s.Ops[i].ID = i + 1
	}
	deferOps(&s, c.FleetSets)
	return s
}

// fenceEdits draws, for each member-cut or member-blackhole fault, with
// odds one in two, a fence edit of one FleetSet with FenceGrace > 0 (drawn
// from r) halfway through the cut, lowering its fenceGraceSeconds to 0 and
// its terminationGracePeriodSeconds to half the Target's, and its restore to the Target's
// values 5 seconds after the heal (at the end of the fault phase at the
// latest). None when no Target has FenceGrace.
func fenceEdits(r *rand.Rand, c Config, faults []Fault) []Op {
	var targets []Target
	for _, t := range c.FleetSets {
		if t.FenceGrace > 0 {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	var out []Op
	for _, f := range faults {
		if f.Kind != MemberCut && f.Kind != MemberBlackhole {
			continue
		}
		if r.IntN(2) == 0 {
			continue
		}
		t := targets[r.IntN(len(targets))]
		edit := Op{Kind: OpFenceEdit, FleetSet: t.Name, At: (f.At + f.Hold/2).Truncate(100 * time.Millisecond), FenceGrace: 0, TerminationGrace: t.TerminationGrace / 2}
		restore := Op{Kind: OpFenceRestore, FleetSet: t.Name, At: min(f.end()+5*time.Second, c.Duration), FenceGrace: t.FenceGrace, TerminationGrace: t.TerminationGrace}
		out = append(out, edit, restore)
	}
	return out
}

// deferOps fills each hub-restore's Restore and keeps its window
// [At−RestoreLead, end+RestoreQuiet] free of operations on what it
// restores: every FleetSet of targets, but one a claim-growth touches in
// the window (its time is its fault's); the other operations in the
// window are deferred to its end, in order. Restores are taken in time
// order, so an operation deferred into a later one's window is deferred
// again. The operations are renumbered.
func deferOps(s *Schedule, targets []Target) {
	for i, f := range s.Faults {
		if f.Kind != HubRestore {
			continue
		}
		from, to := f.At-RestoreLead, f.end()+RestoreQuiet
		in := func(o Op) bool { return o.At >= from && o.At <= to }
		for _, t := range targets {
			if !slices.ContainsFunc(s.Ops, func(o Op) bool { return o.FleetSet == t.Name && o.Kind == OpClaimGrowth && in(o) }) {
				s.Faults[i].Restore = append(s.Faults[i].Restore, t.Name)
			}
		}
		for j, o := range s.Ops {
			if in(o) && o.Kind != OpClaimGrowth && slices.Contains(s.Faults[i].Restore, o.FleetSet) {
				s.Ops[j].At = to + 100*time.Millisecond
			}
		}
		slices.SortStableFunc(s.Ops, func(a, b Op) int { return cmp.Compare(a.At, b.At) })
	}
	for i := range s.Ops {
		s.Ops[i].ID = i + 1
	}
}

// claimGrowths draws, for each claim-growth-cut fault, the Target (one
// with Claims, from r) it grows: an OpClaimGrowth to its MaxReplicas,
// ClaimGrowthLead before the cut.
func claimGrowths(r *rand.Rand, targets []Target, faults []Fault) []Op {
	var out []Op
	for _, f := range faults {
		if f.Kind != ClaimGrowthCut || len(targets) == 0 {
			continue
		}
		t := targets[r.IntN(len(targets))]
		out = append(out, Op{Kind: OpClaimGrowth, FleetSet: t.Name, At: f.At - ClaimGrowthLead, Replicas: t.MaxReplicas, Fault: f.ID})
	}
	return out
}

// maxConcurrent returns the most faults active at once.
func maxConcurrent(fs []Fault) int {
	most := 0
	for _, f := range fs {
		n := 0
		for _, g := range fs {
			if g.At <= f.At && f.At < g.end() {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
