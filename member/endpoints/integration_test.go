//go:build integration

package endpoints_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
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
	m := startMember(t)
	ctx, admin := t.Context(), m.admin

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

	m.createInstance(t, 0, "10.1.0.1")
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

// member is a real apiserver whose real EndpointSlice controller keeps the
// governing Service's slices, with the publisher running as the
// scheduler's ServiceAccount (the shipped RBAC of manifests/scheduler),
// reporting to the same apiserver as the hub (namespace east); and the
// FleetSet db as the hub delivers it to namespace db: its governing Service
// db, SubsetPlacement and StatefulSet db-east (no StatefulSet controller
// runs: createInstance makes its pods as that controller would).
type member struct {
	admin kubernetes.Interface
	cfg   *rest.Config
	sts   *appsv1.StatefulSet
}

func startMember(t *testing.T) *member {
	t.Helper()
	env, err := controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	stopKCM, err := controlplane.StartControllerManagerWithFlags(env.Config, t.TempDir(),
		[]string{"--endpointslice-updates-batch-period=" + batchPeriod.String()}, "endpointslice-controller", "clusterrole-aggregation-controller")
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
	set := map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelOwnerUID: "fleetset-db"}
	if err := cl.Create(ctx, &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east", Labels: set},
		Spec: fleetv1.SubsetPlacementSpec{OrdinalStart: 0, OrdinalBlockSize: 1000}}); err != nil {
		t.Fatal(err)
	}
	sts, err := admin.AppsV1().StatefulSets("db").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db-east", Labels: set},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{fleetv1.LabelPlacement: "db-east"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{fleetv1.LabelPlacement: "db-east", fleetv1.LabelSet: "db"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	schedCfg := rest.CopyConfig(env.Config)
	schedCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:fleetset-system:fleetset-scheduler",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}}
	sched := kubernetes.NewForConfigOrDie(schedCfg)
	placements, err := client.New(schedCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	pods := informers.NewSharedInformerFactory(sched, 0)
	stsFactory := wiring.NewStatefulSetFactory(sched)
	d := wiring.Deps{Client: sched, Pods: pods.Core().V1().Pods(), StatefulSets: stsFactory.Apps().V1().StatefulSets(), Placements: placements}
	d.Pods.Informer()
	d.StatefulSets.Informer()
	pods.Start(runCtx.Done())
	stsFactory.Start(runCtx.Done())
	done := make(chan error, 1)
	go func() { done <- endpoints.Run(runCtx, d, admin, "east", time.Hour) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("publisher: %v", err)
		}
		pods.Shutdown()
		stsFactory.Shutdown()
	})
	return &member{admin: admin, cfg: env.Config, sts: sts}
}

// createInstance creates pod db-east-<i> as the StatefulSet controller
// does (controlled by db-east, hostname its name, subdomain db) and makes
// it Running and Ready at ip.
func (m *member) createInstance(t *testing.T, i int, ip string) {
	t.Helper()
	name := fmt.Sprintf("db-east-%d", i)
	m.createPod(t, m.admin, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name,
			Labels: map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east", fleetv1.LabelPlacement: "db-east", fleetv1.LabelPodIndex: fmt.Sprint(i)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: m.sts.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: corev1.PodSpec{Hostname: name, Subdomain: "db", NodeName: "n1", Containers: []corev1.Container{{Name: "db", Image: "db"}}},
	}, ip)
}

