//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// echoFleetSet is a FleetSet of echo servers (e2e/kind/echo) over the given
// clusters, one instance each, Relocate without failback.
func (f *fleet) echoFleetSet(ns string, clusters []string) *fleetv1.FleetSet {
	fs := f.newFleetSet(ns, "echo", int32(len(clusters)))
	c := &fs.Spec.Template.Spec.Containers[0]
	c.Image, c.ImagePullPolicy, c.Args = framework.EchoImage, corev1.PullNever, []string{fmt.Sprintf("-listen=:%d", echoPort)}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(echoPort)}}}
	// The locality through the downward API, from the labels and from the
	// annotations (docs/scheduler.md); the server answers with them.
	for name, path := range map[string]string{
		"FLEETSET_CLUSTER":            "metadata.labels['fleetset.io/cluster']",
		"FLEETSET_DOMAIN":             "metadata.labels['fleetset.io/domain']",
		"FLEETSET_CLUSTER_ANNOTATION": "metadata.annotations['fleetset.io/cluster']",
		"FLEETSET_DOMAIN_ANNOTATION":  "metadata.annotations['fleetset.io/domain']",
	} {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}})
	}
	slices.SortFunc(c.Env, func(a, b corev1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	fs.Spec.Topology.Subsets = nil
	for _, cl := range clusters {
		s := fleetv1.Subset{Name: cl, Cluster: cl}
		for _, z := range f.zones {
			s.Domains = append(s.Domains, fleetv1.DomainShare{Name: z})
		}
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, s)
	}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](0),
		Failback: fleetv1.FailbackManual}
	return fs
}

// connectByName runs an echo client pod in member m that connects to every
// target (host:port, by fleet DNS name) and returns its results by target.
func (f *fleet) connectByName(t *testing.T, kube kubernetes.Interface, m member, ns, name string, targets []string) map[string]echoResult {
	t.Helper()
	args := []string{"-connect=" + strings.Join(targets, ","), "-message=from-" + m.name, "-retry=60s"}
	if err := m.c.Create(t.Context(), echoPod(ns, name, true, args...)); err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	eventually(t, 5*time.Minute, m.name+"'s echo client "+name+" done", func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, "", err
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase), nil
	})
	raw, err := kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("%s: client log: %v", m.name, err)
	}
	got := map[string]echoResult{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var r echoResult
		if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
			got[r.Target] = r
		}
	}
	return got
}

