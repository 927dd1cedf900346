package contact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Heartbeat renews the member's heartbeat Lease on the hub
// (v1alpha1.HeartbeatLeaseName in the namespace named after the
// ManagedCluster) every Period, and the member's local record of its last
// contact (v1alpha1.MemberLeaseName in v1alpha1.ResyncLeaseNamespace of the
// member cluster), reporting each hub attempt to Monitor.
//
// The hub reads the heartbeat with its own clock: it notes when it observed
// each change, never compares renewTime with its time. renewTime is written
// for people (kubectl get lease) and for the member's own record.
type Heartbeat struct {
	// Cluster is the ManagedCluster's name: the heartbeat's namespace on the hub.
	Cluster string
	// Identity is the Lease's holderIdentity (the member process).
	Identity string
	// PeerURL, when set, is written to the annotation
	// v1alpha1.AnnotationPeerURL: where other members ask this one whether
	// it reaches the hub. The hub delivers it to the other members.
	PeerURL string
	// Report, when set, returns what the heartbeat tells the hub of the
	// member (annotations AnnotationMemberState, AnnotationMemberReason and
	// AnnotationMemberPeers); read once per beat.
	Report func() Report
	// Hub writes the heartbeat Lease on the hub.
	Hub coordinationclient.LeasesGetter
	// Local writes the record Lease in the member cluster; nil: none.
	Local coordinationclient.LeasesGetter
	// Monitor receives every hub attempt.
	Monitor *Monitor
	// Clock gives the send times: the Monitor's clock.
	Clock clock.Clock
	// Period is the time between attempts (seconds; a third of the timeout
	// by default); each attempt is bounded by it too.
	Period time.Duration
	// Restored, when set, is called once by Run with what the local record
	// says of the process before this one: how long ago it last ran an
	// attempt (AnnotationMemberAlive) and how long ago it last reached the
	// hub; called only when the record has both.
	Restored func(sinceAlive, sinceContact time.Duration)
}

// Report is what a heartbeat tells the hub of the member.
type Report struct {
	// State and Reason are the member's fencing state and why.
	State, Reason string
	// Peers is how many peers the member knows (the peers ConfigMap the hub
	// delivered); -1: unknown, not reported. The Monitor keeps the count of
	// the last successful beat: the member and the hub then judge a cut by
	// the same number (see AnnotationMemberPeers).
	Peers int
	// FenceSeconds is the longest fence the member enforces, in seconds
	// (AnnotationMemberFenceSeconds); -1: unknown, not reported.
	FenceSeconds int64
	// FencedPlacements is how many placements carry a fence record not
	// yet lifted (AnnotationMemberFencedPlacements); -1: unknown, not
	// reported.
	FencedPlacements int
	// Epochs is the member's record of the highest epoch it ran each
	// placement at (AnnotationMemberEpochs, a JSON object); "": not
	// reported.
	Epochs string
}

// Run renews every Period until ctx is done. Before the first attempt it
// restores the Monitor from the local record, when there is one.
func (h *Heartbeat) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("heartbeat").WithValues("cluster", h.Cluster)
	h.restore(ctx, logger)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := h.Beat(ctx); err != nil {
			logger.V(2).Info("Heartbeat to the hub failed", "err", err, "sinceContact", h.Monitor.Status().SinceContact.Round(time.Second))
		}
	}, h.Period)
}

// Beat makes one attempt, bounded by Period: it renews the hub Lease and,
// on success, the local record. It returns nil only when the hub answered
// the write with the Lease as written (see renew): a request that timed out,
// was cut, or came back without the written Lease is a failed attempt, and
// so is reported to the Monitor. The error is the hub write's, or the local
// record's.
func (h *Heartbeat) Beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.Period)
	defer cancel()
	sent := h.Clock.Now()
	r := Report{Peers: -1, FenceSeconds: -1, FencedPlacements: -1}
	if h.Report != nil {
		r = h.Report()
	}
	// Every scheduler replica beats on the same Lease: a race with another
	// replica's write is retried, not counted as lost contact.
	err := retryRaced(ctx, func() error {
		return renew(ctx, h.Hub.Leases(h.Cluster), fleetv1.HeartbeatLeaseName, h.lease(sent, r), func(a map[string]string) {
			h.peerEntries(a, sent)
		})
	})
	h.Monitor.AttemptReporting(sent, err, r.Peers)
	if err != nil {
		heartbeatFailures.Inc()
		err = fmt.Errorf("renewing Lease %s/%s on the hub: %w", h.Cluster, fleetv1.HeartbeatLeaseName, err)
		if h.Local != nil {
			if aerr := h.markAlive(ctx, sent); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
		return err
	}
	if h.Local == nil {
		return nil
	}
	// The local record keeps the time and the peers of this contact, and
	// that this process ran.
	l := h.lease(sent, r)
	l.Labels = nil
	l.Annotations = map[string]string{fleetv1.AnnotationMemberAlive: sent.UTC().Format(time.RFC3339Nano)}
	if r.Peers >= 0 {
		l.Annotations[fleetv1.AnnotationMemberPeers] = strconv.Itoa(r.Peers)
	}
	if err := retryRaced(ctx, func() error {
		return renew(ctx, h.Local.Leases(fleetv1.ResyncLeaseNamespace), fleetv1.MemberLeaseName, l.DeepCopy(), nil)
	}); err != nil {
		return fmt.Errorf("renewing the member's record Lease %s/%s: %w", fleetv1.ResyncLeaseNamespace, fleetv1.MemberLeaseName, err)
	}
	return nil
}

