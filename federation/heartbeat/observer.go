// Package heartbeat is the hub's view of its members' heartbeats (the
// contract is in api/v1alpha1/member.go): when the hub itself observed each
// member's last renewal, on its own clock, and whether most members are
// lost at once (full disruption).
//
// It follows client-go leader election's observedTime rule: a heartbeat's
// renewTime is written by the member's clock and never compared with the
// hub's; the hub notes the instant it sees renewTime change. A hub that
// restarts has seen nothing yet, so it counts every member as heard at its
// start: it relocates nothing until it has itself watched the members for
// a full fence deadline.
package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// View is what the hub knows of one member's heartbeat.
type View struct {
	// Observed is when the hub last saw the heartbeat renewed (or first saw
	// it, at the earliest the Observer's start), by the hub's clock.
	Observed time.Time
	// Timeout is the member's heartbeat timeout, from the Lease's
	// leaseDurationSeconds.
	Timeout time.Duration
	// PeerURLs are the member's advertised peer endpoints, one per replica
	// of its member component (AnnotationPeerURLs, sorted, each once), or
	// the single AnnotationPeerURL of a member before it; nil: none.
	PeerURLs []string
	// State and Reason are what the member last reported of itself
	// (InContact, Holding, Fenced), from the Lease's annotations.
	State, Reason string
	// Peers is how many peers the member knew at its last heartbeat
	// (AnnotationMemberPeers); -1 when it reported none (a member that
	// fences when no peer answers). 0: it never fences on hub silence, so
	// the hub must not relocate from it.
	Peers int
	// FenceSeconds is the longest fence the member enforces, in seconds
	// (AnnotationMemberFenceSeconds: fence grace plus its pods' termination
	// grace); -1 when it reported none.
	FenceSeconds int64
	// FencedPlacements is how many placements the member reported fenced
	// and not yet lifted (AnnotationMemberFencedPlacements); 0 when absent.
	FencedPlacements int
	// Epochs is the member's record of the highest fencing epoch it ran
	// each placement at (AnnotationMemberEpochs: "<namespace>.<placement>.
	// <owner identity>" to the epoch); nil when it reported none or the
	// annotation does not decode.
	Epochs map[string]int64
	// Renewed is true once the hub observed a renewal of the Lease (a
	// renewTime other than the first it saw): what the Lease says was
	// written since this hub started, not restored from a backup with it.
	Renewed bool
	// RenewTime is the Lease's renewTime as the member wrote it (RFC 3339,
	// microseconds; "" none): what the hub acknowledges to the member
	// (AnnotationMemberAck).
	RenewTime string
}

// record is a View and the renewTime it was observed with.
type record struct {
	View
	renew string
}

// ackTime is the RFC 3339 form of a Lease time with microseconds, as the
// apiserver serializes a MicroTime: the form of AnnotationMemberAck.
const ackTime = "2006-01-02T15:04:05.000000Z07:00"

// Observer keeps the Views of every member's heartbeat and the last full
// disruption. Safe for concurrent use.
type Observer struct {
	clock   clock.PassiveClock
	started time.Time
	// AwaitingAck, when set, is called (without the Observer's lock held)
	// once for every new heartbeat (a renewTime not observed before) whose
	// member reports fence records not yet lifted: the hub then acknowledges the heartbeat in the member's
	// ManifestWorks. It must not block. Set before the first Observe.
	AwaitingAck func(cluster string)
	// IsMember, when set, reports whether a cluster is still a member (its
	// ManagedCluster exists and the fleetset add-on is enabled on it):
	// the heartbeats of other clusters are ignored (Peers, Tick) and
	// forgotten. Set before the first Observe.
	IsMember func(cluster string) bool

	mu      sync.Mutex
	members map[string]*record
	// departed are the last records of clusters that are no longer
	// members (Forget, IsMember false), still renewed when their Lease is
	// written again: a deleted ManagedCluster's member may still run its
	// pods, and fences only once its heartbeats stop reaching the hub, so
	// the hub counts its fence deadline from them (Departed).
	departed map[string]*record
	// disrupted is the last instant Tick found a full disruption; zero:
	// none seen.
	disrupted time.Time
	// inDisruption is Tick's last finding.
	inDisruption bool
}

// NewObserver returns an Observer on clk, started now.
func NewObserver(clk clock.PassiveClock) *Observer {
	return &Observer{clock: clk, started: clk.Now(), members: map[string]*record{}, departed: map[string]*record{}}
}

