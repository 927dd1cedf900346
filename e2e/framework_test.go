//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Timeouts: pods on kwok turn Ready in seconds, on kind images may need
// pulling; FLEETSET_E2E_TIMEOUT overrides the default wait.
// FLEETSET_E2E_HOOK_TIMEOUT bounds one hook command (a kind fleet's restart
// rebuilds an image and rolls a Deployment).
var (
	waitTimeout  = envDuration("FLEETSET_E2E_TIMEOUT", 3*time.Minute)
	hookTimeout  = envDuration("FLEETSET_E2E_HOOK_TIMEOUT", 2*time.Minute)
	pollInterval = time.Second
)

// workloadImage is the container image of the test FleetSets' pods:
// FLEETSET_E2E_IMAGE, for a fleet whose nodes cannot pull (a kind node holds
// only its own pause image and the images loaded into it).
var workloadImage = envString("FLEETSET_E2E_IMAGE", "registry.k8s.io/pause:3.10")

var (
	managedClusterGVK = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}
	manifestWorkGVK   = schema.GroupVersionKind{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWorkList"}
)

// member is one member cluster of the fleet.
type member struct {
	name string
	c    client.WithWatch
}

// fleet is the system under test: the hub and its members, from the
// environment only.
type fleet struct {
	hub     client.Client
	members []member
	// spare are further members (FLEETSET_E2E_SPARE_MEMBERS, name=path,...)
	// that only the tests needing more than two clusters use.
	spare []member
	zones []string
}

var theFleet *fleet

func TestMain(m *testing.M) {
	f, err := fleetFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	theFleet = f
	os.Exit(m.Run())
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := fleetv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := clusterv1beta2.Install(s); err != nil {
		panic(err)
	}
	if err := clusterv1beta1.Install(s); err != nil {
		panic(err)
	}
	return s
}

func clientFor(path string) (client.WithWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return client.NewWithWatch(cfg, client.Options{Scheme: newScheme()})
}

func fleetFromEnv() (*fleet, error) {
	hubPath := os.Getenv("FLEETSET_HUB_KUBECONFIG")
	members := os.Getenv("FLEETSET_MEMBER_KUBECONFIGS")
	if hubPath == "" || members == "" {
		return nil, fmt.Errorf("set FLEETSET_HUB_KUBECONFIG and FLEETSET_MEMBER_KUBECONFIGS (name=path,name=path); `make e2e` does it for the local fleet")
	}
	hub, err := clientFor(hubPath)
	if err != nil {
		return nil, err
	}
	f := &fleet{hub: hub, zones: []string{"zone-a", "zone-b", "zone-c"}}
	if z := os.Getenv("FLEETSET_E2E_ZONES"); z != "" {
		f.zones = strings.Split(z, ",")
	}
	if f.members, err = membersFrom("FLEETSET_MEMBER_KUBECONFIGS", members); err != nil {
		return nil, err
	}
	if len(f.members) < 2 {
		return nil, fmt.Errorf("FLEETSET_MEMBER_KUBECONFIGS: the suite needs at least two members, got %d", len(f.members))
	}
	if spare := os.Getenv("FLEETSET_E2E_SPARE_MEMBERS"); spare != "" {
		if f.spare, err = membersFrom("FLEETSET_E2E_SPARE_MEMBERS", spare); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// membersFrom parses name=path,... (the value of env) into members with
// clients.
func membersFrom(env, value string) ([]member, error) {
	var out []member
	for _, kv := range strings.Split(value, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("%s: %q is not name=path", env, kv)
		}
		c, err := clientFor(path)
		if err != nil {
			return nil, err
		}
		out = append(out, member{name: name, c: c})
	}
	return out, nil
}

func envString(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func (f *fleet) member(name string) member {
	for _, m := range f.members {
		if m.name == name {
			return m
		}
	}
	panic("no member " + name)
}

// eventually polls cond until it returns true, failing the test with the
// last reason after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	// Not canceled with the test: cleanups wait with eventually too.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), timeout)
	defer cancel()
	last := ""
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		ok, why, err := cond(ctx)
		if err != nil {
			if ctx.Err() == nil { // not the deadline cutting the last call short
				last = err.Error()
			}
			return false, nil // transient: retry
		}
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
	}
}

// ---------------------------------------------------------------- FleetSets

func randSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newNamespace creates a fresh namespace on the hub for one test and, at the
// end, deletes it there and in every member (the hub's works orphan it).
func (f *fleet) newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := f.newUnboundNamespace(t, prefix)
	f.bindClusterSet(t, ns, "global")
	return ns
}

