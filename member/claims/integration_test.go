//go:build integration

package claims_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/member/claims"
)

// The scheduler's identity, as its ServiceAccount authenticates.
const (
	scheduler = "system:serviceaccount:fleetset-system:fleetset-scheduler"
)

var (
	env *controlplane.Env
	cs  kubernetes.Interface
	cl  client.Client
	// schedCfg and schedCS act as the scheduler's ServiceAccount.
	schedCfg *rest.Config
	schedCS  kubernetes.Interface
)

var owner = map[string]string{fleetv1.LabelSet: "db", fleetv1.LabelSubset: "east", fleetv1.LabelOwnerUID: "fleetset-uid"}

// TestMain starts etcd, kube-apiserver and the real kube-controller-manager
// (its StatefulSet controller and garbage collector), applies the shipped
// RBAC and admission policies of manifests/scheduler, and runs the claims
// Controller as fleetset-scheduler's ServiceAccount, as the scheduler does
// (the member component, with only this controller, over a
// controller-runtime SubsetPlacement cache).
func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	ctrllog.SetLogger(klog.Background())
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	env, err = controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	cs = kubernetes.NewForConfigOrDie(env.Config)
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	if cl, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "claims-kcm-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	stop, err := controlplane.StartControllerManager(env.Config, dir, "statefulset-controller", "garbage-collector-controller")
	if err != nil {
		return 0, err
	}
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, err
	}
	for _, f := range []string{"rbac.yaml", "admission.yaml"} {
		if err := controlplane.ApplyManifest(ctx, cl, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", f)); err != nil {
			return 0, err
		}
	}
	schedCfg = rest.CopyConfig(env.Config)
	schedCfg.Impersonate = rest.ImpersonationConfig{UserName: scheduler,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}}
	schedCS = kubernetes.NewForConfigOrDie(schedCfg)
	placements, err := cache.New(schedCfg, cache.Options{Scheme: scheme})
	if err != nil {
		return 0, err
	}
	if _, err := placements.GetInformer(ctx, &fleetv1.SubsetPlacement{}); err != nil {
		return 0, err
	}
	go func() { _ = placements.Start(ctx) }()
	if !placements.WaitForCacheSync(ctx) {
		return 0, fmt.Errorf("SubsetPlacement cache did not sync as %s", scheduler)
	}
	// The claim expansion controller alone, as the member component runs it.
	cfg := member.DefaultConfig()
	cfg.Roles, cfg.RoleUpdates, cfg.Actions, cfg.ClaimResync = false, false, false, 2*time.Second
	if _, err := member.New(&cfg).Start(ctx, member.Host{Client: schedCS, Placements: placements}); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

func storageClass(t *testing.T, name string, expand bool) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/none", AllowVolumeExpansion: ptr.To(expand)}
	if _, err := cs.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// boundClaim creates the PV and the claim name bound to each other (the
// apiserver resizes only a Bound claim; no binder runs here).
func boundClaim(t *testing.T, ns, name, class, size string) {
	t.Helper()
	ctx := context.Background()
	q := resource.MustParse(size)
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: v1.PersistentVolumeSpec{
			Capacity: v1.ResourceList{v1.ResourceStorage: q}, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: class, PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + name}},
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name},
		},
	}
	pv, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "db"}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To(class), VolumeName: pv.Name,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: q}},
		},
	}
	pvc, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = v1.ClaimBound
	pvc.Status.Capacity = v1.ResourceList{v1.ResourceStorage: q}
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// statefulSet is a delivered StatefulSet db-east, its claim template data
// of size in class.
func statefulSet(ns, class, size string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", Labels: owner},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db", fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db-east"}},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "db:1",
					VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"app": "db"}},
				Spec: v1.PersistentVolumeClaimSpec{
					AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To(class),
					Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
				},
			}},
		},
	}
}

func placement(ns, size string) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-east", Labels: owner},
		Spec:       fleetv1.SubsetPlacementSpec{ClaimStorage: []fleetv1.ClaimStorage{{Name: "data", Storage: resource.MustParse(size)}}},
	}
}

