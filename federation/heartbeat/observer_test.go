package heartbeat

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func lease(cluster string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: fleetv1.HeartbeatLeaseName,
			Annotations: map[string]string{fleetv1.AnnotationPeerURL: "http://" + cluster}},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(renew))},
	}
}

// TestObserverClockSkew: the hub never compares a member's renewTime with
// its own clock. A member whose clock is 5 minutes behind (renewTime in the
// hub's past) and renews is fresh; one 5 minutes ahead that stopped renewing
// is stale once its timeout passes on the hub's clock; a member first seen
// counts as heard at that moment, however old its renewTime.
func TestObserverClockSkew(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	o := NewObserver(clk)
	behind, ahead := clk.Now().Add(-5*time.Minute), clk.Now().Add(5*time.Minute)
	o.Observe(lease("behind", behind))
	o.Observe(lease("ahead", ahead))
	o.Observe(lease("old", clk.Now().Add(-24*time.Hour)))
	start := clk.Now()
	for i := 1; i <= 12; i++ {
		clk.Step(5 * time.Second)
		o.Observe(lease("behind", behind.Add(time.Duration(i)*5*time.Second))) // renews, 5 min behind
		o.Observe(lease("ahead", ahead))                                       // the same renewTime: no renewal
	}
	v, _ := o.View("behind")
	if !v.Observed.Equal(clk.Now()) {
		t.Errorf("behind: observed %s, want now %s (its renewals count when seen)", v.Observed, clk.Now())
	}
	v, _ = o.View("ahead")
	if !v.Observed.Equal(start) {
		t.Errorf("ahead: observed %s, want its first sight %s (a renewTime in the future is no renewal)", v.Observed, start)
	}
	v, _ = o.View("old")
	if !v.Observed.Equal(start) || v.Timeout != 15*time.Second || !slices.Equal(v.PeerURLs, []string{"http://old"}) {
		t.Errorf("old: %+v, want first sight %s, timeout 15s", v, start)
	}
	disrupted, lost := o.Tick()
	if !disrupted || len(lost) != 2 || lost[0] != "ahead" || lost[1] != "old" {
		t.Errorf("Tick = %v %v, want a full disruption with ahead and old lost (2 of 3)", disrupted, lost)
	}
	if got := o.Since(v); !got.Equal(clk.Now()) {
		t.Errorf("Since = %s, want the disruption seen now %s", got, clk.Now())
	}
	o.Observe(lease("old", clk.Now()))
	if disrupted, _ := o.Tick(); disrupted {
		t.Error("1 of 3 lost is no full disruption")
	}
	if got := o.Peers(); len(got) != 3 || !slices.Equal(got["ahead"], []string{"http://ahead"}) {
		t.Errorf("Peers = %v", got)
	}
	o.Forget("ahead")
	if _, ok := o.View("ahead"); ok {
		t.Error("forgotten member still viewed")
	}
}

// TestObserverPeers: the peers a member reported are in its View; a Lease
// without the annotation (or with a bad one) is -1.
func TestObserverPeers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	o := NewObserver(clk)
	for name, tc := range map[string]struct {
		annotation string
		want       int
	}{"none": {"", -1}, "zero": {"0", 0}, "two": {"2", 2}, "bad": {"x", -1}, "negative": {"-3", -1}} {
		l := lease(name, clk.Now())
		if tc.annotation != "" {
			l.Annotations[fleetv1.AnnotationMemberPeers] = tc.annotation
		}
		o.Observe(l)
		if v, _ := o.View(name); v.Peers != tc.want {
			t.Errorf("%s: Peers %d, want %d", name, v.Peers, tc.want)
		}
	}
}

// TestObserverForgetsDepartedMembers: heartbeats of clusters that are no
// longer members (IsMember false: ManagedCluster deleted) count neither as
// lost members nor as peers. Two departed clusters whose Leases went stale
// would otherwise outnumber the one live member and make the hub see a full
// disruption that holds every relocation.
func TestObserverForgetsDepartedMembers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	o := NewObserver(clk)
	members := map[string]bool{"live": true, "gone-1": true, "gone-2": true}
	o.IsMember = func(c string) bool { return members[c] }
	for c := range members {
		o.Observe(lease(c, clk.Now()))
	}
	clk.Step(time.Minute)
	o.Observe(lease("live", clk.Now()))
	if d, lost := o.Tick(); !d || len(lost) != 2 {
		t.Fatalf("members all current: Tick = %v, %v; want a disruption of the two silent ones", d, lost)
	}
	members["gone-1"], members["gone-2"] = false, false
	if d, lost := o.Tick(); d || len(lost) != 0 {
		t.Errorf("after the two silent clusters departed: Tick = %v, %v, want no disruption, none lost", d, lost)
	}
	if p := o.Peers(); len(p) != 1 || len(p["live"]) != 1 {
		t.Errorf("Peers = %v, want only live", p)
	}
	o.Observe(lease("gone-1", clk.Now()))
	if _, ok := o.View("gone-1"); ok {
		t.Error("a departed cluster's Lease was recorded")
	}
}