// bindClusterSet binds OCM's ManagedClusterSet set to hub namespace ns
// (ManagedClusterSetBinding named after the set) and waits until OCM's
// registration controller marks it Bound. "global" holds every cluster.
func (f *fleet) bindClusterSet(t *testing.T, ns, set string) {
	t.Helper()
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	if err := f.hub.Create(t.Context(), b); err != nil {
		t.Fatalf("binding ManagedClusterSet %s to namespace %s: %v", set, ns, err)
	}
	eventually(t, waitTimeout, fmt.Sprintf("ManagedClusterSetBinding %s/%s Bound", ns, set), func(ctx context.Context) (bool, string, error) {
		if err := f.hub.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, "", err
		}
		return apimeta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType), fmt.Sprint(b.Status.Conditions), nil
	})
}

// newUnboundNamespace creates a hub namespace with no
// ManagedClusterSetBinding, removed with what the test made in it.
func (f *fleet) newUnboundNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := prefix + "-" + randSuffix()
	if err := f.hub.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Delete FleetSets first and wait, so the hub removes their works.
		_ = f.hub.DeleteAllOf(ctx, &fleetv1.FleetSet{}, client.InNamespace(ns))
		_ = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			var l fleetv1.FleetSetList
			err := f.hub.List(ctx, &l, client.InNamespace(ns))
			return err == nil && len(l.Items) == 0, nil
		})
		_ = f.hub.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for _, m := range f.members {
			_ = m.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	})
	return ns
}

// shares returns the default subset shares for the fleet's members: 60%/40%
// over two members, even shares over more.
func (f *fleet) defaultSubsets() []fleetv1.Subset {
	var subsets []fleetv1.Subset
	for i, m := range f.members {
		s := fleetv1.Subset{Name: m.name, Cluster: m.name}
		if len(f.members) == 2 {
			s.Replicas = ptr.To(intstr.FromString([]string{"60%", "40%"}[i]))
		}
		for _, z := range f.zones {
			s.Domains = append(s.Domains, fleetv1.DomainShare{Name: z})
		}
		subsets = append(subsets, s)
	}
	return subsets
}

// newFleetSet returns a FleetSet of pause containers over every member and
// zone.
func (f *fleet) newFleetSet(ns, name string, replicas int32) *fleetv1.FleetSet {
	labels := map[string]string{"app": name}
	return &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.FleetSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name:  "db",
						Image: workloadImage,
						Env:   []corev1.EnvVar{{Name: "VERSION", Value: "1"}},
					}},
				},
			},
			Topology: fleetv1.FleetTopology{Subsets: f.defaultSubsets()},
		},
	}
}

// createFleetSet creates fs on the hub and dumps the fleet's objects if the
// test fails.
func (f *fleet) createFleetSet(t *testing.T, fs *fleetv1.FleetSet) {
	t.Helper()
	if err := f.hub.Create(t.Context(), fs); err != nil {
		t.Fatalf("creating FleetSet %s/%s: %v", fs.Namespace, fs.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t, fs.Namespace, fs.Name)
		}
	})
}

// degraded returns FleetSet ns/name's Degraded condition, and why it has
// none (or the read failed) as the second value for eventually's detail.
func (f *fleet) degraded(ctx context.Context, ns, name string) (*metav1.Condition, string, error) {
	got, err := f.getFleetSet(ctx, ns, name)
	if err != nil {
		return nil, "", err
	}
	c := condition(got, fleetv1.ConditionDegraded)
	if c == nil {
		return nil, "no Degraded condition", nil
	}
	return c, fmt.Sprintf("Degraded=%s %s: %s", c.Status, c.Reason, c.Message), nil
}

func (f *fleet) getFleetSet(ctx context.Context, ns, name string) (*fleetv1.FleetSet, error) {
	fs := &fleetv1.FleetSet{}
	return fs, f.hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fs)
}

