//go:build integration

package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/internal/testing/netcut"
	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/peers"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// The member component under test: the scheduler's, started by the
// SubsetPlacement plugin (TestMain builds it before the scheduler starts
// and hands it to the registry). The test's apiserver is both its hub and its cluster; its hub
// traffic goes through memberLink, which the tests cut and heal. Its one
// peer, "west", is the real member heartbeat and peer endpoint
// (member/contact, member/peers) reaching the hub through westLink.
const (
	memberCluster   = "member-1"
	memberTimeout   = 3 * time.Second
	fencingGraceSec = 2
)

var memberLink, westLink *netcut.Proxy

// memberComponent is the scheduler's member component (setUpMember).
var memberComponent *member.Component

// kubeconfigVia writes a kubeconfig for the apiserver of cfg whose server is
// the proxy p, and returns its path.
func kubeconfigVia(cfg *rest.Config, p *netcut.Proxy, dir string) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: "https://" + p.Addr(), CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.CurrentContext = "hub"
	path := filepath.Join(dir, "hub.kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// setUpMember prepares, before the scheduler starts, the member component's
// configuration: the namespaces it writes in, its hub link and the peer
// "west" with its own link. It returns a cleanup.
func setUpMember(ctx context.Context, cfg *rest.Config) (func(), error) {
	for _, ns := range []string{fleetv1.ResyncLeaseNamespace, memberCluster, "west"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if memberLink, err = netcut.Start("127.0.0.1:0", host); err != nil {
		return nil, err
	}
	if westLink, err = netcut.Start("127.0.0.1:0", host); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencing")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := kubeconfigVia(cfg, memberLink, dir)
	if err != nil {
		return nil, err
	}
	memberCfg := member.DefaultConfig()
	memberCfg.Cluster, memberCfg.HubKubeconfig, memberCfg.HeartbeatTimeout = memberCluster, kubeconfig, memberTimeout
	// The peer west is a plain httptest server.
	memberCfg.PeerInsecure = true
	memberCfg.ClaimExpansion, memberCfg.Roles, memberCfg.RoleUpdates, memberCfg.Actions = false, false, false, false // tested in member/
	memberComponent = member.New(&memberCfg)

	// The peer west: its heartbeat through westLink, its endpoint on loopback.
	westCfg := rest.CopyConfig(cfg)
	westCfg.Host = "https://" + westLink.Addr()
	westCfg.Timeout = time.Second
	westCS := kubernetes.NewForConfigOrDie(westCfg)
	mon := contact.NewMonitor(clock.RealClock{}, memberTimeout)
	hb := &contact.Heartbeat{Cluster: "west", Identity: "west", Hub: westCS.CoordinationV1(), Monitor: mon, Clock: clock.RealClock{}, Period: memberTimeout / 3}
	beatCtx, stopBeat := context.WithCancel(ctx)
	go hb.Run(beatCtx)
	srv := httptest.NewServer(peers.Handler("west", mon))
	b, _ := json.Marshal(map[string]string{"west": srv.URL})
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.PeersConfigMapName},
		Data: map[string]string{fleetv1.PeersKey: string(b)}}
	if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		stopBeat()
		srv.Close()
		return nil, err
	}
	return func() {
		stopBeat()
		srv.Close()
		memberLink.Close()
		westLink.Close()
		_ = os.RemoveAll(dir)
	}, nil
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