// TestObserverAwaitingAckOncePerHeartbeat: a member reporting fence records
// asks for the hub's acknowledgement once per heartbeat, however many times
// the hub observes that heartbeat (its informer, then its own live read),
// so an acknowledging reconcile never re-queues itself; a member without
// records never asks.
func TestObserverAwaitingAckOncePerHeartbeat(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	o := NewObserver(clk)
	asked := map[string]int{}
	o.AwaitingAck = func(c string) { asked[c]++ }
	fenced := func(c string, renew time.Time, n string) *coordinationv1.Lease {
		l := lease(c, renew)
		l.Annotations[fleetv1.AnnotationMemberFencedPlacements] = n
		return l
	}
	t0 := clk.Now()
	o.Observe(fenced("east", t0, "2"))
	o.Observe(fenced("east", t0, "2")) // the same heartbeat, read live
	o.Observe(fenced("west", t0, "0"))
	clk.Step(time.Second)
	o.Observe(fenced("east", t0.Add(time.Second), "2"))
	if asked["east"] != 2 || asked["west"] != 0 {
		t.Errorf("asked %v, want east twice (two heartbeats), west never", asked)
	}
	if v, _ := o.View("east"); v.FencedPlacements != 2 || v.RenewTime != "2026-11-25T12:00:01.000000Z" {
		t.Errorf("east view %+v, want 2 fenced placements, renewTime 2026-11-25T12:00:01.000000Z", v)
	}
}

// TestObserverKeepsDepartedRecord (issue 48): a cluster that departs (its
// ManagedCluster deleted, its Lease deleted by the hub) is no member, but
// the hub keeps the last View of its heartbeat for its fence deadline, and
// a write of its Lease by its still running member renews that View.
func TestObserverKeepsDepartedRecord(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	o := NewObserver(clk)
	members := map[string]bool{"live": true, "gone": true}
	o.IsMember = func(c string) bool { return members[c] }
	o.Observe(lease("live", clk.Now()))
	o.Observe(lease("gone", clk.Now()))
	heard := clk.Now()
	if _, ok := o.Departed("gone"); ok {
		t.Fatal("Departed returns a member")
	}
	clk.Step(10 * time.Second)
	members["gone"] = false
	o.Forget("gone") // the hub deleted its Lease
	v, ok := o.Departed("gone")
	if !ok || !v.Observed.Equal(heard) || v.Timeout != 15*time.Second {
		t.Fatalf("Departed(gone) = %+v, %v; want the last View, observed at %s with timeout 15s", v, ok, heard)
	}
	if _, ok := o.View("gone"); ok {
		t.Error("View returns a departed cluster")
	}
	if p := o.Peers(); len(p) != 1 {
		t.Errorf("Peers = %v, want only live", p)
	}
	// Its member writes its Lease again: it still reaches the hub.
	clk.Step(5 * time.Second)
	o.Observe(lease("gone", clk.Now()))
	o.Observe(lease("live", clk.Now()))
	if v, _ := o.Departed("gone"); !v.Observed.Equal(clk.Now()) {
		t.Errorf("departed record observed at %s after a new write at %s", v.Observed, clk.Now())
	}
	if d, lost := o.Tick(); d || len(lost) != 0 {
		t.Errorf("Tick = %v, %v: a departed cluster counts as lost", d, lost)
	}
	if _, ok := o.Departed("never"); ok {
		t.Error("Departed returns a cluster never observed")
	}
	// Back as a member: a member again, no departed record.
	members["gone"] = true
	o.Observe(lease("gone", clk.Now()))
	if _, ok := o.Departed("gone"); ok {
		t.Error("Departed returns a member again")
	}
}
