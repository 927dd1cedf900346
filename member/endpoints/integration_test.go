//go:build integration

package endpoints_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/member/endpoints"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// batchPeriod is kube-controller-manager's
// --endpointslice-updates-batch-period in this test: the EndpointSlice
// controller writes a pod's change this long after it, so a report that
// ran ahead of the EndpointSlices would be seen to.
const batchPeriod = 3 * time.Second

// TestReportFollowsTheEndpointSlice runs the publisher as the scheduler's
// ServiceAccount (the shipped RBAC of manifests/scheduler) against a real
// apiserver whose real EndpointSlice controller (kube-controller-manager)
// keeps the governing Service's slices, and checks the order the member's
// DNS depends on:
//   - an instance enters the report only after the EndpointSlice lists it;
//   - it leaves the report only after the EndpointSlice dropped it (the
//     hub may then deliver this cluster the instance's record from
//     elsewhere: were it delivered first, this cluster's DNS would answer
//     the deleted copy's address and the record's);
//
// by etcd revision (one apiserver holds the member's slices and the
// "hub's" report here, so their resourceVersions are one sequence).
func TestReportFollowsTheEndpointSlice(t *testing.T) {
	env, err := controlplane.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	stopKCM, err := controlplane.StartControllerManagerWithFlags(env.Config, t.TempDir(),
		[]string{"--endpointslice-updates-batch-period=" + batchPeriod.String()}, "endpointslice-controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopKCM)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	cl, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"db", "east", "fleetset-system"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := controlplane.ApplyManifest(ctx, cl, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The governing Service as the hub delivers it (labelled with its
	// FleetSet, which the EndpointSlice controller copies to its slices).
	if _, err := admin.CoreV1().Services("db").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{fleetv1.LabelSet: "db"},
			PublishNotReadyAddresses: true},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	schedCfg := rest.CopyConfig(env.Config)
	schedCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fleetset-system:fleetset-scheduler",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}}
	member := kubernetes.NewForConfigOrDie(schedCfg)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- endpoints.Run(runCtx, wiring.Deps{Client: member}, admin, "east", time.Hour) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("publisher: %v", err)
		}
	})

	// One watch of the member's slices and the report: revisions at which
	// each listed db-east-0 first and stopped listing it.
	slicesW, err := admin.DiscoveryV1().EndpointSlices("db").Watch(ctx, metav1.ListOptions{LabelSelector: endpoints.SliceSelector})
	if err != nil {
		t.Fatal(err)
	}
	defer slicesW.Stop()
	reportW, err := admin.DiscoveryV1().EndpointSlices("east").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer reportW.Stop()
	tr := &tracker{listed: map[string]bool{}}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east-0",
			Labels: map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east"}},
		Spec: corev1.PodSpec{Hostname: "db-east-0", Subdomain: "db", NodeName: "n1",
			Containers: []corev1.Container{{Name: "db", Image: "db"}}},
	}
	if pod, err = admin.CoreV1().Pods("db").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.1", PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := admin.CoreV1().Pods("db").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.until(t, slicesW, reportW, 30*time.Second, "db-east-0 in the slice and the report", func() bool {
		return tr.listed["slice"] && tr.listed["report"]
	})
	if tr.on["report"] <= tr.on["slice"] {
		t.Errorf("the report listed db-east-0 at revision %d, before the EndpointSlice (%d)", tr.on["report"], tr.on["slice"])
	}

	if err := admin.CoreV1().Pods("db").Delete(ctx, "db-east-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	tr.until(t, slicesW, reportW, 30*time.Second, "db-east-0 gone from the slice and the report", func() bool {
		return !tr.listed["slice"] && !tr.listed["report"]
	})
	t.Logf("pod deleted; EndpointSlice dropped it at revision %d, the report at %d, %v after the deletion",
		tr.off["slice"], tr.off["report"], time.Since(deleted).Round(100*time.Millisecond))
	if tr.off["report"] <= tr.off["slice"] {
		t.Errorf("the report dropped db-east-0 at revision %d, before the EndpointSlice did (%d): the hub could deliver this cluster a record for it while its DNS still answers the deleted copy",
			tr.off["report"], tr.off["slice"])
	}
	// No pod left: the report is deleted, not left empty.
	if _, err := admin.DiscoveryV1().EndpointSlices("east").Get(ctx, fleetv1.MemberEndpointsName("db", "db"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("report still on the hub after its last instance left (%v)", err)
	}
}

// tracker follows whether the member's slices ("slice") and the report
// ("report") list db-east-0, and the revision at which each last started
// (on) and stopped (off) listing it.
type tracker struct {
	listed map[string]bool
	on     map[string]uint64
	off    map[string]uint64
}

// until consumes both watches until cond holds or timeout passes.
func (tr *tracker) until(t *testing.T, slicesW, reportW watch.Interface, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if tr.on == nil {
		tr.on, tr.off = map[string]uint64{}, map[string]uint64{}
	}
	deadline := time.After(timeout)
	for !cond() {
		var ev watch.Event
		var which string
		select {
		case ev = <-slicesW.ResultChan():
			which = "slice"
		case ev = <-reportW.ResultChan():
			which = "report"
		case <-deadline:
			t.Fatalf("%v: %s never came (listed: %v)", timeout, what, tr.listed)
		}
		s, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok {
			t.Fatalf("%s watch: %v", which, ev.Object)
		}
		rv, err := strconv.ParseUint(s.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		listed := ev.Type != watch.Deleted && slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
			return ptr.Deref(e.Hostname, "") == "db-east-0"
		})
		switch {
		case listed && !tr.listed[which]:
			tr.on[which] = rv
		case !listed && tr.listed[which]:
			tr.off[which] = rv
		}
		tr.listed[which] = listed
	}
}
