//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// TestChaos is the run: `make chaos` starts the local fleet and runs it
// with CHAOS_SEED, CHAOS_MINUTES, CHAOS_MAX_FAULTS and CHAOS_REPORT_DIR;
// the fleet and its provider come from the environment as for the e2e
// suite (e2e/framework).
func TestChaos(t *testing.T) {
	seed, err := strconv.ParseUint(envOr("CHAOS_SEED", strconv.FormatInt(time.Now().Unix(), 10)), 10, 64)
	if err != nil {
		t.Fatalf("CHAOS_SEED: %v", err)
	}
	minutes, err := strconv.ParseFloat(envOr("CHAOS_MINUTES", "20"), 64)
	if err != nil {
		t.Fatalf("CHAOS_MINUTES: %v", err)
	}
	maxFaults, err := strconv.Atoi(envOr("CHAOS_MAX_FAULTS", "2"))
	if err != nil || maxFaults < 1 {
		t.Fatalf("CHAOS_MAX_FAULTS: %q", os.Getenv("CHAOS_MAX_FAULTS"))
	}
	// CHAOS_EXPECT (comma-separated invariants, make chaos-unsafe): the
	// fleet runs a build broken on purpose, and the run must find a
	// violation of each.
	var expect []Invariant
	for _, e := range strings.Split(os.Getenv("CHAOS_EXPECT"), ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if !slices.Contains(Invariants, Invariant(e)) {
			t.Fatalf("CHAOS_EXPECT: %q is not one of %v", e, Invariants)
		}
		expect = append(expect, Invariant(e))
	}
	opts := DefaultOptions
	if d, err := time.ParseDuration(os.Getenv("CHAOS_CONVERGE_BOUND")); err == nil {
		opts.ConvergeBound = d
	}
	reportDir := filepath.Join(envOr("CHAOS_REPORT_DIR", "../../bin/chaos"), strconv.FormatUint(seed, 10))

	fleet := newFleet(t)
	hub, members, provider := fleet.Hub, append(fleet.Members, fleet.Spare...), fleet.Provider
	rssOf, _ := provider.(interface{ PeakRSS(map[string]int64) })
	peakRSS := func(peaks map[string]int64) {
		if rssOf != nil {
			rssOf.PeakRSS(peaks)
		}
	}
	var names []string
	for _, m := range members {
		names = append(names, m.Name)
	}
	ns := fmt.Sprintf("chaos-%d", seed)
	cfg := RunConfig(time.Duration(minutes*float64(time.Minute)), maxFaults, names, envOr("CHAOS_LATE", "1") != "0")
	sched := Draw(seed, cfg)
	t.Logf("seed %d: %d faults and %d operations over %v on %v, at most %d faults at once", seed, len(sched.Faults), len(sched.Ops), cfg.Duration, names, maxFaults)
	for _, f := range sched.Faults {
		inject, heal := f.Actions()
		for _, a := range append(inject, heal...) {
			if !provider.Supports(a.Op, a.Cluster, a.Proc) {
				t.Fatalf("fault %v: the %s fleet cannot %s (FLEETSET_E2E_PROVIDER=local runs chaos)", f, provider.Name(), a)
			}
		}
	}

	ctx := t.Context()
	setup(t, hub, ns)
	image := fleet.Config.Image
	fsets := []*fleetv1.FleetSet{dbFleetSet(ns, names, image), webFleetSet(ns, names, image), cacheFleetSet(ns, names, image)}
	h := &History{Seed: seed, Schedule: sched}
	for _, fs := range fsets {
		if err := hub.Create(ctx, fs); err != nil {
			t.Fatalf("creating FleetSet %s: %v", fs.Name, err)
		}
		info := FleetSetInfo{Namespace: ns, Name: fs.Name}
		for _, c := range fs.Spec.VolumeClaimTemplates {
			info.Claims = append(info.Claims, c.Name)
		}
		h.FleetSets = append(h.FleetSets, info)
	}
	waitFor(t, 4*time.Minute, "every FleetSet ready", func(ctx context.Context) (bool, string) {
		for _, fs := range fsets {
			got := &fleetv1.FleetSet{}
			if err := hub.Get(ctx, client.ObjectKeyFromObject(fs), got); err != nil {
				return false, err.Error()
			}
			if got.Status.ReadyReplicas != got.Spec.Replicas || got.Status.ObservedGeneration != got.Generation {
				return false, fmt.Sprintf("%s ready %d of %d", fs.Name, got.Status.ReadyReplicas, got.Spec.Replicas)
			}
		}
		return true, ""
	})

	// Sampling and RSS, from now to the end.
	rss := map[string]int64{}
	var mu sync.Mutex // guards h.Faults, h.Ops, h.Samples and rss
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		n := 0
		for {
			s := takeSample(sampleCtx, hub, members, ns, fsets)
			mu.Lock()
			h.Samples = append(h.Samples, s)
			if n%5 == 0 {
				peakRSS(rss)
			}
			mu.Unlock()
			n++
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	start := time.Now()
	mu.Lock()
	h.Start = start
	h.Faults = make([]FaultRecord, len(sched.Faults))
	mu.Unlock()
	run := func(a framework.Action) error {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return framework.Do(cctx, provider, a)
	}
	var faults sync.WaitGroup
	for i, f := range sched.Faults {
		faults.Add(1)
		go func() {
			defer faults.Done()
			time.Sleep(time.Until(start.Add(f.At)))
			injected := time.Now()
			injectCalls, healCalls := f.Actions()
			var err error
			if f.Kind == HubStalePeers {
				// The stubs first, then the outage StubPeerLead later.
				err = stubPeers(hub, true)
				time.Sleep(time.Until(injected.Add(StubPeerLead)))
			}
			err = errors.Join(err, act(run, injectCalls))
			if f.Kind == HubRestore && err == nil {
				// fleetset-hub is down: restore its FleetSets from a backup.
				var uids []string
				uids, err = restoreFleetSets(hub, ns, f.Restore)
				t.Logf("+%v fault %v: FleetSets re-created with new UIDs %v", time.Since(start).Round(time.Second), f, uids)
			}
			mu.Lock()
			h.Faults[i] = FaultRecord{Fault: f, Injected: injected}
			if err != nil {
				h.Faults[i].Error = err.Error()
			}
			mu.Unlock()
			time.Sleep(time.Until(injected.Add(f.Hold)))
			herr := act(run, healCalls)
			if f.Kind == HubStalePeers {
				herr = errors.Join(herr, stubPeers(hub, false))
			}
			mu.Lock()
			h.Faults[i].Healed = time.Now()
			if herr != nil {
				h.Faults[i].Error = strings.TrimSpace(h.Faults[i].Error + "; " + herr.Error())
			}
			mu.Unlock()
			t.Logf("+%v fault %v held %v%s", injected.Sub(start).Round(time.Second), f, f.Hold, errSuffix(err, herr))
		}()
	}
	var opsDone sync.WaitGroup
	opsDone.Add(1)
	go func() {
		defer opsDone.Done()
		for _, o := range sched.Ops {
			time.Sleep(time.Until(start.Add(o.At)))
			err := operate(hub, ns, o)
			rec := OpRecord{Op: o, Done: time.Now()}
			if err != nil {
				rec.Error = err.Error()
			}
			mu.Lock()
			h.Ops = append(h.Ops, rec)
			mu.Unlock()
			t.Logf("+%v op %v%s", rec.Done.Sub(start).Round(time.Second), o, errSuffix(err, nil))
		}
	}()
	faults.Wait()
	opsDone.Wait()

	// Converge: sample until every FleetSet has converged, or the bound.
	mu.Lock()
	quiet := h.Quiet()
	mu.Unlock()
	t.Logf("fault phase over at +%v; waiting up to %v for convergence", quiet.Sub(start).Round(time.Second), opts.ConvergeBound)
	for time.Since(quiet) < opts.ConvergeBound {
		time.Sleep(5 * time.Second)
		mu.Lock()
		conv, _, _ := CheckConvergence(h, opts)
		mu.Unlock()
		if len(conv) == len(fsets) {
			time.Sleep(5 * time.Second) // a few samples past it
			break
		}
	}
	stopSampling()
	sampling.Wait()
	peakRSS(rss)

	res := Check(h, opts)
	sum := Summarize(h, res, opts, rss, time.Now())
	if err := Write(reportDir, h, sum); err != nil {
		t.Errorf("writing the report: %v", err)
	}
	if len(res.Violations) > 0 {
		// Keep the fleet's logs with the report: the next run on this
		// machine overwrites them, and a violation is explained by them.
		archiver, ok := provider.(interface{ ArchiveLogs(string) error })
		if !ok {
			t.Logf("the %s fleet's logs: %s", provider.Name(), provider.Logs())
		} else if err := archiver.ArchiveLogs(filepath.Join(reportDir, "logs.tar.gz")); err != nil {
			t.Logf("archiving the fleet's logs: %v", err)
		} else {
			t.Logf("the fleet's logs: %s/logs.tar.gz", reportDir)
		}
	}
	for f, n := range res.RestoredPods {
		t.Logf("pod-replaced: %d pods followed through %s", n, f)
	}
	t.Logf("report: %s/report.md; %d samples, %d faults (%v), %d operations (%v), %d violations, convergence %v",
		reportDir, sum.Samples, sum.Faults, sum.FaultsByKind, sum.Ops, sum.OpsByKind, len(sum.Violations), sum.ConvergenceSec)
	if len(expect) == 0 {
		for _, v := range res.Violations {
			t.Errorf("VIOLATION %s", v)
		}
	} else {
		// A broken build (make chaos-unsafe): the run passes only if it
		// caught each expected invariant broken.
		found := map[Invariant]int{}
		for _, v := range res.Violations {
			found[v.Invariant]++
			t.Logf("VIOLATION (expected from the broken build: %v) %s", expect, v)
		}
		for _, inv := range expect {
			if found[inv] == 0 {
				t.Errorf("CHAOS_EXPECT=%s: the run found no %s violation in %d samples; the checker missed the broken build", os.Getenv("CHAOS_EXPECT"), inv, sum.Samples)
			} else {
				t.Logf("CHAOS_EXPECT: caught %d %s violations, as expected from the broken build", found[inv], inv)
			}
		}
	}
	// Leave the fleet clean for whatever runs next on it.
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = hub.DeleteAllOf(cctx, &fleetv1.FleetSet{}, client.InNamespace(ns))
	for i := range StubPeers {
		_ = hub.Delete(cctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stubPeerNamespace(i)}})
	}
}