// eventOn waits for an event of reason on the placement db-east and
// returns its note.
func eventOn(t *testing.T, ns, reason string) string {
	t.Helper()
	var note string
	eventually(t, "event "+reason, 30*time.Second, func() (bool, string) {
		list, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "SubsetPlacement" && e.Regarding.Name == "db-east" && e.Reason == reason {
				note = e.Note
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
	return note
}

func claimSize(t *testing.T, ns, name string) string {
	t.Helper()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	return q.String()
}

// TestGrowClaimTemplate: a delivered StatefulSet with a 1Gi claim template
// and two pods, their claims Bound in a class that allows expansion; its
// placement asks 2Gi. The claims are expanded to 2Gi, the StatefulSet is
// deleted with its pods orphaned (same pods, no owner), and the StatefulSet
// created again (as the work agent does) with the 2Gi template adopts them.
func TestGrowClaimTemplate(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "grow")
	storageClass(t, "expandable", true)
	boundClaim(t, ns, "data-db-east-0", "expandable", "1Gi")
	boundClaim(t, ns, "data-db-east-1", "expandable", "1Gi")

	// The scheduler may delete a delivered StatefulSet: RBAC and the
	// add-on's admission policy (loaded once it refuses the scheduler's
	// change to a fencing placement's spec) let it.
	probe := placement(ns, "1Gi")
	probe.Name = "probe"
	probe.Spec.Fencing = &fleetv1.PlacementFencing{Epoch: 1}
	if err := cl.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	schedCl, err := client.New(schedCfg, client.Options{Scheme: cl.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the admission policy fleetset-delivered-objects loaded", 30*time.Second, func() (bool, string) {
		err := schedCl.Patch(ctx, probe.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"fencing":{"epoch":2}}}`)), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "is delivered by fleetset-hub"), fmt.Sprint(err)
	})
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "expandable", "1Gi", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := schedCS.AppsV1().StatefulSets(ns).Delete(ctx, sts.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll},
		PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatalf("the scheduler's dry-run orphaning delete of a delivered StatefulSet: %v", err)
	}

	pods := map[string]types.UID{}
	eventually(t, "the StatefulSet's two pods", 60*time.Second, func() (bool, string) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range list.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == sts.UID {
				pods[p.Name] = p.UID
			}
		}
		return len(pods) == 2, fmt.Sprint(pods)
	})

	if err := cl.Create(ctx, placement(ns, "2Gi")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"data-db-east-0", "data-db-east-1"} {
		eventually(t, n+" expanded", 30*time.Second, func() (bool, string) {
			s := claimSize(t, ns, n)
			return s == "2Gi", s
		})
	}
	eventually(t, "the StatefulSet deleted (orphaning)", 90*time.Second, func() (bool, string) {
		got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db-east", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("uid %s deletionTimestamp %v finalizers %v", got.UID, got.DeletionTimestamp, got.Finalizers)
	})
	checkPods := func(wantOwner types.UID) (bool, string) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var state []string
		ok := len(list.Items) == len(pods)
		for _, p := range list.Items {
			if pods[p.Name] != p.UID || p.DeletionTimestamp != nil {
				t.Fatalf("pod %s was replaced or is being deleted (uid %s, was %s)", p.Name, p.UID, pods[p.Name])
			}
			var owner types.UID
			if ref := metav1.GetControllerOf(&p); ref != nil {
				owner = ref.UID
			}
			ok = ok && owner == wantOwner
			state = append(state, p.Name+" owner "+string(owner))
		}
		return ok, strings.Join(state, ", ")
	}
	eventually(t, "the pods orphaned, same UIDs", 30*time.Second, func() (bool, string) { return checkPods("") })
	if note := eventOn(t, ns, claims.ReasonClaimsExpanded); !strings.Contains(note, "data-db-east-0") || !strings.Contains(note, "data-db-east-1") {
		t.Errorf("ClaimsExpanded: %q", note)
	}
	if note := eventOn(t, ns, claims.ReasonStatefulSetReplaced); !strings.Contains(note, string(sts.UID)) || !strings.Contains(note, "data 1Gi→2Gi") {
		t.Errorf("StatefulSetReplaced: %q", note)
	}

	// The work agent creates the StatefulSet anew, with the 2Gi template:
	// it adopts the pods.
	again, err := cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "expandable", "2Gi", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pods adopted by the new StatefulSet", 60*time.Second, func() (bool, string) { return checkPods(again.UID) })
	time.Sleep(5 * time.Second) // two resyncs of the controller
	if got, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db-east", metav1.GetOptions{}); err != nil || got.UID != again.UID || got.DeletionTimestamp != nil {
		t.Fatalf("the new StatefulSet: %v, %v", got, err)
	}
	if ok, state := checkPods(again.UID); !ok {
		t.Fatalf("pods: %s", state)
	}
}

// TestClassWithoutExpansion: the claim's StorageClass does not allow
// expansion: a Warning event names it, and neither the claim nor the
// StatefulSet changes.
func TestClassWithoutExpansion(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "fixed")
	storageClass(t, "fixed", false)
	boundClaim(t, ns, "data-db-east-0", "fixed", "1Gi")
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "fixed", "1Gi", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, placement(ns, "2Gi")); err != nil {
		t.Fatal(err)
	}
	note := eventOn(t, ns, claims.ReasonClaimExpansionNotAllowed)
	if !strings.Contains(note, "StorageClass fixed of claim data-db-east-0") {
		t.Errorf("ClaimExpansionNotAllowed: %q", note)
	}
	unchanged(t, ns, sts, "1Gi")
}

// TestSmallerClaimStorage: a placement asking less than the template is a
// shrink: refused with a Warning event, nothing changes.
func TestSmallerClaimStorage(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "shrink")
	storageClass(t, "expandable", true)
	boundClaim(t, ns, "data-db-east-0", "expandable", "2Gi")
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, "expandable", "2Gi", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, placement(ns, "1Gi")); err != nil {
		t.Fatal(err)
	}
	eventOn(t, ns, claims.ReasonClaimShrinkRefused)
	unchanged(t, ns, sts, "2Gi")
}

// unchanged checks, over a few of the controller's resyncs, that sts and
// its claim data-db-east-0 (of size) are as they were.
func unchanged(t *testing.T, ns string, sts *appsv1.StatefulSet, size string) {
	t.Helper()
	time.Sleep(5 * time.Second)
	got, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), sts.Name, metav1.GetOptions{})
	if err != nil || got.UID != sts.UID || got.DeletionTimestamp != nil {
		t.Fatalf("the StatefulSet changed: %v, %v", got, err)
	}
	if s := claimSize(t, ns, "data-db-east-0"); s != size {
		t.Fatalf("data-db-east-0 requests %s, want %s", s, size)
	}
}
