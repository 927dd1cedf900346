//go:build integration

package plugins_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/plugins"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

var (
	env *controlplane.Env
	cs  kubernetes.Interface
	cl  client.Client
	// wcl reads and writes ManifestWorks (the hub's, in fencing tests).
	wcl client.Client
)

func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	ctrllog.SetLogger(klog.Background())
	var err error
	ocm, err := controlplane.OCMCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, err = controlplane.Start(append([]string{"manifests/crds/fleetset.io_subsetplacements.yaml"}, ocm...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cs = kubernetes.NewForConfigOrDie(env.Config)
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	cl, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wscheme := runtime.NewScheme()
	_ = workv1.Install(wscheme)
	if wcl, err = client.New(env.Config, client.Options{Scheme: wscheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cleanupMember, err := setUpMember(ctx, env.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The shipped fleetset profile, the same with SubsetPlacement's
	// localityMetadata Annotations (profile annotationsScheduler), and the
	// default profile, for comparison.
	annotations, err := annotationsProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := controlplane.StartScheduler(ctx, env.Config, plugins.Registry(memberComponent), controlplane.SchedulerConfigFile(), annotations, controlplane.DefaultProfileConfigFile()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	controlplane.StartStatefulSetController(ctx, env.Config)
	code := m.Run()
	cancel()
	cleanupMember()
	_ = env.Stop()
	_ = os.RemoveAll(filepath.Dir(annotations))
	os.Exit(code)
}

// annotationsScheduler is the profile of annotationsProfile.
const annotationsScheduler = "fleetset-annotations"

// annotationsProfile writes, in a new temporary directory, the shipped
// KubeSchedulerConfiguration with its profile renamed annotationsScheduler
// and SubsetPlacement's localityMetadata set to Annotations, and returns
// its path. It errors when the shipped config does not name the profile
// and the arg exactly once each.
func annotationsProfile() (string, error) {
	data, err := os.ReadFile(controlplane.SchedulerConfigFile())
	if err != nil {
		return "", err
	}
	for _, r := range [][2]string{
		{"schedulerName: fleetset-scheduler\n", "schedulerName: " + annotationsScheduler + "\n"},
		{"localityMetadata: LabelsAndAnnotations", "localityMetadata: Annotations"},
	} {
		if n := strings.Count(string(data), r[0]); n != 1 {
			return "", fmt.Errorf("%s: %q %d times, want once", controlplane.SchedulerConfigFile(), r[0], n)
		}
		data = []byte(strings.Replace(string(data), r[0], r[1], 1))
	}
	dir, err := os.MkdirTemp("", "fleetset-annotations-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, data, 0o600)
}

// makeNode returns a Ready node in zone with room for 110 pods.
func makeNode(name, zone string) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("64Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelTopologyZone: zone, v1.LabelHostname: name,
		}},
		Status: v1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// nodeZones creates (once) two nodes in each of zone-a, zone-b, zone-c and one
// node in zone-d, which no placement in these tests names, and returns
// node name → zone.
func nodeZones(t *testing.T) map[string]string {
	t.Helper()
	zones := map[string]string{}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		for i := 1; i <= 2; i++ {
			zones[fmt.Sprintf("node-%s-%d", z, i)] = z
		}
	}
	zones["node-zone-d-1"] = "zone-d"
	for name, z := range zones {
		if err := createReadyNode(context.Background(), makeNode(name, z)); err != nil {
			t.Fatal(err)
		}
	}
	return zones
}

// createReadyNode creates the node (if absent) and makes it schedulable: the
// status (allocatable, Ready) goes through the status subresource, and the
// not-ready taint that the TaintNodesByCondition admission adds is removed, as
// a kubelet and the node lifecycle controller would.
func createReadyNode(ctx context.Context, node *v1.Node) error {
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	created.Status = node.Status
	if created, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", node.Name, err)
	}
	if len(created.Spec.Taints) > 0 {
		created.Spec.Taints = nil
		if _, err := cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s taints: %w", node.Name, err)
		}
	}
	return nil
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// makeStatefulSet returns a Parallel StatefulSet scheduled by
// fleetset-scheduler whose pods obey the SubsetPlacement `placementName`.
func makeStatefulSet(ns, name, placementName string, replicas, ordinalStart int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name, fleetv1.LabelSet: name, fleetv1.LabelPlacement: placementName}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					SchedulerName:                 fleetv1.SchedulerName,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if ordinalStart > 0 {
		sts.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: ordinalStart}
	}
	return sts
}

func makePlacement(ns, name string, ordinalStart int32, mode fleetv1.WhenUnsatisfiable, domains ...fleetv1.DomainShare) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.SubsetPlacementSpec{
			Domains:           domains,
			OrdinalStart:      ordinalStart,
			WhenUnsatisfiable: mode,
		},
	}
}

func domains(names ...string) []fleetv1.DomainShare {
	var ds []fleetv1.DomainShare
	for _, n := range names {
		ds = append(ds, fleetv1.DomainShare{Name: n})
	}
	return ds
}