// restoreFleetSets restores FleetSets names of namespace ns as a restore
// of the hub from a backup does (docs/operations.md, "Restoring the hub
// from a backup"; e2e TestHubRestoreLosesNothing), fleetset-hub being
// down: each is read and kept as a backup keeps it (metadata name,
// namespace, labels, annotations — its fleetset.io/identity among them —,
// finalizers and spec: no uid, resourceVersion, creationTimestamp,
// generation, managedFields or status), deleted (UID precondition, no
// cascade: the hub that would cascade is down), and once gone created
// again from the backup, with a new UID. It returns "old→new" UID pairs
// and the errors.
func restoreFleetSets(hub client.Client, ns string, names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out []string
	var errs []error
	for _, name := range names {
		got := &fleetv1.FleetSet{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			errs = append(errs, fmt.Errorf("backing up FleetSet %s: %w", name, err))
			continue
		}
		backup := &fleetv1.FleetSet{ObjectMeta: metav1.ObjectMeta{Namespace: got.Namespace, Name: got.Name, Labels: got.Labels,
			Annotations: got.Annotations, Finalizers: got.Finalizers}, Spec: *got.Spec.DeepCopy()}
		if err := hub.Delete(ctx, got, client.Preconditions{UID: &got.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting FleetSet %s: %w", name, err))
			continue
		}
		err := framework.Poll(ctx, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string, error) {
			err := hub.Get(ctx, client.ObjectKeyFromObject(got), &fleetv1.FleetSet{})
			return apierrors.IsNotFound(err), errString(err), nil
		})
		if err == nil {
			err = hub.Create(ctx, backup)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring FleetSet %s: %w", name, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s→%s", name, got.UID, backup.UID))
	}
	return out, errors.Join(errs...)
}