// markAlive records on the member's record Lease, when there is one, that
// this process ran an attempt at sent (AnnotationMemberAlive), leaving the
// last contact as it is. The error is the patch's; a missing record is
// none (the first contact creates it).
func (h *Heartbeat) markAlive(ctx context.Context, sent time.Time) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fleetv1.AnnotationMemberAlive, sent.UTC().Format(time.RFC3339Nano))
	_, err := h.Local.Leases(fleetv1.ResyncLeaseNamespace).Patch(ctx, fleetv1.MemberLeaseName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording that the member ran in its record Lease %s/%s: %w", fleetv1.ResyncLeaseNamespace, fleetv1.MemberLeaseName, err)
	}
	return nil
}

// raceRetries is how many times a write that lost a race to another
// replica's is tried in all.
const raceRetries = 5

// retryRaced calls fn until it returns nil, an error that is not raced,
// raceRetries times in all, or ctx is done, and returns fn's last error:
// nil only when fn's last call returned nil.
//
// It replaces client-go's retry.OnError, which returns its last *retriable*
// error when fn's error matches context.DeadlineExceeded or
// context.Canceled (wait.Interrupted) — nil when there was none: a hub
// request that hung until its deadline (a silent partition) was reported as
// a success.
func retryRaced(ctx context.Context, fn func() error) error {
	var err error
	for i := range raceRetries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(10 * time.Millisecond):
			}
		}
		if err = fn(); err == nil || !raced(err) {
			return err
		}
	}
	return err
}

// lease is the desired heartbeat Lease at sent.
func (h *Heartbeat) lease(sent time.Time, r Report) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{fleetv1.LabelHeartbeat: "true"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(h.Identity),
			LeaseDurationSeconds: ptr.To(int32(h.Monitor.Timeout() / time.Second)),
			RenewTime:            ptr.To(metav1.NewMicroTime(sent)),
		},
	}
	l.Annotations = map[string]string{}
	if h.PeerURL != "" {
		l.Annotations[fleetv1.AnnotationPeerURL] = h.PeerURL
	}
	if r.State != "" {
		l.Annotations[fleetv1.AnnotationMemberState] = r.State
		l.Annotations[fleetv1.AnnotationMemberReason] = r.Reason
	}
	if r.FenceSeconds >= 0 {
		l.Annotations[fleetv1.AnnotationMemberFenceSeconds] = strconv.FormatInt(r.FenceSeconds, 10)
	}
	if r.Peers >= 0 {
		l.Annotations[fleetv1.AnnotationMemberPeers] = strconv.Itoa(r.Peers)
	}
	if r.FencedPlacements >= 0 {
		l.Annotations[fleetv1.AnnotationMemberFencedPlacements] = strconv.Itoa(r.FencedPlacements)
	}
	if r.Epochs != "" {
		l.Annotations[fleetv1.AnnotationMemberEpochs] = r.Epochs
	}
	return l
}

// peerEntry is one replica's entry in AnnotationPeerURLs.
type peerEntry struct {
	// URL is the replica's peer URL.
	URL string `json:"url"`
	// Seen is when the replica last wrote its entry (its clock).
	Seen time.Time `json:"seen"`
}

// peerEntries sets, in the annotations a of the heartbeat Lease about to be
// written at sent, this replica's entry (Identity → PeerURL) in
// AnnotationPeerURLs and drops the entries of replicas that did not write
// theirs for two heartbeat timeouts (a replica gone; the margin covers the
// clock differences between the member's nodes). Without PeerURL, this
// replica's entry is dropped. An unreadable annotation is replaced.
func (h *Heartbeat) peerEntries(a map[string]string, sent time.Time) {
	entries := map[string]peerEntry{}
	if v, ok := a[fleetv1.AnnotationPeerURLs]; ok {
		_ = json.Unmarshal([]byte(v), &entries)
	}
	for id, e := range entries {
		if id == h.Identity || sent.Sub(e.Seen) > 2*h.Monitor.Timeout() {
			delete(entries, id)
		}
	}
	if h.PeerURL != "" {
		entries[h.Identity] = peerEntry{URL: h.PeerURL, Seen: sent.UTC().Truncate(time.Second)}
	}
	if len(entries) == 0 {
		delete(a, fleetv1.AnnotationPeerURLs)
		return
	}
	b, _ := json.Marshal(entries) // sorted keys
	a[fleetv1.AnnotationPeerURLs] = string(b)
}