// podsOf lists the pods of a StatefulSet by the app label, keyed by ordinal.
func podsOf(t *testing.T, ns, app string) map[int64]*v1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*v1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		o, err := ordinaltarget.Ordinal(p)
		if err != nil {
			t.Fatal(err)
		}
		out[o] = p
	}
	return out
}

// waitBound waits until the set has exactly `want` pods, all bound, and
// returns them by ordinal.
func waitBound(t *testing.T, ns, app string, want int) map[int64]*v1.Pod {
	t.Helper()
	var pods map[int64]*v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		pods = podsOf(t, ns, app)
		if len(pods) != want {
			return false, nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d bound pods of %s/%s: have %s", want, ns, app, describe(pods))
	}
	return pods
}

func describe(pods map[int64]*v1.Pod) string {
	var parts []string
	for o, p := range pods {
		parts = append(parts, fmt.Sprintf("%d→%q", o, p.Spec.NodeName))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// expectedDomains returns, for ordinals [start, start+n), the domain the
// placement's ordinal map gives each.
func expectedDomains(t *testing.T, sp *fleetv1.SubsetPlacement, n int) map[int64]string {
	t.Helper()
	m, _, err := ordinaltarget.Compile(&sp.Spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{}
	for k := 0; k < n; k++ {
		d, err := m.NameOf(int64(k))
		if err != nil {
			t.Fatal(err)
		}
		want[int64(sp.Spec.OrdinalStart)+int64(k)] = d
	}
	return want
}

// zonesOf maps each pod's ordinal to its node's zone.
func zonesOf(pods map[int64]*v1.Pod, nodeZone map[string]string) map[int64]string {
	got := map[int64]string{}
	for o, p := range pods {
		got[o] = nodeZone[p.Spec.NodeName]
	}
	return got
}

func countByZone(zones map[int64]string) map[string]int {
	c := map[string]int{}
	for _, z := range zones {
		c[z]++
	}
	return c
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	_, err := cs.AppsV1().StatefulSets(ns).Patch(context.Background(), name, "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOrdinalPlacement drives a real StatefulSet through the real StatefulSet
// controller and the fleetset profile: every pod lands in its ordinal's
// domain, scale 9→5→9 keeps the spread within one per domain, a deleted pod
// returns to its domain, and zone-d (outside the placement) is never used.
func TestOrdinalPlacement(t *testing.T) {
	nodeZone := nodeZones(t)
	ns := newNamespace(t, "ordinal")
	sp := makePlacement(ns, "db", 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-b", "zone-c")...)
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "db", "db", 9, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	check := func(step string, n int) map[int64]*v1.Pod {
		pods := waitBound(t, ns, "db", n)
		got := zonesOf(pods, nodeZone)
		if diff := cmp.Diff(expectedDomains(t, sp, n), got); diff != "" {
			t.Errorf("%s: ordinal → zone mismatch (-want,+got):\n%s", step, diff)
		}
		counts := countByZone(got)
		lo, hi := n, 0
		for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
			lo, hi = min(lo, counts[z]), max(hi, counts[z])
		}
		if hi-lo > 1 {
			t.Errorf("%s: spread %v is off by more than one", step, counts)
		}
		if counts["zone-d"] != 0 {
			t.Errorf("%s: %d pods in zone-d, outside the placement", step, counts["zone-d"])
		}
		t.Logf("%s: %v", step, counts)
		return pods
	}

	check("replicas 9", 9)
	scale(t, ns, "db", 5)
	check("scaled 9→5", 5)
	scale(t, ns, "db", 9)
	pods := check("scaled 5→9", 9)

	// Deleting pod 4 (zone of ordinal 4) brings it back to the same domain.
	victim := pods[4]
	zone := nodeZone[victim.Spec.NodeName]
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return p.UID != victim.UID && p.Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s was not re-created and bound: %v", victim.Name, err)
	}
	p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), victim.Name, metav1.GetOptions{})
	if got := nodeZone[p.Spec.NodeName]; got != zone {
		t.Errorf("re-created %s landed in %s, want %s (its ordinal's domain)", victim.Name, got, zone)
	}
}

// TestWeightedDomainsWithOrdinalStart checks counted domains and an ordinal
// offset: ordinals 1000..1005 over zone-a:3, zone-b:2, zone-c:1.
func TestWeightedDomainsWithOrdinalStart(t *testing.T) {
	nodeZone := nodeZones(t)
	ns := newNamespace(t, "weighted")
	sp := makePlacement(ns, "kv-east", 1000, fleetv1.DoNotSchedule,
		fleetv1.DomainShare{Name: "zone-a", Replicas: ptr.To(intstr.FromInt32(3))},
		fleetv1.DomainShare{Name: "zone-b", Replicas: ptr.To(intstr.FromInt32(2))},
		fleetv1.DomainShare{Name: "zone-c", Replicas: ptr.To(intstr.FromInt32(1))},
	)
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "kv", "kv-east", 6, 1000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitBound(t, ns, "kv", 6)
	got := zonesOf(pods, nodeZone)
	if diff := cmp.Diff(expectedDomains(t, sp, 6), got); diff != "" {
		t.Errorf("ordinal → zone mismatch (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"zone-a": 3, "zone-b": 2, "zone-c": 1}, countByZone(got)); diff != "" {
		t.Errorf("counts per zone (-want,+got):\n%s", diff)
	}
}

// TestMissingPlacement: pods naming a placement that does not exist stay
// Pending with a FailedScheduling event naming it, and schedule once it is
// created (the SubsetPlacement event re-queues them).
func TestMissingPlacement(t *testing.T) {
	nodeZone := nodeZones(t)
	ns := newNamespace(t, "missing")
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "late", "late-placement", 3, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && strings.Contains(e.Note, "late-placement") {
				msg = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedScheduling event naming the placement: %v", err)
	}
	t.Logf("event: %s", msg)
	if !strings.Contains(msg, "not found") {
		t.Errorf("event %q does not say the placement is not found", msg)
	}
	for _, p := range podsOf(t, ns, "late") {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s bound to %s without a placement", p.Name, p.Spec.NodeName)
		}
	}
	sp := makePlacement(ns, "late-placement", 0, fleetv1.DoNotSchedule, domains("zone-b", "zone-c")...)
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	got := zonesOf(waitBound(t, ns, "late", 3), nodeZone)
	if diff := cmp.Diff(expectedDomains(t, sp, 3), got); diff != "" {
		t.Errorf("after the placement appeared (-want,+got):\n%s", diff)
	}
}

// TestScheduleAnywayPrefersOrdinalDomain: with ScheduleAnyway a pod whose
// domain has no room lands in another placement domain, and the others still
// land in their ordinal's domain.
func TestScheduleAnywayPrefersOrdinalDomain(t *testing.T) {
	nodeZone := nodeZones(t)
	ns := newNamespace(t, "anyway")
	// zone-e exists only in this placement: it has no nodes.
	sp := makePlacement(ns, "soft", 0, fleetv1.ScheduleAnyway, domains("zone-a", "zone-e", "zone-c")...)
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "soft", "soft", 6, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := zonesOf(waitBound(t, ns, "soft", 6), nodeZone)
	want := expectedDomains(t, sp, 6)
	for o, z := range got {
		if want[o] == "zone-e" {
			if z != "zone-a" && z != "zone-c" {
				t.Errorf("ordinal %d (domain zone-e, no nodes) landed in %s, outside the placement", o, z)
			}
			continue
		}
		if z != want[o] {
			t.Errorf("ordinal %d landed in %s, want its domain %s", o, z, want[o])
		}
	}
}

// TestUnmanagedPodSchedulesLikeDefault: a pod with our schedulerName but no
// fleetset labels is scheduled by the default plugins alone, anywhere,
// zone-d included.
func TestUnmanagedPodSchedulesLikeDefault(t *testing.T) {
	nodeZones(t)
	ns := newNamespace(t, "unmanaged")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec: v1.PodSpec{
			SchedulerName: fleetv1.SchedulerName,
			NodeSelector:  map[string]string{v1.LabelTopologyZone: "zone-d"},
			Containers:    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-zone-d-1", nil
	})
	if err != nil {
		t.Fatalf("unmanaged pod was not bound to node-zone-d-1: %v", err)
	}
}

// TestDoNotScheduleWaitsForOrdinalDomain: with DoNotSchedule, a pod whose
// ordinal maps to a domain without nodes stays Pending, although other
// placement domains have room, and binds there once a node joins that domain
// (the Node/Add event re-queues it).
func TestDoNotScheduleWaitsForOrdinalDomain(t *testing.T) {
	nodeZone := nodeZones(t)
	ns := newNamespace(t, "strict")
	sp := makePlacement(ns, "strict", 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-f")...)
	if err := cl.Create(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), makeStatefulSet(ns, "strict", "strict", 2, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := expectedDomains(t, sp, 2)
	var waiting int64 = -1
	for o, d := range want {
		if d == "zone-f" {
			waiting = o
		}
	}
	if waiting < 0 {
		t.Fatalf("no ordinal maps to zone-f: %v", want)
	}
	// Wait until the zone-a pod is bound, then check the other stayed Pending.
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods := podsOf(t, ns, "strict")
		return len(pods) == 2 && pods[1-waiting].Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("the zone-a pod was not bound: %v", err)
	}
	time.Sleep(2 * time.Second) // two backoff periods: time enough to be (wrongly) bound
	if p := podsOf(t, ns, "strict")[waiting]; p.Spec.NodeName != "" {
		t.Fatalf("ordinal %d (domain zone-f, no nodes) was bound to %s (zone %s)", waiting, p.Spec.NodeName, nodeZone[p.Spec.NodeName])
	}
	if err := createReadyNode(context.Background(), makeNode("node-zone-f-1", "zone-f")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), "node-zone-f-1", metav1.DeleteOptions{}) })
	pods := waitBound(t, ns, "strict", 2)
	if got := pods[waiting].Spec.NodeName; got != "node-zone-f-1" {
		t.Errorf("ordinal %d bound to %s, want node-zone-f-1", waiting, got)
	}
}