// stubPeerNamespace is the hub namespace of stub peer i: the namespace of
// a cluster that has no ManagedCluster.
func stubPeerNamespace(i int) string { return fmt.Sprintf("fleetset-stub-peer-%d", i) }

// stubPeers creates (create) or deletes the heartbeat Leases of StubPeers
// clusters that are no members, as a departed cluster's component would
// leave them: label fleetset.io/member-heartbeat, a fresh renewTime and a
// peer URL nothing answers on (127.0.0.1:1). The hub must delete them and
// never deliver them as peers (docs/failover.md, departed members). Deleting
// retries for up to two minutes (the hub's apiserver coming back); it
// returns the errors.
func stubPeers(hub client.Client, create bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for i := range StubPeers {
		ns := stubPeerNamespace(i)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleetv1.HeartbeatLeaseName}}
		if !create {
			err := framework.Poll(ctx, 2*time.Second, 2*time.Minute, func(ctx context.Context) (bool, string, error) {
				err := hub.Delete(ctx, lease)
				return client.IgnoreNotFound(err) == nil, errString(err), nil
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("deleting stub peer Lease %s: %w", ns, err))
			}
			continue
		}
		if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			errs = append(errs, fmt.Errorf("stub peer namespace %s: %w", ns, err))
			continue
		}
		url := fmt.Sprintf("https://127.0.0.1:1/stub-%d", i)
		now := metav1.NewMicroTime(time.Now())
		lease.Labels = map[string]string{fleetv1.LabelHeartbeat: "true"}
		lease.Annotations = map[string]string{fleetv1.AnnotationPeerURL: url,
			fleetv1.AnnotationPeerURLs: fmt.Sprintf(`{"stub-%d":{"url":%q,"seen":%q}}`, i, url, now.UTC().Format(time.RFC3339))}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(fmt.Sprintf("stub-%d", i)), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &now}
		if err := hub.Create(ctx, lease); client.IgnoreAlreadyExists(err) != nil {
			errs = append(errs, fmt.Errorf("stub peer Lease %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func errSuffix(errs ...error) string {
	var s []string
	for _, e := range errs {
		if e != nil {
			s = append(s, e.Error())
		}
	}
	if len(s) == 0 {
		return ""
	}
	return " ERROR: " + strings.Join(s, "; ")
}

// act runs actions through run in order, all of them, and returns the
// first error.
func act(run func(framework.Action) error, actions []framework.Action) error {
	var first error
	for _, a := range actions {
		if err := run(a); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// operate applies o to the FleetSet, retrying conflicts and a hub that is
// down for up to a minute.
func operate(hub client.Client, ns string, o Op) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		fs := &fleetv1.FleetSet{}
		if last = hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.FleetSet}, fs); last == nil {
			ru := fs.Spec.UpdateStrategy.RollingUpdate
			if ru == nil {
				ru = &fleetv1.RollingUpdateFleetSet{}
				fs.Spec.UpdateStrategy.RollingUpdate = ru
			}
			switch o.Kind {
			case OpScale, OpClaimGrowth:
				fs.Spec.Replicas = o.Replicas
			case OpTemplate:
				fs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: strconv.Itoa(o.Version)}}
			case OpPause:
				ru.Paused = true
			case OpResume:
				ru.Paused = false
			case OpFailback:
				if fs.Annotations == nil {
					fs.Annotations = map[string]string{}
				}
				fs.Annotations[fleetv1.AnnotationFailback] = strconv.Itoa(o.ID)
			case OpFenceEdit, OpFenceRestore:
				if fs.Spec.Failover != nil {
					fs.Spec.Failover.FenceGraceSeconds = o.FenceGrace
				}
				if ptr.Deref(fs.Spec.Template.Spec.TerminationGracePeriodSeconds, 30) != o.TerminationGrace {
					fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(o.TerminationGrace)
				}
			}
			if last = hub.Update(ctx, fs); last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	return last
}