// Observe records heartbeat Lease l (namespace: the cluster). A renewTime
// different from the last one seen counts as a renewal observed now; so does
// the first sight of a Lease.
//
// The Lease of a cluster that is not a member (IsMember) is not recorded
// as a member's: it forgets the cluster as a member, and renews its
// departed record (Departed).
func (o *Observer) Observe(l *coordinationv1.Lease) {
	if l.Name != fleetv1.HeartbeatLeaseName {
		return
	}
	member := o.IsMember == nil || o.IsMember(l.Namespace)
	if !member {
		o.Forget(l.Namespace)
	}
	renew := ""
	if l.Spec.RenewTime != nil {
		renew = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	var timeout time.Duration
	if l.Spec.LeaseDurationSeconds != nil {
		timeout = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	now := o.clock.Now()
	fenced := 0
	if n, err := strconv.Atoi(l.Annotations[fleetv1.AnnotationMemberFencedPlacements]); err == nil && n > 0 {
		fenced = n
	}
	renewed := false
	defer func() {
		// Once per heartbeat (a renewTime not seen before), whether the
		// informer or a live read (Refresh) shows it first: the reconcile
		// that acknowledges it reads the Lease again without re-queueing.
		if renewed && fenced > 0 && o.AwaitingAck != nil {
			o.AwaitingAck(l.Namespace)
		}
	}()
	o.mu.Lock()
	defer o.mu.Unlock()
	recs := o.members
	if member {
		delete(o.departed, l.Namespace)
	} else {
		recs = o.departed
		fenced = 0 // a departed cluster's works are gone: nothing to acknowledge
	}
	r, ok := recs[l.Namespace]
	if !ok {
		r = &record{}
		recs[l.Namespace] = r
	}
	if !ok || r.renew != renew {
		r.Observed, r.renew = now, renew
		renewed = true
		r.Renewed = ok
	}
	r.Epochs = nil
	if v, ok := l.Annotations[fleetv1.AnnotationMemberEpochs]; ok {
		var epochs map[string]int64
		if json.Unmarshal([]byte(v), &epochs) == nil {
			r.Epochs = epochs
		}
	}
	r.Timeout = timeout
	r.FencedPlacements = fenced
	r.RenewTime = ""
	if l.Spec.RenewTime != nil {
		r.RenewTime = l.Spec.RenewTime.UTC().Format(ackTime)
	}
	r.PeerURLs = peerURLs(l.Annotations)
	r.State = l.Annotations[fleetv1.AnnotationMemberState]
	r.Reason = l.Annotations[fleetv1.AnnotationMemberReason]
	r.Peers = -1
	if n, err := strconv.Atoi(l.Annotations[fleetv1.AnnotationMemberPeers]); err == nil && n >= 0 {
		r.Peers = n
	}
	r.FenceSeconds = -1
	if n, err := strconv.ParseInt(l.Annotations[fleetv1.AnnotationMemberFenceSeconds], 10, 64); err == nil && n >= 0 && n <= maxFenceSeconds {
		r.FenceSeconds = n
	}
}

// maxFenceSeconds bounds a member's reported fence (a week): a larger value
// is not believed, and the spec alone counts.
const maxFenceSeconds = 7 * 24 * 3600

// Forget drops cluster as a member (its Lease was deleted, or it is no
// member any more): it no longer counts as a member, a lost one or a peer,
// and View no longer returns it. Its last record is kept for Departed.
func (o *Observer) Forget(cluster string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.forget(cluster)
}

// forget is Forget with o.mu held.
func (o *Observer) forget(cluster string) {
	if r, ok := o.members[cluster]; ok {
		o.departed[cluster] = r
		delete(o.members, cluster)
	}
	heartbeatAge.DeleteLabelValues(cluster)
}

// Departed returns the last View of cluster's heartbeat since it stopped
// being a member (its ManagedCluster deleted, or the add-on disabled), or
// since its Lease was deleted, renewed by every write of its Lease the
// hub observed since; false when this Observer never observed it (e.g. a
// hub started after the cluster departed) or it is a member again. A
// deleted ManagedCluster is no proof that its member stopped its pods: the
// hub counts its fence deadline from this View.
func (o *Observer) Departed(cluster string) (View, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.members[cluster]; ok {
		return View{}, false
	}
	r, ok := o.departed[cluster]
	if !ok {
		return View{}, false
	}
	return r.View, true
}

// Refresh reads cluster's heartbeat Lease live through reader and observes
// it, so that a decision to relocate never rests on a renewal the hub's
// cache has not shown yet. A missing Lease forgets the member.
func (o *Observer) Refresh(ctx context.Context, reader client.Reader, cluster string) error {
	l := &coordinationv1.Lease{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.HeartbeatLeaseName}, l); err != nil {
		if client.IgnoreNotFound(err) == nil {
			o.Forget(cluster)
			return nil
		}
		return fmt.Errorf("reading heartbeat Lease %s/%s: %w", cluster, fleetv1.HeartbeatLeaseName, err)
	}
	o.Observe(l)
	return nil
}

// View returns cluster's View and whether the hub has seen its heartbeat.
func (o *Observer) View(cluster string) (View, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.members[cluster]
	if !ok {
		return View{}, false
	}
	return r.View, true
}

// Since returns the instant from which a lost member's fence deadline
// counts: the later of its last observed heartbeat and the last full
// disruption, since a member holds, and does not fence, while most members
// have lost the hub.
func (o *Observer) Since(v View) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.disrupted.After(v.Observed) {
		return o.disrupted
	}
	return v.Observed
}

