//go:build integration

package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestSchedulerThroughput schedules the same pods on the same nodes twice,
// each time with a freshly started in-process kube-scheduler holding one
// profile: first the fleetset profile (SubsetPlacement over all zones,
// DoNotSchedule, OrdinalSpread), then the default profile with the
// equivalent PodTopologySpread constraint (zone, maxSkew 1, DoNotSchedule).
// Pods exist before the scheduler starts; the clock runs from the scheduler
// start until every pod is bound. It prints BENCH lines: pods/s per profile
// and their ratio. It runs only when BENCH_PODS is set (make bench-scheduler);
// sizes: BENCH_NODES (1000), BENCH_ZONES (3), BENCH_PODS (3000).
func TestSchedulerThroughput(t *testing.T) {
	if os.Getenv("BENCH_PODS") == "" {
		t.Skip("benchmark: run with make bench-scheduler")
	}
	nodes, zones, pods := envInt("BENCH_NODES", 1000), envInt("BENCH_ZONES", 3), envInt("BENCH_PODS", 3000)
	ctrllog.SetLogger(klog.Background())
	env, err := controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	start := time.Now()
	if err := createNodes(ctx, cs, nodes, zones); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d nodes in %v", nodes, time.Since(start).Round(time.Millisecond))

	domains := make([]fleetv1.PlacementDomain, zones)
	for z := range zones {
		domains[z].Name = zoneName(z)
	}
	run := func(name, configFile string, mutate func(*v1.Pod)) float64 {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := createPods(ctx, cs, name, pods, mutate); err != nil {
			t.Fatal(err)
		}
		schedCtx, stop := context.WithCancel(ctx)
		defer stop()
		t0 := time.Now()
		if err := controlplane.StartScheduler(schedCtx, env.Config, configFile); err != nil {
			t.Fatal(err)
		}
		if err := waitAllBound(ctx, cs, name, pods); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		elapsed := time.Since(t0)
		rate := float64(pods) / elapsed.Seconds()
		fmt.Printf("BENCH scheduler profile=%s nodes=%d zones=%d pods=%d seconds=%.2f pods_per_second=%.1f\n", name, nodes, zones, pods, elapsed.Seconds(), rate)
		stop()
		// Free the nodes for the next profile.
		zero := int64(0)
		if err := cs.CoreV1().Pods(name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		return rate
	}

	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	cl, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	fleetNS := "fleetset"
	sp := &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: "bench"},
		Spec:       fleetv1.SubsetPlacementSpec{Domains: domains, WhenUnsatisfiable: fleetv1.DoNotSchedule},
	}
	fleetRate := run(fleetNS, controlplane.SchedulerConfigFile(), func(p *v1.Pod) {
		p.Spec.SchedulerName = fleetv1.SchedulerName
		p.Labels[fleetv1.LabelPlacement] = "bench"
		if p.Namespace == fleetNS && sp.ResourceVersion == "" {
			if err := cl.Create(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
	})
	defaultRate := run("default-profile", controlplane.DefaultProfileConfigFile(), func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetv1.LabelSet: "bench"}},
		}}
	})
	fmt.Printf("BENCH scheduler ratio fleetset/default=%.2f\n", fleetRate/defaultRate)
}

func zoneName(z int) string { return fmt.Sprintf("zone-%c", 'a'+z) }

// createNodes creates n Ready, untainted nodes spread round-robin over zones.
func createNodes(ctx context.Context, cs kubernetes.Interface, n, zones int) error {
	alloc := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110"),
	}
	return parallel(n, func(i int) error {
		name := fmt.Sprintf("node-%05d", i)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelTopologyZone: zoneName(i % zones), v1.LabelHostname: name,
		}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = v1.NodeStatus{Allocatable: alloc, Capacity: alloc,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}
		if created, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
		created.Spec.Taints = nil
		_, err = cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

// createPods creates n StatefulSet-like pods (ordinal label and name suffix)
// of set "bench" in ns; mutate adapts each to a profile.
func createPods(ctx context.Context, cs kubernetes.Interface, ns string, n int, mutate func(*v1.Pod)) error {
	mk := func(i int) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bench-%d", i), Labels: map[string]string{
				fleetv1.LabelSet: "bench", fleetv1.LabelPodIndex: strconv.Itoa(i),
			}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}}}},
		}
		mutate(p)
		return p
	}
	// The first pod goes alone so mutate can create shared objects once.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, mk(0), metav1.CreateOptions{}); err != nil {
		return err
	}
	return parallel(n-1, func(i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, mk(i+1), metav1.CreateOptions{})
		return err
	})
}

func waitAllBound(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		bound := 0
		for i := range list.Items {
			if list.Items[i].Spec.NodeName != "" {
				bound++
			}
		}
		return bound == n, nil
	})
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	errs := make(chan error, n)
	work := make(chan int)
	for range 32 {
		go func() {
			for i := range work {
				errs <- f(i)
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