// ---------------------------------------------------------------- sampling

func takeSample(ctx context.Context, hub client.Client, members []framework.Member, ns string, fsets []*fleetv1.FleetSet) Sample {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s := Sample{T: time.Now(), Members: map[string]MemberObs{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mo := observeMember(ctx, m.Client, ns)
			mu.Lock()
			s.Members[m.Name] = mo
			mu.Unlock()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.Hub = observeHub(ctx, hub, ns, fsets)
	}()
	wg.Wait()
	return s
}

func observeMember(ctx context.Context, c client.Client, ns string) MemberObs {
	var mo MemberObs
	var pods corev1.PodList
	var nodes corev1.NodeList
	var pvcs corev1.PersistentVolumeClaimList
	var sps fleetv1.SubsetPlacementList
	var stss appsv1.StatefulSetList
	for _, l := range []struct {
		list client.ObjectList
		opts []client.ListOption
	}{{&pods, []client.ListOption{client.InNamespace(ns)}}, {&nodes, nil}, {&pvcs, []client.ListOption{client.InNamespace(ns)}},
		{&sps, []client.ListOption{client.InNamespace(ns)}}, {&stss, []client.ListOption{client.InNamespace(ns)}}} {
		if err := c.List(ctx, l.list, l.opts...); err != nil {
			return MemberObs{Err: err.Error()}
		}
	}
	zone := map[string]string{}
	for _, n := range nodes.Items {
		zone[n.Name] = n.Labels[fleetv1.DefaultTopologyKey]
	}
	for _, p := range pods.Items {
		set := p.Labels[fleetv1.LabelSet]
		if set == "" {
			continue
		}
		ord, _ := strconv.Atoi(p.Labels[fleetv1.LabelPodIndex])
		po := PodObs{Namespace: p.Namespace, Name: p.Name, Set: set, Subset: p.Labels[fleetv1.LabelSubset], Ordinal: int32(ord),
			UID: string(p.UID), Node: p.Spec.NodeName, NodeZone: zone[p.Spec.NodeName], Domain: p.Labels[fleetv1.LabelDomain],
			Phase: string(p.Status.Phase), Deleting: p.DeletionTimestamp != nil}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				po.Ready = true
			}
		}
		mo.Pods = append(mo.Pods, po)
	}
	for _, c := range pvcs.Items {
		mo.PVCs = append(mo.PVCs, PVCObs{Namespace: c.Namespace, Name: c.Name, UID: string(c.UID), Deleting: c.DeletionTimestamp != nil})
	}
	for _, sp := range sps.Items {
		po := PlacementObs{Namespace: sp.Namespace, Name: sp.Name, Set: sp.Labels[fleetv1.LabelSet], Subset: sp.Labels[fleetv1.LabelSubset],
			OrdinalStart: sp.Spec.OrdinalStart}
		if f := sp.Spec.Fencing; f != nil {
			po.Epoch = f.Epoch
		}
		if e, err := strconv.ParseInt(sp.Annotations[fleetv1.AnnotationFencedEpoch], 10, 64); err == nil {
			po.FencedEpoch = &e
		}
		for _, d := range sp.Spec.Domains {
			ds := DomainShare{Name: d.Name}
			if d.Replicas != nil {
				ds.Replicas = d.Replicas.String()
			}
			po.Domains = append(po.Domains, ds)
		}
		mo.Placements = append(mo.Placements, po)
	}
	for _, sts := range stss.Items {
		mo.StatefulSets = append(mo.StatefulSets, StatefulSetObs{Namespace: sts.Namespace, Name: sts.Name, Replicas: ptr.Deref(sts.Spec.Replicas, 1)})
	}
	return mo
}