// renew creates the Lease name in c, or updates its spec, labels and
// annotations to want's, then lets annotate (nil: none) change the
// annotations to write, starting from those read. It returns nil only when
// the server answered the write with the Lease as written (acknowledged);
// any error of the read or the write is returned as is.
func renew(ctx context.Context, c coordinationclient.LeaseInterface, name string, want *coordinationv1.Lease, annotate func(map[string]string)) error {
	want.Name = name
	cur, err := c.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if annotate != nil {
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			annotate(want.Annotations)
		}
		want.Spec.AcquireTime = want.Spec.RenewTime
		got, err := c.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return acknowledged(got, want, "")
	}
	if err != nil {
		return err
	}
	if cur == nil || cur.Name != name {
		return fmt.Errorf("reading Lease %s: the server answered without it", name)
	}
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		cur.Labels[k] = v
	}
	if len(want.Annotations) > 0 && cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		cur.Annotations[k] = v
	}
	if annotate != nil {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		annotate(cur.Annotations)
	}
	if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != *want.Spec.HolderIdentity || cur.Spec.AcquireTime == nil {
		cur.Spec.AcquireTime = want.Spec.RenewTime
	}
	cur.Spec.HolderIdentity = want.Spec.HolderIdentity
	cur.Spec.LeaseDurationSeconds = want.Spec.LeaseDurationSeconds
	cur.Spec.RenewTime = want.Spec.RenewTime
	prev := cur.ResourceVersion
	got, err := c.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	return acknowledged(got, want, prev)
}

// acknowledged returns nil when got, the server's answer to a write of
// want over the version prev ("" for a create), is the Lease as written:
// want's name, holder and renewTime, and a resourceVersion other than prev
// when both are known. Otherwise the write is not known to have happened
// (no object, an empty one, an older one) and the error says why.
func acknowledged(got, want *coordinationv1.Lease, prev string) error {
	switch {
	case got == nil || got.Name == "":
		return fmt.Errorf("writing Lease %s: the server answered without the Lease", want.Name)
	case got.Name != want.Name:
		return fmt.Errorf("writing Lease %s: the server answered with Lease %s", want.Name, got.Name)
	case got.Spec.RenewTime == nil || !sameMicro(got.Spec.RenewTime.Time, want.Spec.RenewTime.Time) ||
		got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != *want.Spec.HolderIdentity:
		return fmt.Errorf("writing Lease %s: the server answered with another holder or renewTime than written (%v, %v)", want.Name, got.Spec.HolderIdentity, got.Spec.RenewTime)
	case prev != "" && got.ResourceVersion == prev:
		return fmt.Errorf("writing Lease %s: the server answered with the version read before the write (%s)", want.Name, prev)
	}
	return nil
}

// sameMicro reports whether a and b are the same instant to the
// microsecond, the precision of a Lease's times.
func sameMicro(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

// restore reads the local record and restores the Monitor's last contact
// from its renewTime. The record is this cluster's own, compared with this
// cluster's own wall clock, and only across a restart of this process.
func (h *Heartbeat) restore(ctx context.Context, logger klog.Logger) {
	if h.Local == nil {
		return
	}
	l, err := h.Local.Leases(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.MemberLeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return
	case err != nil:
		logger.Error(err, "Reading the member's record Lease; the timeout starts now")
		return
	case l.Spec.RenewTime == nil:
		return
	}
	age := h.Clock.Since(l.Spec.RenewTime.Time)
	peers := -1
	if n, err := strconv.Atoi(l.Annotations[fleetv1.AnnotationMemberPeers]); err == nil && n >= 0 {
		peers = n
	}
	h.Monitor.Restore(age, peers)
	logger.V(2).Info("Restored last contact with the hub", "age", age.Round(time.Second), "peers", peers)
	alive, err := time.Parse(time.RFC3339Nano, l.Annotations[fleetv1.AnnotationMemberAlive])
	if err != nil || h.Restored == nil {
		return
	}
	// The last attempt ran no earlier than the last contact.
	sinceAlive := min(h.Clock.Since(alive), age)
	logger.V(2).Info("Restored when the previous process last ran", "sinceAlive", sinceAlive.Round(time.Second))
	h.Restored(max(sinceAlive, 0), age)
}

// raced reports whether err is another writer's create or update of the
// same Lease winning the race.
func raced(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}
