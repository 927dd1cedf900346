//go:build integration

package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/member/contact"
)

// markApplied reports, as the work agent would, that cluster has applied the
// FleetSet's work at its current generation.
func markApplied(t testing.TB, cluster, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: "AppliedManifestWorkComplete", Message: "applied", ObservedGeneration: w.Generation})
		return k8sClient.Status().Update(t.Context(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setFeedback writes, as the work agent would, the statusFeedback of
// StatefulSet sts into FleetSet ns/name's work in cluster: its
// metadata.generation, status.observedGeneration and status.replicas.
func setFeedback(t testing.TB, cluster, ns, name, sts string, gen, observed, replicas int64) {
	t.Helper()
	v := func(n string, i int64) workv1.FeedbackValue {
		return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(i)}}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(t.Context(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", Name: sts, Namespace: ns},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				v(manifestwork.FeedbackGeneration, gen), v(manifestwork.FeedbackObservedGeneration, observed), v(manifestwork.FeedbackReplicas, replicas)}},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: metav1.Now()}},
		}}
		return k8sClient.Status().Update(t.Context(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// drainAsAgent plays the work agent and the member's StatefulSet
// controller for a subset leaving cluster: once FleetSet ns/name's work
// there holds StatefulSet sts at replicas 0 (the hub's drain), it marks the
// work Applied and feeds back status.replicas 0 for the current spec.
func drainAsAgent(t testing.TB, cluster, ns, name, sts string) {
	t.Helper()
	eventually(t, 20*time.Second, sts+" drained to replicas 0 in "+cluster, func() (bool, error) {
		w := works(t, ns, name)[cluster]
		if w == nil || !manifestwork.HoldsStatefulSet(w, sts) {
			return false, nil
		}
		var got appsv1.StatefulSet
		manifest(t, w, "StatefulSet", sts, &got)
		return ptr.Deref(got.Spec.Replicas, -1) == 0, nil
	})
	markApplied(t, cluster, ns, name)
	setFeedback(t, cluster, ns, name, sts, 1, 1, 0)
}

// beatTimeout is the members' heartbeat timeout in these tests.
const beatTimeout = 3 * time.Second

// memberBeat runs the member's real heartbeat (member/contact) for cluster
// against the test hub every 500 ms, until the returned stop, which returns
// when the last successful heartbeat was sent.
func memberBeat(t testing.TB, cluster string) (stop func() time.Time) {
	t.Helper()
	return memberBeatReporting(t, cluster, -1)
}

// memberBeatReporting is memberBeat whose heartbeats report peers peers
// (-1: none reported, as a member before AnnotationMemberPeers).
func memberBeatReporting(t testing.TB, cluster string, peers int) (stop func() time.Time) {
	t.Helper()
	return memberBeatTimeout(t, cluster, peers, beatTimeout)
}

// memberBeatTimeout is memberBeatReporting with heartbeat timeout timeout,
// beating every timeout/6.
func memberBeatTimeout(t testing.TB, cluster string, peers int, timeout time.Duration) (stop func() time.Time) {
	t.Helper()
	return memberBeatReport(t, cluster, timeout, contact.Report{State: "InContact", Peers: peers})
}

// memberBeatReport is memberBeatTimeout whose heartbeats report report.
func memberBeatReport(t testing.TB, cluster string, timeout time.Duration, report contact.Report) (stop func() time.Time) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	var mu sync.Mutex
	var last time.Time
	mon := contact.NewMonitor(clk, timeout)
	hb := &contact.Heartbeat{Cluster: cluster, Identity: cluster + "-member", PeerURL: "http://127.0.0.1:1/" + cluster,
		Hub: cs.CoordinationV1(), Monitor: mon, Clock: clk, Period: timeout / 6,
		Report: func() contact.Report { return report }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			sent := clk.Now()
			if err := hb.Beat(ctx); err == nil {
				mu.Lock()
				last = sent
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(hb.Period):
			}
		}
	}()
	eventually(t, 10*time.Second, cluster+" heartbeat written", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return !last.IsZero(), nil
	})
	stopped := false
	stop = func() time.Time {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
		mu.Lock()
		defer mu.Unlock()
		return last
	}
	t.Cleanup(func() {
		stop()
		// No stale heartbeat is left for the next test's hub to count.
		_ = cs.CoordinationV1().Leases(cluster).Delete(context.Background(), fleetv1.HeartbeatLeaseName, metav1.DeleteOptions{})
	})
	return stop
}

// beatingPair creates Available ManagedClusters <prefix>-east and
// <prefix>-west, each with a member heartbeat, and namespace ns. It returns
// the function that stops east's heartbeat (and returns when it last beat).
func beatingPair(t *testing.T, prefix, ns string) (stopEast func() time.Time) {
	t.Helper()
	createCluster(t, prefix+"-east", true)
	createCluster(t, prefix+"-west", true)
	createNamespace(t, ns)
	stopEast = memberBeat(t, prefix+"-east")
	memberBeat(t, prefix+"-west")
	return stopEast
}

// pairFleetSet is sampleFleetSet ns/db with its subsets east and west on
// <prefix>-east and <prefix>-west, terminationGracePeriodSeconds grace and
// failover f.
func pairFleetSet(ns, prefix string, grace int64, f fleetv1.Failover) *fleetv1.FleetSet {
	fs := sampleFleetSet(ns, "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = prefix+"-east", prefix+"-west"
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(grace)
	fs.Spec.Failover = &f
	return fs
}

// threeClusterFleetSet is sampleFleetSet over clusters a, b and c, one
// subset each, failover Relocate with toleration 0.
func threeClusterFleetSet(ns, name, a, b, c string) *fleetv1.FleetSet {
	fs := sampleFleetSet(ns, name)
	fs.Spec.UpdateStrategy.ManualUpdate = nil
	fs.Spec.UpdateStrategy.Type = fleetv1.ManualUpdateStrategyType
	third := *fs.Spec.Topology.Subsets[1].DeepCopy()
	third.Name = "north"
	fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, third)
	for i, cl := range []string{a, b, c} {
		fs.Spec.Topology.Subsets[i].Cluster = cl
		fs.Spec.Topology.Subsets[i].Replicas = nil
	}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)}
	return fs
}