func observeHub(ctx context.Context, hub client.Client, ns string, fsets []*fleetv1.FleetSet) *HubObs {
	var l fleetv1.FleetSetList
	if err := hub.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil
	}
	ho := &HubObs{Available: map[string]bool{}}
	if mcs, err := framework.ManagedClusters(ctx, hub); err == nil {
		for i := range mcs {
			if st := framework.AvailableStatus(&mcs[i]); st != "" {
				ho.Available[mcs[i].GetName()] = st == "True"
			}
		}
	}
	found := map[string]bool{}
	for _, fs := range l.Items {
		found[fs.Name] = true
		o := FleetSetObs{Namespace: fs.Namespace, Name: fs.Name, Deleted: fs.DeletionTimestamp != nil, Generation: fs.Generation,
			ObservedGeneration: fs.Status.ObservedGeneration, Replicas: fs.Spec.Replicas, ReadyReplicas: fs.Status.ReadyReplicas,
			UpdatedReplicas: fs.Status.UpdatedReplicas, UpdateRevision: fs.Status.UpdateRevision, CurrentRevision: fs.Status.CurrentRevision,
			MaxUnavailable: 1}
		if ru := fs.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			o.Paused = ru.Paused
			if ru.MaxUnavailable != nil {
				v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(fs.Spec.Replicas), false)
				if err == nil {
					o.MaxUnavailable = int32(max(v, 1))
				}
			}
		}
		if f := fs.Spec.Failover; f != nil {
			o.Relocate = f.Policy == fleetv1.FailoverRelocate
			o.FailbackAutomatic = f.Failback == fleetv1.FailbackAutomatic
		}
		home := map[string]string{}
		for _, ss := range fs.Spec.Topology.Subsets {
			home[ss.Name] = ss.Cluster
		}
		for _, ss := range fs.Status.Subsets {
			so := SubsetObs{Name: ss.Name, Home: home[ss.Name], Cluster: ss.Cluster, Failover: string(ss.Failover),
				OrdinalStart: ss.OrdinalStart, Replicas: ss.Replicas, Epoch: ss.Epoch}
			if len(ss.Domains) > 0 {
				so.Domains = map[string]int{}
				for _, d := range ss.Domains {
					so.Domains[d.Name] = int(d.Replicas)
				}
			}
			o.Subsets = append(o.Subsets, so)
		}
		ho.FleetSets = append(ho.FleetSets, o)
	}
	for _, fs := range fsets {
		if !found[fs.Name] {
			ho.FleetSets = append(ho.FleetSets, FleetSetObs{Namespace: ns, Name: fs.Name, Deleted: true})
		}
	}
	sort.Slice(ho.FleetSets, func(i, j int) bool { return ho.FleetSets[i].Name < ho.FleetSets[j].Name })
	return ho
}