// TestFleetDNSAcrossMembers (kind only): a FleetSet of echo servers, one
// instance in each of three members; a client pod in every member connects
// over TCP to every instance by its fleet DNS name
// <pod>.echo.<namespace>.svc.cluster.local, through that member's stock
// CoreDNS, and reaches the instance itself (its hostname is the pod name),
// which answers with the locality its container started with (downward API
// env vars from the labels and the annotations fleetset-scheduler set when
// it bound the pod): its current cluster, and one domain.
// Then the subset of one member is moved to another cluster (a spec move):
// from every member that holds a subset of the FleetSet the same name
// reaches the moved instance in its new cluster, at its new address. Last,
// where the provider can cut a member off (kind: iptables on its nodes),
// the member of another instance is cut off: its instance is fenced and
// relocated, and the same name reaches the copy from every member that
// holds a subset and is not cut off.
func TestFleetDNSAcrossMembers(t *testing.T) {
	f := theFleet
	if _, ok := f.provider.(framework.ImageLoader); !ok {
		t.Skipf("provider %s runs no pods that talk (kind only)", f.provider.Name())
	}
	if len(f.spare) == 0 {
		t.Skip("fleet DNS across members needs a third member (FLEETSET_E2E_SPARE_MEMBERS)")
	}
	members := append(slices.Clone(f.members), f.spare[0])
	paths := append(slices.Clone(f.cfg.Members), f.cfg.Spare[0])
	names := make([]string, len(members))
	kubes := map[string]kubernetes.Interface{}
	for i, m := range members {
		names[i] = m.name
		cfg, err := framework.RESTConfig(paths[i].Path, framework.ClientOptions{QPS: 20, Burst: 40})
		if err != nil {
			t.Fatal(err)
		}
		if kubes[m.name], err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	f.loadImage(t, names, framework.EchoArchive(), framework.EchoImage)
	ns := f.newNamespace(t, "e2e-fleetdns")
	f.createFleetSet(t, f.echoFleetSet(ns, names))
	podIn, podIP := map[string]string{}, map[string]string{} // pod → cluster, IP
	eventually(t, 5*time.Minute, "3 echo instances ready, one per member", func(ctx context.Context) (bool, string, error) {
		ips, where, err := f.podIPs(ctx, ns, "echo")
		if err != nil {
			return false, "", err
		}
		podIn, podIP = where, ips
		return len(ips) == 3, fmt.Sprintf("%v", where), nil
	})
	target := func(pod string) string {
		return net.JoinHostPort(pod+".echo."+ns+".svc.cluster.local", fmt.Sprint(echoPort))
	}
	var targets []string
	for pod := range podIn {
		targets = append(targets, target(pod))
	}
	slices.Sort(targets)
	// check connects from every member to every instance by name; the
	// answer must come from the instance itself, at its current pod IP
	// (ips: pod → IP).
	check := func(round string, from []member, want, ips map[string]string) {
		t.Helper()
		start := time.Now()
		for _, m := range from {
			got := f.connectByName(t, kubes[m.name], m, ns, "client-"+round+"-"+m.name, targets)
			for pod, cluster := range want {
				r, ok := got[target(pod)]
				switch {
				case !ok || r.Reply == nil:
					t.Errorf("%s: from %s to %s (in %s) by name: no reply (%+v)", round, m.name, pod, cluster, r)
				case r.Reply.Server != pod:
					t.Errorf("%s: from %s to %s by name: answered by %s", round, m.name, pod, r.Reply.Server)
				case r.Reply.Env["FLEETSET_CLUSTER"] != cluster || r.Reply.Env["FLEETSET_CLUSTER_ANNOTATION"] != cluster ||
					r.Reply.Env["FLEETSET_DOMAIN"] == "" || r.Reply.Env["FLEETSET_DOMAIN"] != r.Reply.Env["FLEETSET_DOMAIN_ANNOTATION"]:
					// The container started with its locality: labels and
					// annotations were on the pod before the kubelet ran it.
					t.Errorf("%s: %s (in %s) started with locality env %v, want its cluster and one domain from labels and annotations", round, pod, cluster, r.Reply.Env)
				default:
					if host, _, _ := net.SplitHostPort(r.Remote); host != ips[pod] {
						t.Errorf("%s: from %s, %s resolved to %s; the instance runs in %s at %s", round, m.name, pod, host, cluster, ips[pod])
					}
				}
			}
		}
		t.Logf("%s: %d members reached %d instances by fleet DNS name (%s)", round, len(from), len(want), time.Since(start).Round(time.Second))
	}
	check("home", members, podIn, podIP)

	// Out of service: the victim's instance is relocated at once.
	victim := members[0].name
	var moved string
	for pod, c := range podIn {
		if c == victim {
			moved = pod
		}
	}
	// Moved: the subset's cluster edited (two-phase: drained in east, then
	// started in north, under the same names).
	f.updateFleetSet(t, ns, "echo", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Cluster = members[2].name })
	relocatedTo, ips := "", map[string]string{}
	eventually(t, 5*time.Minute, moved+" moved out of "+victim+", its old copy gone", func(ctx context.Context) (bool, string, error) {
		var err error
		var where map[string]string
		if ips, where, err = f.podIPs(ctx, ns, "echo"); err != nil {
			return false, "", err
		}
		var pods corev1.PodList
		if err := members[0].c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "echo"}); err != nil {
			return false, "", err
		}
		relocatedTo = where[moved]
		return relocatedTo != "" && relocatedTo != victim && len(pods.Items) == 0,
			fmt.Sprintf("%s in %q, %d pods left in %s", moved, relocatedTo, len(pods.Items), victim), nil
	})
	want := map[string]string{}
	for pod, c := range podIn {
		want[pod] = c
	}
	want[moved] = relocatedTo
	// east holds no subset of the FleetSet any more, so no record of it:
	// fleet DNS serves the clusters that hold a subset (docs/fleet-dns.md).
	check("moved", members[1:], want, ips)

	// Relocated: the member running the second instance is cut off (hub,
	// other members' nodes and pod subnets); it fences its pod, the hub
	// relocates the subset, and from every member that holds a subset and
	// is not cut off, the same name reaches the relocated copy.
	cut := members[1].name
	if !f.provider.Supports(framework.OpCut, cut, "") {
		t.Logf("the %s fleet cannot cut a member off: no relocation round", f.provider.Name())
		return
	}
	var lost string
	for pod, c := range want {
		if c == cut {
			lost = pod
		}
	}
	f.do(t, framework.OpCut, cut, "")
	healed := false
	t.Cleanup(func() {
		if !healed {
			f.do(t, framework.OpHeal, cut, "")
		}
	})
	cutAt := time.Now()
	var where map[string]string
	eventually(t, 6*time.Minute, lost+" fenced in "+cut+" and relocated", func(ctx context.Context) (bool, string, error) {
		var err error
		if ips, where, err = f.podIPs(ctx, ns, "echo"); err != nil {
			return false, "", err
		}
		// The cut member's StatefulSet re-creates the fenced pod, which the
		// fence keeps Pending (unscheduled) until the member hears the hub:
		// what counts is that nothing runs there.
		var pods corev1.PodList
		if err := members[1].c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "echo"}); err != nil {
			return false, "", err
		}
		placed := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				placed++
			}
		}
		return where[lost] != "" && where[lost] != cut && placed == 0,
			fmt.Sprintf("%s in %q, %d pods placed in %s", lost, where[lost], placed, cut), nil
	})
	t.Logf("%s relocated from %s to %s and Running %s after the cut", lost, cut, where[lost], time.Since(cutAt).Round(time.Second))
	want[lost] = where[lost]
	var from []member
	for _, m := range members {
		if m.name == cut {
			continue
		}
		for _, c := range where {
			if c == m.name {
				from = append(from, m)
				break
			}
		}
	}
	check("relocated", from, want, ips)
	f.do(t, framework.OpHeal, cut, "")
	healed = true
}