// grantWork writes, on the hub (the test apiserver), the ManifestWork of
// FleetSet ns/set in the member's cluster namespace holding SubsetPlacement
// sp at epoch: the hub's word that the placement is still the member's.
// With ack, the work acknowledges the member's heartbeat as the hub reads
// it now (fleetset.io/member-ack: its heartbeat Lease's renewTime), as the
// hub does once it has seen the member back; without, it is a work the hub
// wrote before.
func grantWork(t *testing.T, ns, set string, sp *fleetv1.SubsetPlacement, epoch int64, ack bool) {
	t.Helper()
	p := sp.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: fleetv1.GroupVersion.String(), Kind: "SubsetPlacement"}
	p.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: sp.Name}
	p.Spec.Fencing.Epoch = epoch
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: memberCluster, Name: fleetv1.ManifestWorkName(ns, set)},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
	if ack {
		l, err := cs.CoordinationV1().Leases(memberCluster).Get(context.Background(), fleetv1.HeartbeatLeaseName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Annotations = map[string]string{fleetv1.AnnotationMemberAck: l.Spec.RenewTime.UTC().Format("2006-01-02T15:04:05.000000Z07:00")}
	}
	cur := &workv1.ManifestWork{}
	if err := wcl.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err == nil {
		w.ResourceVersion = cur.ResourceVersion
		if err := wcl.Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := wcl.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// fencedEpoch returns the fence record of SubsetPlacement ns/name ("" none).
func fencedEpoch(t *testing.T, ns, name string) string {
	t.Helper()
	sp := &fleetv1.SubsetPlacement{}
	if err := cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, sp); err != nil {
		t.Fatal(err)
	}
	return sp.Annotations[fleetv1.AnnotationFencedEpoch]
}

// TestFencing drives the member component inside the real scheduler, with
// the real StatefulSet controller and a real network cut of its link to the
// hub (its peer west keeps reaching the hub):
//   - in contact, a fencing placement's pods are bound and stay;
//   - cut off, the member fences itself once its heartbeat timeout passes
//     (west confirms it still reaches the hub): the fence is recorded on the
//     placement, its pods are deleted graceSeconds later, re-created and kept
//     Pending with a FailedScheduling event giving the reason; their PVC and
//     the placement without spec.fencing are untouched;
//   - healed, the placement stays fenced until the hub confirms it here (its
//     ManifestWork for the member holds it at the fenced epoch); then its
//     pods bind again;
//   - a hub outage (member and west both lost) fences nothing: the member
//     holds, past every deadline.
func TestFencing(t *testing.T) {
	ctx := context.Background()
	nodeZones(t)
	ns := newNamespace(t, "fencing")
	fenced := makePlacement(ns, "db", 0, fleetv1.DoNotSchedule, domains("zone-a", "zone-b", "zone-c")...)
	fenced.Spec.Fencing = &fleetv1.PlacementFencing{GraceSeconds: fencingGraceSec}
	fenced.Labels = map[string]string{fleetv1.LabelSet: "db"}
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
	// In contact: nothing is deleted.
	time.Sleep(2 * time.Second)
	if got := uids(podsOf(t, ns, "db")); len(got) != 3 || !sameKeys(got, db) {
		t.Fatalf("pods of the fencing placement changed while in contact: %v → %v", db, got)
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
			t.Errorf("%s: PVC %s: %v", step, pvc.Name, err)
		}
	}

	// A tenant's edit cannot take a pod out of the fence: the fencer picks
	// pods by their StatefulSet, not by the fleetset.io/placement label.
	for _, p := range podsOf(t, ns, "db") {
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"fleetset.io/placement":null}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		break
	}

	// Cut the member's link to the hub.
	cut := time.Now()
	memberLink.Cut()
	gone := waitGone(t, ns, db, 30*time.Second)
	// The fence starts at the last successful heartbeat + the timeout; that
	// heartbeat was sent at most one period before the cut.
	if min := memberTimeout - memberTimeout/3 + fencingGraceSec*time.Second; gone.Sub(cut) < min {
		t.Errorf("pods deleted %s after the cut, before timeout - period + graceSeconds = %s", gone.Sub(cut), min)
	}
	t.Logf("fencing placement's pods deleted %s after the cut (timeout %s, graceSeconds %d)", gone.Sub(cut).Round(10*time.Millisecond), memberTimeout, fencingGraceSec)
	if got := fencedEpoch(t, ns, "db"); got != "0" {
		t.Errorf("fence record %q, want epoch 0", got)
	}
	reason := "fenced: cut off: no contact with the hub for"
	checkFencedPending(t, ns, "db", 3, db, reason)
	t.Logf("event: %s", waitFailedScheduling(t, ns, "peer(s) west reach it"))
	checkPVC("cut off")
	checkWeb("cut off")

	// Healed: in contact again, but the placement stays fenced until the hub
	// confirms it.
	if err := memberLink.Heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	time.Sleep(memberTimeout + 2*time.Second) // contact back, confirmations asked (no work: none given)
	for _, p := range podsOf(t, ns, "db") {
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s bound %s after the heal, before the hub confirmed the placement", p.Name, p.Spec.NodeName)
		}
	}
	waitFailedScheduling(t, ns, "fenced at epoch 0 while cut off; waiting for the hub to confirm")
	// A work holding the placement but written before the hub saw the
	// member back (no acknowledgement of its return) confirms nothing.
	grantWork(t, ns, "db", fenced, 0, false)
	time.Sleep(memberTimeout)
	for _, p := range podsOf(t, ns, "db") {
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s bound %s on a work that acknowledges no heartbeat since the return", p.Name, p.Spec.NodeName)
		}
	}
	grantWork(t, ns, "db", fenced, 0, true)
	granted := time.Now()
	db = uids(waitBound(t, ns, "db", 3))
	t.Logf("pods bound again %s after the heal, %s after the hub's confirmation", time.Since(healed).Round(10*time.Millisecond), time.Since(granted).Round(10*time.Millisecond))
	if got := fencedEpoch(t, ns, "db"); got != "" {
		t.Errorf("fence record %q kept after the confirmation", got)
	}
	checkPVC("healed")
	checkWeb("healed")

	// A hub outage: the member and its peer both lose the hub. The member
	// holds: nothing is deleted, past the timeout + grace many times over.
	memberLink.Cut()
	westLink.Cut()
	outage := time.Now()
	time.Sleep(3 * (memberTimeout + fencingGraceSec*time.Second))
	if got := uids(podsOf(t, ns, "db")); !sameKeys(got, db) {
		t.Errorf("pods of the fencing placement changed during a hub outage of %s: %v → %v", time.Since(outage).Round(time.Second), db, got)
	}
	if got := fencedEpoch(t, ns, "db"); got != "" {
		t.Errorf("fence recorded (%q) during a hub outage", got)
	}
	checkWeb("hub outage")
	if err := memberLink.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := westLink.Heal(); err != nil {
		t.Fatal(err)
	}
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
// SubsetPlacement cache syncs; the member component may patch a placement's
// fence record, create, read and renew its record Lease fleetset-member, read
// the peers' ConfigMap, and delete pods (system:kube-scheduler); it may not
// read other Leases or ConfigMaps of fleetset-system.
func TestFencingRBAC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	applyManifest(t, filepath.Join(controlplane.RepoRoot(), "manifests", "scheduler", "rbac.yaml"))

	const user = "system:serviceaccount:fleetset-system:fleetset-scheduler"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:fleetset-system", "system:authenticated"}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}

	defer func(d time.Duration) { ordinaltarget.SyncTimeout = d }(ordinaltarget.SyncTimeout)
	ordinaltarget.SyncTimeout = 20 * time.Second
	if _, err := ordinaltarget.ForConfig(ctx, cfg); err != nil {
		t.Fatalf("ForConfig as %s with the shipped RBAC: %v", user, err)
	}
	for _, tt := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: "any", Verb: "patch", Group: "fleetset.io", Resource: "subsetplacements"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "any", Verb: "update", Group: "fleetset.io", Resource: "subsetplacements"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "any", Verb: "delete", Resource: "pods"}, true},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: fleetv1.MemberLeaseName}, true},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: fleetv1.MemberLeaseName}, true},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: fleetv1.ResyncLeaseName}, false},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "list", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "get", Resource: "configmaps", Name: fleetv1.PeersConfigMapName}, true},
		{authorizationv1.ResourceAttributes{Namespace: fleetv1.ResyncLeaseNamespace, Verb: "get", Resource: "configmaps", Name: "other"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &tt.attrs}}
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed != tt.want {
			t.Errorf("%s %s %s/%s %q: allowed %v, want %v", user, tt.attrs.Verb, tt.attrs.Group, tt.attrs.Resource, tt.attrs.Name, res.Status.Allowed, tt.want)
		}
	}
}