// TestRelocationHeld: with two of a FleetSet's three clusters lost at once
// the hub relocates nothing, past every fence deadline, and says so in
// Degraded RelocationHeld and one event; an operator's out-of-service taint
// on one lost cluster relocates its subset at once. A lost cluster whose
// member never sent a heartbeat is held the same way.
func TestRelocationHeld(t *testing.T) {
	for _, c := range []string{"fh-a", "fh-b", "fh-c", "fh-d"} {
		createCluster(t, c, true)
	}
	createNamespace(t, "held")
	stopA, stopB := memberBeat(t, "fh-a"), memberBeat(t, "fh-b")
	memberBeat(t, "fh-c")
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	if err := k8sClient.Create(t.Context(), threeClusterFleetSet("held", "db", "fh-a", "fh-b", "fh-c")); err != nil {
		t.Fatal(err)
	}
	// fh-d has no member heartbeat at all.
	nobeat := threeClusterFleetSet("held", "nobeat", "fh-d", "fh-c", "fh-b")
	if err := k8sClient.Create(t.Context(), nobeat); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) {
		return len(works(t, "held", "db")) == 3 && len(works(t, "held", "nobeat")) == 3, nil
	})

	stopA()
	stopB()
	setAvailable(t, "fh-a", false)
	setAvailable(t, "fh-b", false)
	setAvailable(t, "fh-d", false)
	lost := time.Now()
	eventually(t, 20*time.Second, "Degraded RelocationHeld (majority lost)", func() (bool, error) {
		c := condition(getFleetSet(t, "held", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonRelocationHeld && strings.Contains(c.Message, "2 of the FleetSet's 3 clusters are lost at once"), nil
	})
	eventually(t, 20*time.Second, "nobeat: Degraded RelocationHeld (no heartbeat)", func() (bool, error) {
		c := condition(getFleetSet(t, "held", "nobeat"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonRelocationHeld && strings.Contains(c.Message, "never observed a heartbeat of fh-d's fleetset member component"), nil
	})
	// Past every deadline (3 + 1 + 0 + 0 + 1 s) and several hold retries.
	time.Sleep(time.Until(lost.Add(10 * time.Second)))
	for name, home := range map[string]map[string]string{"db": {"fh-a": "db-east", "fh-b": "db-west"}, "nobeat": {"fh-d": "nobeat-east"}} {
		ws := works(t, "held", name)
		for cl, sts := range home {
			if ws[cl] == nil || !manifestwork.HoldsStatefulSet(ws[cl], sts) {
				t.Errorf("%s: %s moved away from %s while held", name, sts, cl)
			}
		}
	}
	// One event per held subset and reason (the hold's reason may change
	// from the FleetSet's majority to the members' full disruption), never
	// one per retry.
	if n := testutil.ToFloat64(relocationHolds); n < 3 {
		t.Errorf("fleetset_hub_relocation_holds_total = %v, want ≥ 3 (two subsets of db, one of nobeat)", n)
	}
	if distinct, total := countEvents(t, "held", "db", EventRelocationHeld); distinct < 2 || total != distinct {
		t.Errorf("%d %s events for db (%d distinct), want one per held subset and reason (at least 2, none repeated)", total, EventRelocationHeld, distinct)
	}

	// The operator confirms fh-a out of service: its subset moves at once.
	taint(t, "fh-a", fleetv1.TaintOutOfService)
	eventually(t, 10*time.Second, "db-east relocated to fh-c", func() (bool, error) {
		ws := works(t, "held", "db")
		return ws["fh-c"] != nil && manifestwork.HoldsStatefulSet(ws["fh-c"], "db-east"), nil
	})
	if ws := works(t, "held", "db"); ws["fh-b"] == nil || !manifestwork.HoldsStatefulSet(ws["fh-b"], "db-west") {
		t.Errorf("db-west moved from fh-b without a confirmation")
	}
}

// TestNoPeersHeld: a member whose heartbeats reported no peer does not fence
// on hub silence, so the hub never relocates from it, past every deadline,
// and says why; an operator's out-of-service taint relocates at once.
func TestNoPeersHeld(t *testing.T) {
	for _, c := range []string{"np-a", "np-b", "np-c"} {
		createCluster(t, c, true)
	}
	createNamespace(t, "nopeers")
	stopA := memberBeatReporting(t, "np-a", 0)
	memberBeatReporting(t, "np-b", 2)
	memberBeatReporting(t, "np-c", 2)
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	if err := k8sClient.Create(t.Context(), threeClusterFleetSet("nopeers", "db", "np-a", "np-b", "np-c")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered", func() (bool, error) { return len(works(t, "nopeers", "db")) == 3, nil })
	stopA()
	setAvailable(t, "np-a", false)
	lost := time.Now()
	eventually(t, 20*time.Second, "Degraded RelocationHeld (no peer)", func() (bool, error) {
		c := condition(getFleetSet(t, "nopeers", "db"), fleetv1.ConditionDegraded)
		return c.Reason == fleetv1.ReasonRelocationHeld && strings.Contains(c.Message, "np-a's fleetset member component knew no peer at its last heartbeat"), nil
	})
	// Past the fence deadline (3 + 1 + 0 + 0 + 1 s) and several hold retries.
	time.Sleep(time.Until(lost.Add(10 * time.Second)))
	if ws := works(t, "nopeers", "db"); ws["np-a"] == nil || !manifestwork.HoldsStatefulSet(ws["np-a"], "db-east") {
		t.Fatalf("db-east moved away from np-a, whose member does not fence")
	}
	taint(t, "np-a", fleetv1.TaintOutOfService)
	eventually(t, 10*time.Second, "db-east relocated after the out-of-service taint", func() (bool, error) {
		for cl, w := range works(t, "nopeers", "db") {
			if cl != "np-a" && manifestwork.HoldsStatefulSet(w, "db-east") {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestHubRestartObservesBeforeRelocating: a hub started while a member is
// lost, with its last heartbeat long past, relocates nothing until it has
// itself watched for the member's whole fence deadline.
func TestHubRestartObservesBeforeRelocating(t *testing.T) {
	stopEast := beatingPair(t, "hr", "hubrestart")
	fs := pairFleetSet("hubrestart", "hr", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0)})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	stopEast()
	setAvailable(t, "hr-east", false)
	time.Sleep(9 * time.Second) // the last heartbeat is older than the whole deadline (3 + 1 + 0 + 2 + 1 s)
	started := time.Now()
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: time.Second})
	eventually(t, 30*time.Second, "east relocated to west", func() (bool, error) {
		ws := works(t, "hubrestart", "db")
		return ws["hr-west"] != nil && manifestwork.HoldsStatefulSet(ws["hr-west"], "db-east"), nil
	})
	if took := time.Since(started); took < 7*time.Second {
		t.Errorf("relocated %v after the hub started, before it observed the member for the fence deadline (7s)", took)
	} else {
		t.Logf("relocated %v after the hub started (deadline 7s from its own first observation)", took.Round(100*time.Millisecond))
	}
}

// TestFailover relocates a lost cluster's subset with its identity, only
// after the member has certainly fenced itself — its fence deadline
// (heartbeat timeout + fenceGraceSeconds + terminationGracePeriodSeconds +
// margin) counted from the hub's own observation of its last heartbeat, and
// the toleration — and brings it home on request only once the fallback
// cluster has applied its removal: epoch 0 → 1 → 2, the fencing epoch in the
// SubsetPlacement, the fleet view and events following. The members'
// heartbeats are the real member heartbeat writing to the hub's apiserver.
func TestFailover(t *testing.T) {
	stopEast := beatingPair(t, "fo", "failover")
	const margin = time.Second
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second, RelocationMargin: margin})

	fs := pairFleetSet("failover", "fo", 2, fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](2), FenceGraceSeconds: 1})
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered with fencing", func() (bool, error) {
		ws := works(t, "failover", "db")
		if ws["fo-east"] == nil || ws["fo-west"] == nil {
			return false, nil
		}
		var sp fleetv1.SubsetPlacement
		manifest(t, ws["fo-east"], "SubsetPlacement", "db-east", &sp)
		return sp.Spec.Fencing != nil, nil
	})
	markApplied(t, "fo-east", "failover", "db")
	markApplied(t, "fo-west", "failover", "db")
	eventually(t, 10*time.Second, "resync leases delivered", func() (bool, error) {
		w := &workv1.ManifestWork{}
		return k8sClient.Get(t.Context(), client.ObjectKey{Namespace: "fo-east", Name: fleetv1.ResyncWorkName}, w) == nil, nil
	})

	// Cut east off: its heartbeat stops and OCM sees it unavailable:
	// FailingOver with the fence deadline, then relocated to west with its
	// identity.
	lastBeat := stopEast()
	setAvailable(t, "fo-east", false)
	lost := time.Now()
	eventually(t, 10*time.Second, "Degraded FailingOver naming east and the fence deadline", func() (bool, error) {
		c := condition(getFleetSet(t, "failover", "db"), fleetv1.ConditionDegraded)
		return strings.Contains(c.Message, "subset east on cluster fo-east") && strings.Contains(c.Message, "relocating at") &&
			strings.Contains(c.Message, "timeout 3s + confirmation 1s + fenceGraceSeconds 1s + terminationGracePeriodSeconds 2s + margin 1s"), nil
	})
	eventually(t, 30*time.Second, "east relocated to west", func() (bool, error) {
		ws := works(t, "failover", "db")
		return ws["fo-east"] == nil && ws["fo-west"] != nil && manifestwork.HoldsStatefulSet(ws["fo-west"], "db-east"), nil
	})
	moved := time.Now()
	if fenced := lastBeat.Add(beatTimeout + beatTimeout/3 + time.Second + 2*time.Second + margin); moved.Before(fenced) || moved.Before(lost.Add(2*time.Second)) {
		t.Errorf("relocated at %s, before the fence deadline %s (last heartbeat sent %s) or the toleration", moved.Format(time.StampMilli), fenced.Format(time.StampMilli), lastBeat.Format(time.StampMilli))
	}
	t.Logf("relocated %v after the last heartbeat (deadline %v)", moved.Sub(lastBeat).Round(100*time.Millisecond), beatTimeout+beatTimeout/3+3*time.Second+margin)
	var sts appsv1.StatefulSet
	manifest(t, works(t, "failover", "db")["fo-west"], "StatefulSet", "db-east", &sts)
	if sts.Spec.Ordinals.Start != 0 || ptr.Deref(sts.Spec.Replicas, 0) != 5 {
		t.Errorf("relocated StatefulSet db-east: start %d replicas %d, want its identity: 0 and 5", sts.Spec.Ordinals.Start, ptr.Deref(sts.Spec.Replicas, 0))
	}
	var sp fleetv1.SubsetPlacement
	manifest(t, works(t, "failover", "db")["fo-west"], "SubsetPlacement", "db-east", &sp)
	if sp.Spec.Fencing == nil || sp.Spec.Fencing.Epoch != 1 || sp.Spec.Fencing.GraceSeconds != 1 {
		t.Errorf("relocated SubsetPlacement db-east fencing = %+v, want epoch 1, grace 1", sp.Spec.Fencing)
	}
	// West's own subset names zone-a, zone-b and zone-c, so east keeps its
	// domains there: every ordinal keeps its zone.
	shares := func(ds []fleetv1.DomainShare) string {
		var out []string
		for _, d := range ds {
			share := ""
			if d.Replicas != nil {
				share = d.Replicas.String()
			}
			out = append(out, d.Name+"="+share)
		}
		return strings.Join(out, ",")
	}
	if got, want := shares(sp.Spec.Domains), shares(fs.Spec.Topology.Subsets[0].Domains); got != want {
		t.Errorf("relocated SubsetPlacement db-east domains = %q, want east's own %q", got, want)
	}
	// The hub writes status after the works, in the same reconcile.
	var ss fleetv1.SubsetStatus
	eventually(t, 10*time.Second, "status.subsets[east] FailedOver", func() (bool, error) {
		ss = getFleetSet(t, "failover", "db").Status.Subsets[0]
		return ss.Failover == fleetv1.SubsetFailedOver, nil
	})
	if ss.Cluster != "fo-west" || ss.Epoch != 1 {
		t.Errorf("status.subsets[east] = cluster %s epoch %d failover %q, want fo-west 1 FailedOver", ss.Cluster, ss.Epoch, ss.Failover)
	}
	// Its instances run on fresh claims; those they were created with stay
	// in fo-east (issue 36, item 2).
	if c := ss.Claims; c == nil || c.LeftIn != "fo-east" || c.Replicas != 5 {
		t.Errorf("status.subsets[east].claims = %+v, want left in fo-east for 5 instances", c)
	}
	var cm corev1.ConfigMap
	manifest(t, works(t, "failover", "db")["fo-west"], "ConfigMap", "db-fleet", &cm)
	var view fleetv1.FleetView
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &view); err != nil {
		t.Fatal(err)
	}
	if v := view.Subsets[0]; v.Name != "east" || v.Cluster != "fo-west" || v.Epoch != 1 {
		t.Errorf("fleet view east = %+v, want cluster fo-west epoch 1", v)
	}
	if in := view.Instances[0]; in.Name != "db-east-0" || in.Claims != fleetv1.ClaimsFresh || in.OldClaimsCluster != "fo-east" {
		t.Errorf("fleet view instance %+v, want db-east-0 on fresh claims, old ones in fo-east", in)
	}
	if !hasEvent(t, "failover", "db", EventFailedOver) {
		t.Errorf("no %s event", EventFailedOver)
	}
	if n := testutil.ToFloat64(relocations.WithLabelValues(EventFailedOver)); n < 1 {
		t.Errorf("fleetset_hub_relocations_total{step=FailedOver} = %v, want ≥ 1", n)
	}

	// East returns; failback is Manual: nothing moves until requested.
	setAvailable(t, "fo-east", true)
	time.Sleep(2 * time.Second)
	if ss := getFleetSet(t, "failover", "db").Status.Subsets[0]; ss.Cluster != "fo-west" {
		t.Errorf("east moved home to %s without a failback request", ss.Cluster)
	}
	updateFleetSet(t, "failover", "db", func(fs *fleetv1.FleetSet) {
		fs.Annotations = map[string]string{fleetv1.AnnotationFailback: "now"}
	})
	// Failing back: west keeps db-east at replicas 0 until it reports its
	// pods gone; Applied alone (the work agent reports it before a removed
	// StatefulSet's pods have stopped) brings nothing home.
	eventually(t, 10*time.Second, "east drained in west first (FailingBack)", func() (bool, error) {
		ws := works(t, "failover", "db")
		ss := getFleetSet(t, "failover", "db").Status.Subsets[0]
		if ws["fo-west"] == nil || ws["fo-east"] != nil || ss.Failover != fleetv1.SubsetFailingBack {
			return false, nil
		}
		var sts appsv1.StatefulSet
		manifest(t, ws["fo-west"], "StatefulSet", "db-east", &sts)
		return ptr.Deref(sts.Spec.Replicas, -1) == 0, nil
	})
	markApplied(t, "fo-west", "failover", "db")
	setFeedback(t, "fo-west", "failover", "db", "db-east", 5, 4, 2) // the replicas-0 spec not yet observed
	time.Sleep(2 * time.Second)
	if ws := works(t, "failover", "db"); ws["fo-east"] != nil {
		t.Fatalf("east delivered home before west reported db-east drained (work applied, status of an older spec)")
	}
	setFeedback(t, "fo-west", "failover", "db", "db-east", 5, 5, 1) // one pod still terminating
	time.Sleep(2 * time.Second)
	if ws := works(t, "failover", "db"); ws["fo-east"] != nil {
		t.Fatalf("east delivered home while west still counts a db-east pod")
	}
	setFeedback(t, "fo-west", "failover", "db", "db-east", 5, 5, 0)
	eventually(t, 10*time.Second, "east home with epoch 2", func() (bool, error) {
		ws := works(t, "failover", "db")
		got := getFleetSet(t, "failover", "db")
		ss := got.Status.Subsets[0]
		_, annotated := got.Annotations[fleetv1.AnnotationFailback]
		return ws["fo-east"] != nil && manifestwork.HoldsStatefulSet(ws["fo-east"], "db-east") &&
			ss.Cluster == "fo-east" && ss.Epoch == 2 && ss.Failover == "" && !annotated, nil
	})
	if !hasEvent(t, "failover", "db", EventFailedBack) {
		t.Errorf("no %s event", EventFailedBack)
	}
	if c := getFleetSet(t, "failover", "db").Status.Subsets[0].Claims; c != nil {
		t.Errorf("failed back home: status.subsets[east].claims = %+v, want none (on the claims it was created with)", c)
	}
}