// ---------------------------------------------------------------- the fleet

func envOr(k, def string) string { return framework.EnvString(k, def) }

// newFleet is the fleet of the environment (framework.FromEnv), its
// clients bounded to 5 s a request so that a sample never hangs.
func newFleet(t *testing.T) *framework.Fleet {
	cfg, err := framework.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.NewFleet(cfg, framework.ClientOptions{QPS: 100, Burst: 200, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	err := framework.Poll(context.Background(), time.Second, timeout, func(ctx context.Context) (bool, string, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ok, why := cond(ctx)
		return ok, why, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// setup creates the run's namespace on the hub, bound to the ManagedClusterSet
// global.
func setup(t *testing.T, hub client.Client, ns string) {
	ctx := t.Context()
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	if err := framework.BindClusterSet(ctx, hub, ns, "global", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------- FleetSets

func newFleetSet(ns, name, image string, replicas int32, members []string, subsetShares []string, domainShares []string) *fleetv1.FleetSet {
	labels := map[string]string{"app": name}
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "app", Image: image,
						Env: []corev1.EnvVar{{Name: "VERSION", Value: "1"}}}},
				},
			},
			UpdateStrategy: fleetv1.FleetSetUpdateStrategy{Type: fleetv1.RollingUpdateStrategyType, RollingUpdate: &fleetv1.RollingUpdateFleetSet{}},
		},
	}
	for i, m := range members {
		s := fleetv1.Subset{Name: m, Cluster: m}
		if i < len(subsetShares) && subsetShares[i] != "" {
			s.Replicas = ptr.To(intstr.Parse(subsetShares[i]))
		}
		for j, z := range []string{"zone-a", "zone-b", "zone-c"} {
			d := fleetv1.DomainShare{Name: z}
			if j < len(domainShares) && domainShares[j] != "" {
				d.Replicas = ptr.To(intstr.Parse(domainShares[j]))
			}
			s.Domains = append(s.Domains, d)
		}
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, s)
	}
	return fs
}

func claim(name, size string) []corev1.PersistentVolumeClaim {
	return []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}}
}

// db: Relocate (toleration 20 s), failback Automatic, percent subset and
// domain shares, a volume claim template, maxUnavailable 1.
func dbFleetSet(ns string, members []string, image string) *fleetv1.FleetSet {
	fs := newFleetSet(ns, "db", image, 6, members, []string{"50%", "30%"}, []string{"50%", "25%", "25%"})
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](20), Failback: fleetv1.FailbackAutomatic}
	fs.Spec.VolumeClaimTemplates = claim("data", "1Gi")
	fs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	return fs
}

// web: Relocate (toleration 20 s, fenceGraceSeconds 40), failback Manual
// (the failback annotation), even shares, maxUnavailable 40%, two subsets
// at once. db's relocation waits for its toleration; web's, for its
// member's fence: a cut member keeps web's pods about a minute, well past
// the toleration, so a hub that relocated without waiting for the fence
// (make chaos-unsafe) would run them in two clusters.
//
// Its fenceGraceSeconds is lowered to 0 during some cuts (fence-edit) and
// set back after them (fence-restore): the hub must still wait for the
// fence the cut member enforces, the one of its last heartbeat.
func webFleetSet(ns string, members []string, image string) *fleetv1.FleetSet {
	fs := newFleetSet(ns, "web", image, 5, members, nil, nil)
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](20), Failback: fleetv1.FailbackManual, FenceGraceSeconds: webFenceGrace}
	fs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("40%"))
	fs.Spec.UpdateStrategy.RollingUpdate.MaxConcurrentSubsets = ptr.To[int32](2)
	return fs
}

// cache: no failover, a volume claim template, maxUnavailable 2, percent
// subset shares.
func cacheFleetSet(ns string, members []string, image string) *fleetv1.FleetSet {
	fs := newFleetSet(ns, "cache", image, 4, members, []string{"40%"}, []string{"", "", "40%"})
	fs.Spec.VolumeClaimTemplates = claim("cache", "1Gi")
	fs.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	return fs
}