// HighestEpoch returns the member that reports the highest epoch for
// placement key (AnnotationMemberEpochs), and that epoch; false when no
// member reports key. Ties go to the first cluster by name.
func (o *Observer) HighestEpoch(key string) (cluster string, epoch int64, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for c, r := range o.members {
		if o.IsMember != nil && !o.IsMember(c) {
			continue
		}
		e, has := r.Epochs[key]
		if !has || e < 0 {
			continue
		}
		if !ok || e > epoch || (e == epoch && c < cluster) {
			cluster, epoch, ok = c, e, true
		}
	}
	return cluster, epoch, ok
}

// Peers returns every member's peer URLs, by cluster: only the clusters
// that are still members (IsMember), so a departed cluster never counts as
// a silent peer.
func (o *Observer) Peers() map[string][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]string{}
	for c, r := range o.members {
		if o.IsMember != nil && !o.IsMember(c) {
			continue
		}
		if len(r.PeerURLs) > 0 {
			out[c] = slices.Clone(r.PeerURLs)
		}
	}
	return out
}

// peerURLs returns the peer URLs a heartbeat Lease's annotations a
// advertise: every replica's (AnnotationPeerURLs), sorted, each once; else
// the one of AnnotationPeerURL (a member before AnnotationPeerURLs, or one
// whose AnnotationPeerURLs does not decode); nil when neither.
func peerURLs(a map[string]string) []string {
	var entries map[string]struct {
		URL string `json:"url"`
	}
	var out []string
	if v, ok := a[fleetv1.AnnotationPeerURLs]; ok && json.Unmarshal([]byte(v), &entries) == nil {
		for _, e := range entries {
			if e.URL != "" {
				out = append(out, e.URL)
			}
		}
	}
	if len(out) == 0 && a[fleetv1.AnnotationPeerURL] != "" {
		out = []string{a[fleetv1.AnnotationPeerURL]}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Disrupted reports whether the last Tick found a full disruption, and the
// lost members then.
func (o *Observer) Disrupted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.inDisruption
}

// Tick evaluates the fleet at now: a member is lost for this rule once no
// renewal was observed for half its timeout — a shorter threshold than the
// member's own, so that the hub sees a full disruption no later than a
// member that holds because of it — and more than half of the members lost
// is a full disruption. It records the instant, updates the metrics and
// returns the lost members, sorted. A cluster that is no longer a member
// (IsMember) is forgotten first: it counts neither as lost nor as a member.
func (o *Observer) Tick() (disrupted bool, lost []string) {
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.members {
		if o.IsMember != nil && !o.IsMember(c) {
			o.forget(c)
		}
	}
	for c, r := range o.members {
		age := now.Sub(r.Observed)
		heartbeatAge.WithLabelValues(c).Set(age.Seconds())
		if age > r.Timeout/2 {
			lost = append(lost, c)
		}
	}
	sort.Strings(lost)
	disrupted = 2*len(lost) > len(o.members)
	o.inDisruption = disrupted
	if disrupted {
		o.disrupted = now
		fullDisruption.Set(1)
	} else {
		fullDisruption.Set(0)
	}
	membersLost.Set(float64(len(lost)))
	membersCounted.Set(float64(len(o.members)))
	return disrupted, lost
}

// Run ticks every interval until ctx is done.
func (o *Observer) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		o.Tick()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