// updateFleetSet applies mutate to the FleetSet, retrying on conflicts.
func (f *fleet) updateFleetSet(t *testing.T, ns, name string, mutate func(*fleetv1.FleetSet)) {
	t.Helper()
	eventually(t, 30*time.Second, "updating FleetSet "+name, func(ctx context.Context) (bool, string, error) {
		fs, err := f.getFleetSet(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		mutate(fs)
		if err := f.hub.Update(ctx, fs); err != nil {
			if apierrors.IsConflict(err) {
				return false, "conflict", nil
			}
			return false, "", err
		}
		return true, "", nil
	})
}

// ---------------------------------------------------------------- pods

// instance is one pod of a FleetSet as found in a member cluster.
type instance struct {
	cluster, subset, pod, node, zone string
	ordinal                          int
	ready                            bool
	uid                              string
	revision                         string
	version                          string // the first container's VERSION env
}

// instances lists the pods of FleetSet ns/name in every member, with their
// node's zone, sorted by ordinal.
func (f *fleet) instances(ctx context.Context, ns, name string) ([]instance, error) {
	var out []instance
	for _, m := range f.members {
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: name}); err != nil {
			return nil, fmt.Errorf("%s: listing pods: %w", m.name, err)
		}
		var nodes corev1.NodeList
		if err := m.c.List(ctx, &nodes); err != nil {
			return nil, fmt.Errorf("%s: listing nodes: %w", m.name, err)
		}
		zoneOf := map[string]string{}
		for _, n := range nodes.Items {
			zoneOf[n.Name] = n.Labels[fleetv1.DefaultTopologyKey]
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			ord, err := strconv.Atoi(p.Labels[fleetv1.LabelPodIndex])
			if err != nil {
				return nil, fmt.Errorf("%s: pod %s has no %s label", m.name, p.Name, fleetv1.LabelPodIndex)
			}
			in := instance{
				cluster: m.name, subset: p.Labels[fleetv1.LabelSubset], pod: p.Name,
				node: p.Spec.NodeName, zone: zoneOf[p.Spec.NodeName], ordinal: ord,
				uid: string(p.UID), revision: p.Labels[appsv1.ControllerRevisionHashLabelKey],
			}
			for _, e := range p.Spec.Containers[0].Env {
				if e.Name == "VERSION" {
					in.version = e.Value
				}
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					in.ready = p.Status.Phase == corev1.PodRunning
				}
			}
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ordinal < out[j].ordinal })
	return out, nil
}

// waitReady waits until FleetSet ns/name has exactly want Ready instances in
// the members and reports them in status, and returns the instances.
func (f *fleet) waitReady(t *testing.T, ns, name string, want int) []instance {
	t.Helper()
	var got []instance
	eventually(t, waitTimeout, fmt.Sprintf("%d ready instances of %s/%s", want, ns, name), func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, in := range ins {
			if in.ready {
				ready++
			}
		}
		if len(ins) != want || ready != want {
			return false, fmt.Sprintf("%d instances, %d ready", len(ins), ready), nil
		}
		fs, err := f.getFleetSet(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		if fs.Status.ReadyReplicas != int32(want) || fs.Status.ObservedGeneration != fs.Generation {
			return false, fmt.Sprintf("FleetSet status readyReplicas %d observedGeneration %d/%d", fs.Status.ReadyReplicas, fs.Status.ObservedGeneration, fs.Generation), nil
		}
		got = ins
		return true, "", nil
	})
	return got
}

func formatInstances(ins []instance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-8s %-8s %-22s %-24s %-8s %s\n", "CLUSTER", "SUBSET", "ZONE", "NODE", "POD", "ORDINAL", "READY")
	for _, in := range ins {
		fmt.Fprintf(&b, "%-8s %-8s %-8s %-22s %-24s %-8d %v\n", in.cluster, in.subset, in.zone, in.node, in.pod, in.ordinal, in.ready)
	}
	return b.String()
}

// ---------------------------------------------------------------- OCM, leases

func (f *fleet) managedClusterAvailable(ctx context.Context, name string) (string, error) {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(managedClusterGVK)
	if err := f.hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return "", err
	}
	conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "ManagedClusterConditionAvailable" {
			s, _ := m["status"].(string)
			return s, nil
		}
	}
	return "", nil
}

func (m member) resyncLease(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	return l, m.c.Get(ctx, client.ObjectKey{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName}, l)
}

// runHook runs an fleet-specific command from the environment with the
// cluster name appended; it skips the test when the variable is unset.
func runHook(t *testing.T, env, cluster string, extra ...string) {
	t.Helper()
	cmdline := os.Getenv(env)
	if cmdline == "" {
		t.Skipf("%s is not set: this fleet offers no way to stop a member's agent", env)
	}
	args := append(append(strings.Fields(cmdline), cluster), extra...)
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout) // also runs in cleanups
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", env, strings.Join(args, " "), err, out)
	}
	t.Logf("%s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
}

// ---------------------------------------------------------------- dump

