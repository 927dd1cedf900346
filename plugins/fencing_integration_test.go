//go:build integration

package plugins_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// fencingLeaseSeconds is the resync Lease's leaseDurationSeconds in these tests.
const fencingLeaseSeconds = 5

// fakeHub plays the hub's part for the resync Lease: it keeps the Lease
// fleetset-system/fleetset-resync renewed every second while renewing.
type fakeHub struct {
	t      *testing.T
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// ensureResyncNamespace creates the namespace fleetset-system if missing.
func ensureResyncNamespace(t *testing.T) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// writeLease creates or updates the resync Lease with renewTime renewed and
// returns it as stored.
func writeLease(t *testing.T, renewed time.Time) *coordinationv1.Lease {
	t.Helper()
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace)
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To("fake-hub"),
		LeaseDurationSeconds: ptr.To[int32](fencingLeaseSeconds),
		RenewTime:            &metav1.MicroTime{Time: renewed},
	}
	for {
		l, err := leases.Get(ctx, fleetv1.ResyncLeaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.ResyncLeaseName}, Spec: spec}
			if l, err = leases.Create(ctx, l, metav1.CreateOptions{}); err == nil {
				return l
			}
		} else if err == nil {
			l.Spec = spec
			if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
				return l
			}
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("writing Lease %s/%s: %v", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName, err)
		}
	}
}

func deleteLease(t *testing.T) {
	t.Helper()
	err := cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Delete(context.Background(), fleetv1.ResyncLeaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// startHub writes a fresh Lease and renews it every second until stop.
func startHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t}
	h.renew()
	t.Cleanup(func() {
		h.stop()
		deleteLease(t)
	})
	return h
}

// renew renews the Lease now and then every second, in the background.
func (h *fakeHub) renew() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		return
	}
	writeLease(h.t, time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				l, err := cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.ResyncLeaseName, metav1.GetOptions{})
				if err != nil {
					continue
				}
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				_, _ = cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
			}
		}
	}(h.done)
}

// stop stops renewing (the hub lost the cluster) and waits for the last
// renewal to finish.
func (h *fakeHub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel, h.done = nil, nil
}

// expire stops renewing and moves renewTime into the past so that the Lease
// expires now; it returns the expiry (renewTime + leaseDurationSeconds).
func (h *fakeHub) expire() time.Time {
	h.stop()
	l := writeLease(h.t, time.Now().Add(-fencingLeaseSeconds*time.Second))
	return l.Spec.RenewTime.Add(fencingLeaseSeconds * time.Second)
}

// uids returns the UIDs of pods.
func uids(pods map[int64]*v1.Pod) map[types.UID]string {
	out := map[types.UID]string{}
	for _, p := range pods {
		out[p.UID] = p.Name
	}
	return out
}

// waitGone waits until none of the pods with these UIDs exists any more and
// returns when that was observed.
func waitGone(t *testing.T, ns string, want map[types.UID]string, timeout time.Duration) time.Time {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for uid, name := range want {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.UID == uid {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("fenced pods %v of %s not deleted within %s", want, ns, timeout)
	}
	return time.Now()
}

// waitFailedScheduling waits for a FailedScheduling event in ns whose note
// contains want, and returns the note.
func waitFailedScheduling(t *testing.T, ns, want string) string {
	t.Helper()
	var note string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && strings.Contains(e.Note, want) {
				note = e.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedScheduling event in %s containing %q", ns, want)
	}
	return note
}

// checkFencedPending waits for the StatefulSet controller to re-create the
// app's pods, checks that they stay unbound for two seconds, and that each
// has the condition PodScheduled=False naming the lease with want.
func checkFencedPending(t *testing.T, ns, app string, n int, old map[types.UID]string, want string) {
	t.Helper()
	var pods map[int64]*v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods = podsOf(t, ns, app)
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if _, ok := old[p.UID]; ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s/%s was not re-created: %s", ns, app, describe(pods))
	}
	time.Sleep(2 * time.Second) // two backoff periods: time enough to be (wrongly) bound
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pods = podsOf(t, ns, app)
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				t.Fatalf("fenced pod %s was bound to %s", p.Name, p.Spec.NodeName)
			}
			ok := false
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && strings.Contains(c.Message, want) {
					ok = true
				}
			}
			if !ok {
				return false, nil
			}
		}
		return len(pods) == n, nil
	})
	if err != nil {
		t.Errorf("re-created pods of %s/%s lack PodScheduled=False naming %q: %+v", ns, app, want, pods)
	}
}