// countEvents returns how many distinct events with reason were recorded on
// ns/name, and how many times in all (the recorder folds repeats of one
// message into one Event's count).
func countEvents(t testing.TB, ns, name, reason string) (distinct, total int) {
	t.Helper()
	var list corev1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			distinct++
			total += int(max(e.Count, 1))
		}
	}
	return distinct, total
}

// taint adds a NoExecute taint key to ManagedCluster name.
func taint(t testing.TB, name, key string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &clusterv1.ManagedCluster{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		mc.Spec.Taints = append(mc.Spec.Taints, clusterv1.Taint{Key: key, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()})
		return k8sClient.Update(context.Background(), mc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpecMoveIsTwoPhase edits a subset's cluster (no failover policy): the
// subset is first drained in its old cluster — its StatefulSet there at
// replicas 0, status Moving, Degraded Moving, nothing in the new cluster —
// and reaches the new cluster, with epoch 1, only once the old cluster's
// work agent has applied the drain and fed back status.replicas 0 for the
// StatefulSet's current spec; Applied alone, or a count of pods still
// terminating, moves nothing.
func TestSpecMoveIsTwoPhase(t *testing.T) {
	for _, c := range []string{"mv-east", "mv-west", "mv-north"} {
		createCluster(t, c, true)
	}
	createNamespace(t, "move")
	startHubWith(t, Options{HubIdentity: "test-hub", LeaseDuration: 3 * time.Second})
	fs := sampleFleetSet("move", "db")
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "mv-east", "mv-west"
	// Claims deleted on scale-down: the drain to 0 of a move must not.
	fs.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	if err := k8sClient.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works delivered and status written", func() (bool, error) {
		ws := works(t, "move", "db")
		st := getFleetSet(t, "move", "db").Status.Subsets
		return ws["mv-east"] != nil && ws["mv-west"] != nil && len(st) == 2 && st[0].Cluster == "mv-east", nil
	})
	updateFleetSet(t, "move", "db", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Cluster = "mv-north" })
	eventually(t, 10*time.Second, "subset east Moving, drained in mv-east", func() (bool, error) {
		got := getFleetSet(t, "move", "db")
		c := condition(got, fleetv1.ConditionDegraded)
		w := works(t, "move", "db")["mv-east"]
		if w == nil || !manifestwork.HoldsStatefulSet(w, "db-east") {
			return false, nil
		}
		var sts appsv1.StatefulSet
		manifest(t, w, "StatefulSet", "db-east", &sts)
		return got.Status.Subsets[0].Failover == fleetv1.SubsetMoving && c.Reason == fleetv1.ReasonMoving &&
			strings.Contains(c.Message, "moving from mv-east to mv-north") && ptr.Deref(sts.Spec.Replicas, -1) == 0, nil
	})
	var drained appsv1.StatefulSet
	manifest(t, works(t, "move", "db")["mv-east"], "StatefulSet", "db-east", &drained)
	if p := drained.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("drained db-east's claim retention %+v, want Retain on scale-down and deletion", p)
	}
	var staying appsv1.StatefulSet
	manifest(t, works(t, "move", "db")["mv-west"], "StatefulSet", "db-west", &staying)
	if p := staying.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		t.Errorf("db-west's claim retention %+v, want the FleetSet's (Delete on scale-down)", p)
	}
	notYet := func(why string) {
		t.Helper()
		time.Sleep(2 * time.Second)
		if w := works(t, "move", "db")["mv-north"]; w != nil && manifestwork.HoldsStatefulSet(w, "db-east") {
			t.Fatalf("db-east delivered to mv-north while %s", why)
		}
	}
	notYet("mv-east has not applied the drain")
	markApplied(t, "mv-east", "move", "db")
	setFeedback(t, "mv-east", "move", "db", "db-east", 2, 1, 3)
	notYet("mv-east's status is of an older spec")
	setFeedback(t, "mv-east", "move", "db", "db-east", 2, 2, 1)
	notYet("mv-east still counts a db-east pod")
	setFeedback(t, "mv-east", "move", "db", "db-east", 2, 2, 0)
	eventually(t, 10*time.Second, "db-east on mv-north with epoch 1, gone from mv-east", func() (bool, error) {
		ws := works(t, "move", "db")
		ss := getFleetSet(t, "move", "db").Status.Subsets[0]
		return ws["mv-north"] != nil && manifestwork.HoldsStatefulSet(ws["mv-north"], "db-east") && ss.Cluster == "mv-north" && ss.Epoch == 1 && ss.Failover == "" &&
			ws["mv-east"] == nil, nil
	})
	if !hasEvent(t, "move", "db", EventMoved) {
		t.Errorf("no %s event", EventMoved)
	}
	if c := getFleetSet(t, "move", "db").Status.Subsets[0].Claims; c == nil || c.LeftIn != "mv-east" || c.Replicas == 0 {
		t.Errorf("moved: status.subsets[east].claims = %+v, want left in mv-east", c)
	}
}
