//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// dnsServers returns each member's CoreDNS (host:port), members and spare
// ones, on the local fleet; it skips the test on a fleet whose DNS servers
// the test host cannot reach.
func (f *fleet) dnsServers(t *testing.T) map[string]string {
	t.Helper()
	l, ok := f.provider.(*framework.Local)
	if !ok {
		t.Skipf("the %s fleet's CoreDNS is not reachable from the test host (the kind suite checks fleet DNS from pods)", f.provider.Name())
	}
	out := map[string]string{}
	for _, m := range append(slices.Clone(f.members), f.spare...) {
		addr, err := l.DNSAddress(m.name)
		if err != nil {
			t.Skip(err)
		}
		out[m.name] = addr
	}
	return out
}

// lookup resolves name (a fully qualified name) through the DNS server at
// addr only: its A records, nil for NXDOMAIN.
func lookup(ctx context.Context, addr, name string) ([]string, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := r.LookupHost(ctx, name)
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, nil
	}
	sort.Strings(ips)
	return ips, err
}

// podIPs returns, for FleetSet ns/name, each Running pod's IP with an IP,
// by pod name, and the cluster it runs in (a pod name Running in two
// clusters is reported by the fencing samplers, not here: the last wins).
func (f *fleet) podIPs(ctx context.Context, ns, name string) (map[string]string, map[string]string, error) {
	ips, where := map[string]string{}, map[string]string{}
	for _, m := range append(slices.Clone(f.members), f.spare...) {
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: name}); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.name, err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				ips[p.Name], where[p.Name] = p.Status.PodIP, m.name
			}
		}
	}
	return ips, where, nil
}

// dnsSampler resolves every instance's fleet DNS name through every
// member's CoreDNS every 250 ms, and lists the pods' IPs at the same pace:
// when each (pod, IP) was first seen on a pod, when each member first
// answered it, every answer with two addresses, and the answers that
// changed since mark.
type dnsSampler struct {
	mu        sync.Mutex
	samples   int
	dual      []string
	podIPAt   map[string]time.Time // pod/ip → first seen on the pod
	answerAt  map[string]time.Time // member/pod/ip → first answered
	last      map[string]string    // member/pod → last answer
	changes   []string             // since mark
	stop      func()
	done      chan struct{}
	servers   map[string]string
	names     map[string]string // pod → fleet DNS name
	ns, setNm string
}

func (f *fleet) sampleDNS(t *testing.T, ns, set string, servers, names map[string]string) *dnsSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &dnsSampler{podIPAt: map[string]time.Time{}, answerAt: map[string]time.Time{}, last: map[string]string{},
		stop: cancel, done: make(chan struct{}), servers: servers, names: names, ns: ns, setNm: set}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			s.once(ctx, f)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func (s *dnsSampler) once(ctx context.Context, f *fleet) {
	ips, _, err := f.podIPs(ctx, s.ns, s.setNm)
	now := time.Now()
	s.mu.Lock()
	if err == nil {
		for pod, ip := range ips {
			if _, ok := s.podIPAt[pod+"/"+ip]; !ok {
				s.podIPAt[pod+"/"+ip] = now
			}
		}
	}
	s.mu.Unlock()
	for m, addr := range s.servers {
		for pod, name := range s.names {
			got, err := lookup(ctx, addr, name)
			if err != nil {
				continue // a lost query is no answer
			}
			at := time.Now()
			s.mu.Lock()
			answer := strings.Join(got, ",")
			if len(got) > 1 {
				s.dual = append(s.dual, fmt.Sprintf("%s: %s answered %s for %s", at.Format(time.TimeOnly), m, answer, pod))
			}
			if len(got) == 1 {
				if _, ok := s.answerAt[m+"/"+pod+"/"+got[0]]; !ok {
					s.answerAt[m+"/"+pod+"/"+got[0]] = at
				}
			}
			if prev, ok := s.last[m+"/"+pod]; ok && prev != answer {
				s.changes = append(s.changes, fmt.Sprintf("%s: %s answered %q for %s, was %q", at.Format(time.TimeOnly), m, answer, pod, prev))
			}
			s.last[m+"/"+pod] = answer
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	s.samples++
	s.mu.Unlock()
}

// mark forgets the changes seen so far.
func (s *dnsSampler) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = nil
}

// propagation returns, for pod now at ip, how long after the IP was first
// seen on the pod each of members first answered it (members that have
// not answered yet are missing).
func (s *dnsSampler) propagation(pod, ip string, members []string) map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.podIPAt[pod+"/"+ip]
	out := map[string]time.Duration{}
	if !ok {
		return out
	}
	for _, m := range members {
		if at, ok := s.answerAt[m+"/"+pod+"/"+ip]; ok {
			out[m] = max(at.Sub(seen), 0)
		}
	}
	return out
}