// createPod creates pod as cs and makes it Running and Ready at ip (there
// is no kubelet).
func (m *member) createPod(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, ip string) {
	t.Helper()
	ctx := t.Context()
	pod, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := m.admin.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// report returns the hostname=address of each endpoint of east's report
// on the hub (nil when there is none).
func (m *member) report(t *testing.T) []string {
	t.Helper()
	s, err := m.admin.DiscoveryV1().EndpointSlices("east").Get(t.Context(), fleetv1.MemberEndpointsName("db", "db"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, ptr.Deref(e.Hostname, "")+"="+strings.Join(e.Addresses, ","))
	}
	return out
}

// TestForgedPodsAreNotReported (issue 48): a namespace editor of the
// member's namespace (ClusterRole edit, impersonated) creates, with the real
// EndpointSlice controller listing each of them with the hostname it
// claims:
//   - a bare pod labelled as an instance (set, placement, pod-index),
//     hostname db-west-1000 (another cluster's instance) and subdomain db
//     (the governing Service selects it);
//   - a pod db-east-1 with those labels and an ownerReference naming the
//     StatefulSet db-east with another UID;
//   - a Service of her own labelled fleetset.io/set=db and a bare pod
//     selected by it with hostname db-west-1001, subdomain her Service.
//
// The member's report lists none of them: only the instances the
// StatefulSet controls (db-east-0, and db-east-2 created after the forged
// pods were listed, so the report is known to have been written from
// slices that list them).
func TestForgedPodsAreNotReported(t *testing.T) {
	m := startMember(t)
	ctx := t.Context()
	m.createInstance(t, 0, "10.1.0.1")
	if _, err := m.admin.RbacV1().RoleBindings("db").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenant-edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenantCfg := rest.CopyConfig(m.cfg)
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}}
	tenant := kubernetes.NewForConfigOrDie(tenantCfg)
	// The aggregation controller fills ClusterRole edit: wait until the
	// tenant may create pods and Services.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, res := range []string{"pods", "services"} {
			r, err := tenant.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "db", Verb: "create", Resource: res}}}, metav1.CreateOptions{})
			if err != nil || !r.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the namespace editor may not create pods and Services: %v", err)
	}
	labels := func(ordinal string, extra ...string) map[string]string {
		l := map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east", fleetv1.LabelPlacement: "db-east", fleetv1.LabelPodIndex: ordinal}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	spec := func(hostname, subdomain string) corev1.PodSpec {
		return corev1.PodSpec{Hostname: hostname, Subdomain: subdomain, NodeName: "n1", Containers: []corev1.Container{{Name: "db", Image: "db"}}}
	}
	m.createPod(t, tenant, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-west-1000", Labels: labels("1000")},
		Spec: spec("db-west-1000", "db")}, "10.1.0.50")
	m.createPod(t, tenant, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east-1", Labels: labels("1"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db-east", UID: "4d9e3b1c-0000-4000-8000-000000000000", Controller: ptr.To(true)}}},
		Spec: spec("db-east-1", "db")}, "10.1.0.51")
	if _, err := tenant.CoreV1().Services("db").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "evil", Labels: map[string]string{fleetv1.LabelSet: "db"}},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "evil"}, PublishNotReadyAddresses: true},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m.createPod(t, tenant, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "evil-0", Labels: map[string]string{"app": "evil"}},
		Spec: spec("db-west-1001", "evil")}, "10.1.0.52")
	forged := []string{"db-west-1000", "db-east-1", "db-west-1001"}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := m.admin.DiscoveryV1().EndpointSlices("db").List(ctx, metav1.ListOptions{LabelSelector: endpoints.SliceSelector})
		if err != nil {
			return false, err
		}
		listed := map[string]bool{}
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				listed[ptr.Deref(e.Hostname, "")] = true
			}
		}
		for _, h := range forged {
			if !listed[h] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the EndpointSlice controller never listed the forged pods %v: %v", forged, err)
	}
	m.createInstance(t, 2, "10.1.0.3")
	want := []string{"db-east-0=10.1.0.1", "db-east-2=10.1.0.3"}
	var got []string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = m.report(t)
		for _, e := range got {
			for _, h := range forged {
				if strings.HasPrefix(e, h+"=") {
					return false, fmt.Errorf("the report lists forged %s: %v", h, got)
				}
			}
		}
		return slices.Equal(got, want), nil
	}); err != nil {
		t.Fatalf("report %v, want %v: %v", got, want, err)
	}
	time.Sleep(batchPeriod)
	if got := m.report(t); !slices.Equal(got, want) {
		t.Errorf("report %v later, want %v", got, want)
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