// dump logs what each cluster holds of FleetSet ns/name, for a failed test.
func (f *fleet) dump(t *testing.T, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "==== dump of FleetSet %s/%s\n", ns, name)
	if fs, err := f.getFleetSet(ctx, ns, name); err == nil {
		fs.ManagedFields = nil
		y, _ := yaml.Marshal(fs)
		fmt.Fprintf(&b, "--- hub FleetSet\n%s", y)
	} else {
		fmt.Fprintf(&b, "--- hub FleetSet: %v\n", err)
	}
	for _, m := range f.members {
		st, err := f.managedClusterAvailable(ctx, m.name)
		fmt.Fprintf(&b, "--- hub ManagedCluster %s: Available=%q %v\n", m.name, st, errString(err))
		works := &unstructured.UnstructuredList{}
		works.SetGroupVersionKind(manifestWorkGVK)
		if err := f.hub.List(ctx, works, client.InNamespace(m.name)); err == nil {
			for _, w := range works.Items {
				conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
				fmt.Fprintf(&b, "--- hub ManifestWork %s/%s conditions:\n", m.name, w.GetName())
				for _, c := range conds {
					cm, _ := c.(map[string]any)
					fmt.Fprintf(&b, "    %v=%v %v: %v\n", cm["type"], cm["status"], cm["reason"], cm["message"])
				}
				manifests, _, _ := unstructured.NestedSlice(w.Object, "status", "resourceStatus", "manifests")
				for _, m := range manifests {
					mm, _ := m.(map[string]any)
					meta, _ := mm["resourceMeta"].(map[string]any)
					rconds, _ := mm["conditions"].([]any)
					for _, c := range rconds {
						cm, _ := c.(map[string]any)
						if cm["status"] != "True" {
							fmt.Fprintf(&b, "      %v %v: %v=%v %v: %v\n", meta["kind"], meta["name"], cm["type"], cm["status"], cm["reason"], cm["message"])
						}
					}
				}
			}
		}
	}
	for _, m := range f.members {
		fmt.Fprintf(&b, "--- member %s\n", m.name)
		var stss appsv1.StatefulSetList
		if err := m.c.List(ctx, &stss, client.InNamespace(ns)); err == nil {
			for _, s := range stss.Items {
				st, _ := yaml.Marshal(s.Status)
				fmt.Fprintf(&b, "  StatefulSet %s: replicas %d start %d partition %d status:\n%s", s.Name, ptr.Deref(s.Spec.Replicas, -1),
					ordinalStart(&s), partitionOf(&s), indent(st, "    "))
			}
		}
		var sps fleetv1.SubsetPlacementList
		if err := m.c.List(ctx, &sps, client.InNamespace(ns)); err == nil {
			for _, p := range sps.Items {
				sp, _ := yaml.Marshal(p.Spec)
				fmt.Fprintf(&b, "  SubsetPlacement %s:\n%s", p.Name, indent(sp, "    "))
			}
		}
		var pods corev1.PodList
		if err := m.c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for _, p := range pods.Items {
				fmt.Fprintf(&b, "  Pod %s: node %q phase %s\n", p.Name, p.Spec.NodeName, p.Status.Phase)
				for _, c := range p.Status.Conditions {
					if c.Status != corev1.ConditionTrue {
						fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
					}
				}
			}
		}
		var events corev1.EventList
		if err := m.c.List(ctx, &events, client.InNamespace(ns)); err == nil {
			sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
			if n := len(events.Items); n > 30 {
				events.Items = events.Items[n-30:]
			}
			for _, e := range events.Items {
				fmt.Fprintf(&b, "  Event %s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		if l, err := m.resyncLease(ctx); err == nil {
			ls, _ := yaml.Marshal(l.Spec)
			fmt.Fprintf(&b, "  Lease %s/%s (now %s):\n%s", l.Namespace, l.Name, time.Now().UTC().Format(time.RFC3339), indent(ls, "    "))
		} else {
			fmt.Fprintf(&b, "  Lease %s/%s: %v\n", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName, err)
		}
	}
	if logs := os.Getenv("FLEETSET_E2E_LOGS"); logs != "" {
		fmt.Fprintf(&b, "==== process logs: %s\n", logs)
	}
	t.Log(b.String())
}

func indent(b []byte, prefix string) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func ordinalStart(s *appsv1.StatefulSet) int32 {
	if s.Spec.Ordinals == nil {
		return 0
	}
	return s.Spec.Ordinals.Start
}

func partitionOf(s *appsv1.StatefulSet) int32 {
	if s.Spec.UpdateStrategy.RollingUpdate == nil {
		return 0
	}
	return ptr.Deref(s.Spec.UpdateStrategy.RollingUpdate.Partition, 0)
}

// condition returns the FleetSet condition of type typ, or nil.
func condition(fs *fleetv1.FleetSet, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(fs.Status.Conditions, typ)
}
