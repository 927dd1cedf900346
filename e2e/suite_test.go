//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/e2e/framework"
)

// The fleet's settings (framework.FromEnv): the default wait (pods on kwok
// turn Ready in seconds, on kind images may need pulling), the bound of one
// provider action, and the test workloads' image.
var (
	waitTimeout   time.Duration
	hookTimeout   time.Duration
	workloadImage string
	pollInterval  = time.Second
)

var manifestWorkGVK = schema.GroupVersionKind{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWorkList"}

// member is one member cluster of the fleet.
type member struct {
	name string
	c    client.WithWatch
}

// fleet is the system under test: the hub and its members, and the
// provider that acts on their processes.
type fleet struct {
	hub     client.Client
	members []member
	// spare are further members (FLEETSET_E2E_SPARE_MEMBERS) that only the
	// tests needing more than two clusters use.
	spare    []member
	zones    []string
	provider framework.Provider
	cfg      framework.Config
}

var theFleet *fleet

func TestMain(m *testing.M) {
	cfg, err := framework.FromEnv()
	if err == nil {
		theFleet, err = newFleet(cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func newFleet(cfg framework.Config) (*fleet, error) {
	fw, err := framework.NewFleet(cfg, framework.ClientOptions{QPS: 50, Burst: 100})
	if err != nil {
		return nil, err
	}
	waitTimeout, hookTimeout, workloadImage = cfg.Timeout, cfg.ActionTimeout, cfg.Image
	f := &fleet{hub: fw.Hub, zones: cfg.Zones, provider: fw.Provider, cfg: cfg}
	for _, m := range fw.Members {
		f.members = append(f.members, member{name: m.Name, c: m.Client})
	}
	for _, m := range fw.Spare {
		f.spare = append(f.spare, member{name: m.Name, c: m.Client})
	}
	return f, nil
}

func (f *fleet) member(name string) member {
	for _, m := range f.members {
		if m.name == name {
			return m
		}
	}
	panic("no member " + name)
}

// loadImage puts image (from archive, or the nodes' own copy when archive
// is "") on the nodes of clusters under its name and every alias, where the
// provider's fleet needs it (kind); framework.LoadImage.
func (f *fleet) loadImage(t *testing.T, clusters []string, archive, image string, aliases ...string) {
	t.Helper()
	ctx := framework.WithLogf(t.Context(), t.Logf)
	if err := framework.LoadImage(ctx, f.provider, clusters, archive, image, aliases...); err != nil {
		t.Fatalf("loading image %s: %v", image, err)
	}
}

// eventually polls cond until it returns true, failing the test with the
// last reason after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	// Not canceled with the test: cleanups wait with eventually too.
	if err := framework.Poll(context.WithoutCancel(t.Context()), pollInterval, timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
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

// bindClusterSet binds OCM's ManagedClusterSet set to hub namespace ns and
// waits until it is Bound. "global" holds every cluster.
func (f *fleet) bindClusterSet(t *testing.T, ns, set string) {
	t.Helper()
	if err := framework.BindClusterSet(t.Context(), f.hub, ns, set, waitTimeout); err != nil {
		t.Fatal(err)
	}
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
	return framework.ManagedClusterAvailable(ctx, f.hub, name)
}

func (m member) resyncLease(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	return l, m.c.Get(ctx, client.ObjectKey{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName}, l)
}

// skipUnless skips the test when the fleet's provider cannot do op on
// cluster/proc.
func (f *fleet) skipUnless(t *testing.T, op framework.Op, cluster, proc string) {
	t.Helper()
	if !f.provider.Supports(op, cluster, proc) {
		t.Skipf("the %s fleet offers no way to %s %s %s (FLEETSET_E2E_PROVIDER)", f.provider.Name(), op, cluster, proc)
	}
}

// do runs op on cluster/proc through the fleet's provider (Restart: with
// args), failing the test on error. It also runs in cleanups.
func (f *fleet) do(t *testing.T, op framework.Op, cluster, proc string, args ...string) {
	t.Helper()
	f.doRebuilt(t, op, cluster, proc, "", args...)
}

// doRebuilt is do with a rebuild version for Restart.
func (f *fleet) doRebuilt(t *testing.T, op framework.Op, cluster, proc, rebuild string, args ...string) {
	t.Helper()
	var logs []string // logged here, at the test's line
	ctx, cancel := context.WithTimeout(framework.WithLogf(context.Background(), func(format string, args ...any) {
		logs = append(logs, fmt.Sprintf(format, args...))
	}), hookTimeout)
	defer cancel()
	var err error
	if op == framework.OpRestart {
		err = f.provider.Restart(ctx, cluster, proc, rebuild, args...)
	} else {
		err = framework.Do(ctx, f.provider, framework.Action{Op: op, Cluster: cluster, Proc: proc})
	}
	for _, l := range logs {
		t.Log(l)
	}
	if err != nil {
		t.Fatal(err)
	}
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
	if logs := f.provider.Logs(); logs != "" {
		fmt.Fprintf(&b, "==== process logs: %s\n", logs)
	}
	if l, ok := f.provider.(framework.LoadReporter); ok {
		fmt.Fprintf(&b, "==== host: %s\n", l.Load())
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

// hubEvent reports whether the hub holds an event of reason about the
// object named name in namespace ns whose message contains substr.
func (f *fleet) hubEvent(t *testing.T, ns, name, reason, substr string) bool {
	t.Helper()
	var events corev1.EventList
	if err := f.hub.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}

// asMasters returns a client of member cluster name that impersonates a
// user of group system:masters (a cluster administrator the member
// admission policy trusts), through the member's kubeconfig, which must
// allow impersonation (kind's kubeadm admin and the local fleet's do).
func (f *fleet) asMasters(t *testing.T, name string) client.Client {
	t.Helper()
	cfg := f.memberRESTConfig(t, name)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-cluster-admin", Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// memberRESTConfig returns a new REST config of member (or spare member)
// name from its kubeconfig, for a client of its own.
func (f *fleet) memberRESTConfig(t *testing.T, name string) *rest.Config {
	t.Helper()
	for _, m := range append(slices.Clone(f.cfg.Members), f.cfg.Spare...) {
		if m.Name != name {
			continue
		}
		cfg, err := framework.RESTConfig(m.Path, framework.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	t.Fatalf("no member %q", name)
	return nil
}