// TestFencing drives the member side of fencing on a real apiserver, the
// real scheduler with the shipped config and the real StatefulSet
// controller: with the resync Lease fresh a fencing placement's pods are
// bound and stay; once it expires they are deleted after graceSeconds,
// re-created and kept Pending with a FailedScheduling event naming the
// Lease and its expiry; their PVC stays; renewing the Lease binds them again
// at once (the plugin re-queues them). The same with the Lease deleted
// (missing). A placement without spec.fencing is never touched.
func TestFencing(t *testing.T) {
	ctx := context.Background()
	nodeZones(t)
	ensureResyncNamespace(t)
	hub := startHub(t)
	ns := newNamespace(t, "fencing")
	const grace = 2
	fenced := makePlacement(ns, "db", 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-b", "zone-c")...)
	fenced.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: grace}
	if err := cl.Create(ctx, fenced); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, makePlacement(ns, "web", 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-b", "zone-c")...)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db", "web"} {
		if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, makeStatefulSet(ns, name, name, 3, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The test StatefulSet has no volumeClaimTemplates: a claim labelled
	// like its pods stands for one.
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0",
			Labels: map[string]string{"app": "db", fleetv1.LabelSet: "db", fleetv1.LabelPlacement: "db"}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	db := uids(waitBound(t, ns, "db", 3))
	web := uids(waitBound(t, ns, "web", 3))
	// Lease fresh: nothing is deleted.
	time.Sleep(2 * time.Second)
	if got := uids(podsOf(t, ns, "db")); len(got) != 3 || !sameKeys(got, db) {
		t.Fatalf("pods of the fencing placement changed while the lease was fresh: %v → %v", db, got)
	}

	checkWeb := func(step string) {
		t.Helper()
		pods := podsOf(t, ns, "web")
		for _, p := range pods {
			if _, ok := web[p.UID]; !ok || p.Spec.NodeName == "" {
				t.Errorf("%s: pod %s of the placement without fencing was re-created or unbound", step, p.Name)
			}
		}
		if len(pods) != 3 {
			t.Errorf("%s: %d pods of the placement without fencing, want 3", step, len(pods))
		}
	}
	checkPVC := func(step string) {
		t.Helper()
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil || c.DeletionTimestamp != nil || c.UID == "" {
			t.Errorf("%s: PVC %s: %v (deletionTimestamp %v)", step, pvc.Name, err, c.DeletionTimestamp)
		}
	}

	// The hub loses the cluster: the Lease expires.
	expiry := hub.expire()
	gone := waitGone(t, ns, db, 15*time.Second)
	if gone.Before(expiry.Add(grace * time.Second)) {
		t.Errorf("pods deleted by %s, before the lease's expiry %s plus graceSeconds %d", gone.Format(time.RFC3339Nano), expiry.Format(time.RFC3339Nano), grace)
	}
	t.Logf("fencing placement's pods deleted %s after the lease expired (graceSeconds %d)", gone.Sub(expiry).Round(10*time.Millisecond), grace)
	reason := fmt.Sprintf("fenced: Lease %s/%s expired at %s", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName, expiry.UTC().Format(time.RFC3339))
	checkFencedPending(t, ns, "db", 3, db, reason)
	t.Logf("event: %s", waitFailedScheduling(t, ns, reason))
	checkPVC("lease expired")
	checkWeb("lease expired")

	// The hub is back: the pods bind again, long before kube-scheduler's
	// periodic flush of unschedulable pods (5 minutes).
	renewed := time.Now()
	hub.renew()
	db = uids(waitBound(t, ns, "db", 3))
	t.Logf("fencing placement's pods bound again %s after the lease was renewed", time.Since(renewed).Round(10*time.Millisecond))
	checkPVC("lease renewed")
	checkWeb("lease renewed")

	// The Lease is deleted (missing): fenced as well.
	hub.stop()
	deleteLease(t)
	missing := time.Now()
	gone = waitGone(t, ns, db, 15*time.Second)
	if gone.Before(missing.Add(grace * time.Second)) {
		t.Errorf("pods deleted %s after the lease was deleted, before graceSeconds %d", gone.Sub(missing), grace)
	}
	reason = fmt.Sprintf("fenced: Lease %s/%s not found", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName)
	checkFencedPending(t, ns, "db", 3, db, reason)
	t.Logf("event: %s", waitFailedScheduling(t, ns, reason))
	checkPVC("lease missing")
	checkWeb("lease missing")

	hub.renew()
	waitBound(t, ns, "db", 3)
	checkWeb("lease re-created")
}

func sameKeys(a, b map[types.UID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// applyManifest creates every object of a multi-document YAML file,
// leaving existing ones as they are.
func applyManifest(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := cl.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: creating %s %s: %v", path, obj.GetKind(), obj.GetName(), err)
		}
	}
}

// TestFencingRBAC checks manifests/scheduler/rbac.yaml on a real apiserver
// (RBAC authorization), as the scheduler's ServiceAccount: the Resolver's
// cache (SubsetPlacements, and the resync Lease through its field-selected
// informer) syncs, the Lease can be read live, and pods can be deleted
// (system:kube-scheduler); listing Leases across the cluster, what the
// framework's dynamic informer would do for a "leases.v1.coordination.k8s.io"
// event, is refused.
func TestFencingRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ensureResyncNamespace(t)
	applyManifest(t, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", "rbac.yaml"))
	renewed := writeLease(t, time.Now())
	t.Cleanup(func() { deleteLease(t) })

	const user = "system:serviceaccount:fleetset-system:fleetset-scheduler"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	saClient := kubernetes.NewForConfigOrDie(cfg)

	// RBAC bindings take effect at once, but give the authorizer's cache a moment.
	var r *ordinaltarget.Resolver
	defer func(d time.Duration) { ordinaltarget.SyncTimeout = d }(ordinaltarget.SyncTimeout)
	ordinaltarget.SyncTimeout = 20 * time.Second
	r, err := ordinaltarget.ForConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("ForConfig as %s with the shipped RBAC: %v", user, err)
	}
	if fenced, reason, expiry := r.Fenced(time.Now()); fenced || !expiry.Equal(renewed.Spec.RenewTime.Add(fencingLeaseSeconds*time.Second)) {
		t.Errorf("Fenced through the ServiceAccount's cache = %v %q %v, want the fresh lease", fenced, reason, expiry)
	}
	if _, err := saClient.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.ResyncLeaseName, metav1.GetOptions{}); err != nil {
		t.Errorf("live GET of the resync Lease: %v", err)
	}
	if _, err := saClient.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing every Lease of the cluster: err = %v, want Forbidden", err)
	}
	if _, err := saClient.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing every Lease of %s: err = %v, want Forbidden", fleetv1.ResyncLeaseNamespace, err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"},
	}}
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Status.Allowed {
		t.Errorf("%s may not delete pods: %+v", user, res.Status)
	}
}