// resolvesEverywhere reports whether every member in members answers each
// pod's fleet DNS name with exactly its current IP.
func resolvesEverywhere(ctx context.Context, f *fleet, s *dnsSampler, members []string) (bool, string, error) {
	ips, where, err := f.podIPs(ctx, s.ns, s.setNm)
	if err != nil {
		return false, "", err
	}
	for pod, name := range s.names {
		ip, ok := ips[pod]
		if !ok {
			return false, pod + " has no IP yet", nil
		}
		for _, m := range members {
			got, err := lookup(ctx, s.servers[m], name)
			if err != nil {
				return false, "", err
			}
			if len(got) != 1 || got[0] != ip {
				return false, fmt.Sprintf("%s answers %v for %s, which runs in %s at %s", m, got, name, where[pod], ip), nil
			}
		}
	}
	return true, "", nil
}

// percentile returns the q-quantile (nearest rank) of ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// TestFleetDNS runs a Relocate FleetSet of 6 instances over three members
// and checks fleet DNS through each member's own CoreDNS (stock, its
// kubernetes plugin over the member's apiserver), sampling every 250 ms:
//   - every instance's name <pod>.<service>.<namespace>.svc.cluster.local
//     resolves in every member to the pod's IP (kwok gives each member its
//     own pod CIDR, so an address says where the pod runs);
//   - cut off from the hub, a member's subset is relocated: every other
//     member answers the relocated copies' new IPs, and healed, the
//     failback's IPs in every member; it reports how long after a new IP
//     appeared on a pod each member answered it (p50, p99, max) and fails
//     past 15 s;
//   - no answer ever holds two addresses;
//   - fleetset-hub stopped for 60 s (FLEETSET_E2E_DNS_SILENCE) changes no
//     answer.
func TestFleetDNS(t *testing.T) {
	f := theFleet
	servers := f.dnsServers(t)
	f.skipUnless(t, framework.OpCut, f.members[0].name, "")
	f.skipUnless(t, framework.OpStop, "hub", "fleetset-hub")
	f.skipUnless(t, framework.OpRestart, "hub", "fleetset-hub")
	if len(f.spare) == 0 {
		t.Skip("FLEETSET_E2E_SPARE_MEMBERS is not set: fleet DNS is checked over three members")
	}
	ns := f.newNamespace(t, "e2e-dns")
	fs := f.newFleetSet(ns, "db", 6)
	third := fleetv1.Subset{Name: f.spare[0].name, Cluster: f.spare[0].name}
	for _, z := range f.zones {
		third.Domains = append(third.Domains, fleetv1.DomainShare{Name: z})
	}
	fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, third)
	for i := range fs.Spec.Topology.Subsets {
		fs.Spec.Topology.Subsets[i].Replicas = nil // 2 each
	}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0),
		Failback: fleetv1.FailbackAutomatic}
	f.createFleetSet(t, fs)
	// Ready, each instance in the cluster its subset names (a member just
	// healed by an earlier test may still be unavailable to the hub).
	eventually(t, 5*time.Minute, "6 instances ready, each at home", func(ctx context.Context) (bool, string, error) {
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		_, where, err := f.podIPs(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for pod, c := range where {
			if !strings.HasPrefix(pod, "db-"+c+"-") {
				return false, fmt.Sprintf("%s runs in %s", pod, c), nil
			}
		}
		return got.Status.ReadyReplicas == 6 && got.Status.ObservedGeneration == got.Generation && len(where) == 6,
			fmt.Sprintf("%d ready, %d Running with an IP", got.Status.ReadyReplicas, len(where)), nil
	})
	before, home, err := f.podIPs(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	if len(home) != 6 {
		t.Fatalf("%d pods Running with an IP, want 6: %v", len(home), home)
	}
	names := map[string]string{}
	for pod := range home {
		names[pod] = pod + ".db." + ns + ".svc.cluster.local."
	}
	all := make([]string, 0, len(servers))
	for m := range servers {
		all = append(all, m)
	}
	sort.Strings(all)
	s := f.sampleDNS(t, ns, "db", servers, names)
	start := time.Now()
	eventually(t, 2*time.Minute, "every instance resolves in every member to its pod's IP", func(ctx context.Context) (bool, string, error) {
		return resolvesEverywhere(ctx, f, s, all)
	})
	t.Logf("fleet DNS: 6 instances resolve in %d members, %s after they were ready", len(all), time.Since(start).Round(100*time.Millisecond))

	victim := f.members[0].name
	var moved []string
	for pod, c := range home {
		if c == victim {
			moved = append(moved, pod)
		}
	}
	if len(moved) != 2 {
		t.Fatalf("%d instances run in %s, want 2: %v", len(moved), victim, home)
	}
	others := slices.DeleteFunc(slices.Clone(all), func(m string) bool { return m == victim })
	var relocation, failback []time.Duration
	collect := func(into *[]time.Duration, members []string) {
		ips, _, err := f.podIPs(t.Context(), ns, "db")
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range moved {
			for m, d := range s.propagation(pod, ips[pod], members) {
				t.Logf("%s at %s: answered by %s %s after the pod had the IP", pod, ips[pod], m, d.Round(10*time.Millisecond))
				*into = append(*into, d)
			}
		}
	}

	f.do(t, framework.OpCut, victim, "")
	healed := false
	t.Cleanup(func() {
		if !healed {
			f.do(t, framework.OpHeal, victim, "")
		}
	})
	eventually(t, 5*time.Minute, victim+"'s instances relocated and resolved at their new IPs in every other member", func(ctx context.Context) (bool, string, error) {
		ips, where, err := f.podIPs(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, pod := range moved {
			if where[pod] == "" || where[pod] == victim || ips[pod] == before[pod] {
				return false, pod + " not relocated yet", nil
			}
			for _, m := range others {
				got, err := lookup(ctx, servers[m], names[pod])
				if err != nil {
					return false, "", err
				}
				if len(got) != 1 || got[0] != ips[pod] {
					return false, fmt.Sprintf("%s answers %v for %s, relocated to %s at %s", m, got, pod, where[pod], ips[pod]), nil
				}
			}
		}
		return true, "", nil
	})
	collect(&relocation, others)

	f.do(t, framework.OpHeal, victim, "")
	healed = true
	eventually(t, 6*time.Minute, "failed back, every member answers every instance's IP at home", func(ctx context.Context) (bool, string, error) {
		_, where, err := f.podIPs(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, pod := range moved {
			if where[pod] != victim {
				return false, pod + " not back in " + victim, nil
			}
		}
		return resolvesEverywhere(ctx, f, s, all)
	})
	collect(&failback, all)

	// fleetset-hub stopped: every answer stays as it is. The answers are
	// first let settle: 5 s without a change (a member may still be taking
	// in the failback when the last of them first answered).
	silence := silenceFor("FLEETSET_E2E_DNS_SILENCE", 60*time.Second)
	eventually(t, time.Minute, "answers settled for 5 s", func(ctx context.Context) (bool, string, error) {
		s.mark()
		time.Sleep(5 * time.Second)
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.changes) == 0, strings.Join(s.changes, "; "), nil
	})
	s.mark()
	f.do(t, framework.OpStop, "hub", "fleetset-hub")
	stopped := true
	t.Cleanup(func() {
		if stopped {
			f.do(t, framework.OpRestart, "hub", "fleetset-hub")
		}
	})
	time.Sleep(silence)
	s.mu.Lock()
	changed := slices.Clone(s.changes)
	s.mu.Unlock()
	for _, c := range changed {
		t.Errorf("hub stopped: %s", c)
	}
	f.do(t, framework.OpRestart, "hub", "fleetset-hub")
	stopped = false

	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	all2 := append(slices.Clone(relocation), failback...)
	t.Logf("fleet DNS propagation, new pod IP → answered (250 ms samples): relocation p50 %v p99 %v (%d answers); failback p50 %v p99 %v (%d); all p50 %v p99 %v max %v; %d samples over %d members, %d answers with two addresses; hub stopped %v: %d answers changed",
		percentile(relocation, 0.5), percentile(relocation, 0.99), len(relocation), percentile(failback, 0.5), percentile(failback, 0.99), len(failback),
		percentile(all2, 0.5), percentile(all2, 0.99), percentile(all2, 1), s.samples, len(all), len(s.dual), silence, len(changed))
	for _, d := range s.dual {
		t.Error(d)
	}
	if len(relocation) < len(moved)*len(others) {
		t.Errorf("relocation: %d answers timed, want %d (a member answered before the sampler saw the pod's IP?)", len(relocation), len(moved)*len(others))
	}
	if p := percentile(all2, 1); p > 15*time.Second {
		t.Errorf("fleet DNS propagation max %v, want at most 15s", p)
	}
}
