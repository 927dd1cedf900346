//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// dataClaim is a 1Gi ReadWriteOnce volume claim template named data, for
// the members' default StorageClass.
func dataClaim(size string) []corev1.PersistentVolumeClaim {
	return []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}}
}

// podUIDs returns the UID of every pod of FleetSet ns/name by pod name, per
// cluster.
func podUIDs(ins []instance) map[string]string {
	out := map[string]string{}
	for _, in := range ins {
		out[in.cluster+"/"+in.pod] = in.uid
	}
	return out
}

// memberStatefulSet reads StatefulSet ns/name in member m.
func memberStatefulSet(t *testing.T, m member, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
		t.Fatalf("%s: StatefulSet %s/%s: %v", m.name, ns, name, err)
	}
	return sts
}

// TestSubsetOverridesOnMembers: the first member's subset has its own
// StorageClass and a registry rewrite, the second none; each member's
// StatefulSet carries what it should, the claims bind, and changing the
// first subset's patch restarts that subset's pods only.
func TestSubsetOverridesOnMembers(t *testing.T) {
	f := theFleet
	east, west := f.members[0], f.members[1]
	fast := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-fast"}, Provisioner: "fleetset.io/local",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer), AllowVolumeExpansion: ptr.To(true)}
	if err := east.c.Create(t.Context(), fast); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := f.newNamespace(t, "e2e-overrides")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.VolumeClaimTemplates = dataClaim("1Gi")
	fs.Spec.Topology.Subsets[0].StorageClassNames = []fleetv1.ClaimStorageClass{{Claim: "data", StorageClassName: "e2e-fast"}}
	fs.Spec.Topology.Subsets[0].ImageRegistryRewrites = []fleetv1.ImageRegistryRewrite{{From: "registry.k8s.io", To: "mirror.east.example/k8s"}}
	// The mirror does not exist: where nodes run images (kind, which pulls
	// nothing), the workload image is put on east's nodes under the
	// rewritten name too.
	if mirrored, ok := strings.CutPrefix(workloadImage, "registry.k8s.io/"); ok {
		f.loadImage(t, []string{east.name}, "", workloadImage, "mirror.east.example/k8s/"+mirrored)
	}
	f.createFleetSet(t, fs)
	before := f.waitReady(t, ns, "db", 4)

	es := memberStatefulSet(t, east, ns, "db-"+fs.Spec.Topology.Subsets[0].Name)
	ws := memberStatefulSet(t, west, ns, "db-"+fs.Spec.Topology.Subsets[1].Name)
	if img := es.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "mirror.east.example/k8s/") {
		t.Errorf("%s: image %q, want the mirror's", east.name, img)
	}
	if img := ws.Spec.Template.Spec.Containers[0].Image; img != workloadImage {
		t.Errorf("%s: image %q, want %q", west.name, img, workloadImage)
	}
	if sc := ptr.Deref(es.Spec.VolumeClaimTemplates[0].Spec.StorageClassName, ""); sc != "e2e-fast" {
		t.Errorf("%s: claim template class %q, want e2e-fast", east.name, sc)
	}
	if ws.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != nil {
		t.Errorf("%s: claim template class %q, want the default", west.name, *ws.Spec.VolumeClaimTemplates[0].Spec.StorageClassName)
	}
	for _, in := range before {
		m := f.member(in.cluster)
		pvc := &corev1.PersistentVolumeClaim{}
		if err := m.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-" + in.pod}, pvc); err != nil {
			t.Fatalf("%s: claim of %s: %v", in.cluster, in.pod, err)
		}
		want := ""
		if in.cluster == east.name {
			want = "e2e-fast"
		}
		if pvc.Status.Phase != corev1.ClaimBound || (want != "" && ptr.Deref(pvc.Spec.StorageClassName, "") != want) {
			t.Errorf("%s: claim %s is %s of class %q; want Bound%s", in.cluster, pvc.Name, pvc.Status.Phase, ptr.Deref(pvc.Spec.StorageClassName, ""), map[bool]string{true: " of " + want}[want != ""])
		}
	}

	uids := podUIDs(before)
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.Topology.Subsets[0].Patch = &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"tier":"gold"}}}`)}
	})
	eventually(t, 3*waitTimeout, "every "+east.name+" pod replaced and Ready", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, in := range ins {
			if in.cluster == east.name && (in.uid == uids[in.cluster+"/"+in.pod] || !in.ready) {
				return false, podSummary(ins), nil
			}
		}
		return len(ins) == 4, podSummary(ins), nil
	})
	after, err := f.instances(t.Context(), ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range after {
		if in.cluster == west.name && in.uid != uids[in.cluster+"/"+in.pod] {
			t.Errorf("%s: pod %s replaced by east's patch", in.cluster, in.pod)
		}
	}
}

// TestDependenciesRollTheFleet: a ConfigMap on the hub that the template
// mounts is delivered to every member; edited on the hub, the fleet rolls
// through its RollingUpdate (one-second samples: never more than
// maxUnavailable unavailable); deleted on the hub, the FleetSet is Degraded
// naming it and the members keep their copy.
func TestDependenciesRollTheFleet(t *testing.T) {
	f := theFleet
	const replicas, maxUnavailable = 5, 1
	ns := f.newNamespace(t, "e2e-deps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-conf"}, Data: map[string]string{"mode": "fast"}}
	if err := f.hub.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	fs := f.newFleetSet(ns, "db", replicas)
	fs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-conf"}}}}}
	fs.Spec.MinReadySeconds = 3
	f.createFleetSet(t, fs)
	before := f.waitReady(t, ns, "db", replicas)
	memberMode := func(ctx context.Context, m member) (string, error) {
		got := &corev1.ConfigMap{}
		if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-conf"}, got); err != nil {
			return "", err
		}
		return got.Data["mode"], nil
	}
	for _, m := range f.members {
		if mode, err := memberMode(t.Context(), m); err != nil || mode != "fast" {
			t.Fatalf("%s: db-conf mode %q, %v; want fast", m.name, mode, err)
		}
	}

	var mu sync.Mutex
	var samples, worst int
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for tick := time.NewTicker(time.Second); ctx.Err() == nil; <-tick.C {
			ins, err := f.instances(ctx, ns, "db")
			if err != nil {
				continue
			}
			unavailable := replicas
			for _, in := range ins {
				if in.ready {
					unavailable--
				}
			}
			mu.Lock()
			samples, worst = samples+1, max(worst, unavailable)
			mu.Unlock()
		}
	}()
	cm.Data["mode"] = "safe"
	if err := f.hub.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	uids := podUIDs(before)
	eventually(t, 5*waitTimeout, "every instance replaced and Ready, rollout complete", func(ctx context.Context) (bool, string, error) {
		ins, err := f.instances(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		for _, in := range ins {
			if in.uid == uids[in.cluster+"/"+in.pod] || !in.ready {
				return false, podSummary(ins), nil
			}
		}
		got, err := f.getFleetSet(ctx, ns, "db")
		if err != nil {
			return false, "", err
		}
		return len(ins) == replicas && got.Status.CurrentRevision == got.Status.UpdateRevision, rolloutSummary(got), nil
	})
	cancel()
	<-done
	t.Logf("%d samples, at most %d unavailable (maxUnavailable %d)", samples, worst, maxUnavailable)
	if worst > maxUnavailable {
		t.Errorf("%d instances unavailable at once while the ConfigMap edit rolled out; maxUnavailable %d", worst, maxUnavailable)
	}
	for _, m := range f.members {
		if mode, err := memberMode(t.Context(), m); err != nil || mode != "safe" {
			t.Errorf("%s: db-conf mode %q, %v; want safe", m.name, mode, err)
		}
	}

	if err := f.hub.Delete(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitTimeout, "Degraded DependencyMissing naming db-conf", func(ctx context.Context) (bool, string, error) {
		c, detail, err := f.degraded(ctx, ns, "db")
		return c != nil && c.Reason == fleetv1.ReasonDependencyMissing && strings.Contains(c.Message, "ConfigMap db-conf"), detail, err
	})
	time.Sleep(5 * time.Second)
	for _, m := range f.members {
		if mode, err := memberMode(t.Context(), m); err != nil || mode != "safe" {
			t.Errorf("%s: db-conf after its deletion on the hub: %q, %v; want kept", m.name, mode, err)
		}
	}
}

// TestInstancesKnowWhereTheyRun: every pod carries its cluster, subset and
// domain labels, equal to where it runs, and the fleet view lists every
// instance with its cluster, domain and DNS name.
func TestInstancesKnowWhereTheyRun(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-locality")
	fs := f.newFleetSet(ns, "db", 7)
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 7)
	for _, in := range ins {
		p := &corev1.Pod{}
		if err := f.member(in.cluster).c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: in.pod}, p); err != nil {
			t.Fatal(err)
		}
		got := [3]string{p.Labels[fleetv1.LabelCluster], p.Labels[fleetv1.LabelSubset], p.Labels[fleetv1.LabelDomain]}
		if want := [3]string{in.cluster, in.subset, in.zone}; got != want {
			t.Errorf("pod %s: labels cluster/subset/domain %v, want %v", in.pod, got, want)
		}
		// The same locality as annotations, from the scheduler's Binding.
		if got, want := [2]string{p.Annotations[fleetv1.LabelCluster], p.Annotations[fleetv1.LabelDomain]}, [2]string{in.cluster, in.zone}; got != want {
			t.Errorf("pod %s: annotations cluster/domain %v, want %v", in.pod, got, want)
		}
	}
	view := &corev1.ConfigMap{}
	if err := f.members[0].c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "db-fleet"}, view); err != nil {
		t.Fatal(err)
	}
	var fv fleetv1.FleetView
	if err := json.Unmarshal([]byte(view.Data[fleetv1.FleetViewKey]), &fv); err != nil {
		t.Fatal(err)
	}
	byName := map[string]fleetv1.FleetViewInstance{}
	for _, vi := range fv.Instances {
		byName[vi.Name] = vi
	}
	if len(fv.Instances) != len(ins) {
		t.Errorf("fleet view lists %d instances, %d run", len(fv.Instances), len(ins))
	}
	for _, in := range ins {
		vi, ok := byName[in.pod]
		want := fmt.Sprintf("%s.%s.%s.svc", in.pod, fv.ServiceName, ns)
		if !ok || vi.Cluster != in.cluster || vi.Domain != in.zone || vi.DNSName != want {
			t.Errorf("fleet view of %s = %+v; want cluster %s, domain %s, DNS %s", in.pod, vi, in.cluster, in.zone, want)
		}
	}
}

// TestDay2ClaimsAndServiceName: serviceName and a claim template's access
// modes are refused at admission; growing the storage request 1Gi → 2Gi
// expands every claim on both members and replaces the StatefulSets
// without restarting a pod; scaling down and up gives an instance its own
// claim back.
func TestDay2ClaimsAndServiceName(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-day2")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.VolumeClaimTemplates = dataClaim("1Gi")
	f.createFleetSet(t, fs)
	before := f.waitReady(t, ns, "db", 4)

	for _, tc := range []struct {
		what   string
		mutate func(*fleetv1.FleetSet)
		want   string
	}{
		{"serviceName", func(fs *fleetv1.FleetSet) { fs.Spec.ServiceName = "other" }, "serviceName is immutable"},
		{"accessModes", func(fs *fleetv1.FleetSet) {
			fs.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}, "only a claim template's spec.resources.requests.storage may change"},
	} {
		// Read and write again when the hub's own write (metadata) wins the
		// race: the refusal is what is tested.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := f.getFleetSet(t.Context(), ns, "db")
			if err != nil {
				return err
			}
			tc.mutate(got)
			return f.hub.Update(t.Context(), got)
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("changing %s: %v; want refused with %q", tc.what, err, tc.want)
		}
	}

	claimUIDs := map[string]string{}
	for _, in := range before {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.member(in.cluster).c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-" + in.pod}, pvc); err != nil {
			t.Fatal(err)
		}
		claimUIDs[in.cluster+"/"+pvc.Name] = string(pvc.UID)
	}
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) {
		fs.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	})
	eventually(t, 3*waitTimeout, "every claim at 2Gi and every StatefulSet's template at 2Gi", func(ctx context.Context) (bool, string, error) {
		for _, in := range before {
			m := f.member(in.cluster)
			pvc := &corev1.PersistentVolumeClaim{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + in.pod}, pvc); err != nil {
				return false, "", err
			}
			req, capacity := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
			if req.String() != "2Gi" || capacity.String() != "2Gi" {
				return false, fmt.Sprintf("%s/%s requests %s, capacity %s", in.cluster, pvc.Name, req.String(), capacity.String()), nil
			}
			sts := &appsv1.StatefulSet{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + in.subset}, sts); err != nil {
				return false, fmt.Sprintf("%s: StatefulSet db-%s: %v", in.cluster, in.subset, err), nil
			}
			if q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2Gi" {
				return false, fmt.Sprintf("%s: StatefulSet db-%s claim template %s", in.cluster, in.subset, q.String()), nil
			}
		}
		return true, "", nil
	})
	after := f.waitReady(t, ns, "db", 4)
	uids := podUIDs(before)
	for _, in := range after {
		if in.uid != uids[in.cluster+"/"+in.pod] {
			t.Errorf("%s: pod %s restarted by the claim expansion", in.cluster, in.pod)
		}
	}

	// Scale down to 2 and back to 4: the instances come back to their own
	// claims.
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 2 })
	f.waitReady(t, ns, "db", 2)
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = 4 })
	for _, in := range f.waitReady(t, ns, "db", 4) {
		p := &corev1.Pod{}
		if err := f.member(in.cluster).c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: in.pod}, p); err != nil {
			t.Fatal(err)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := f.member(in.cluster).c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-" + in.pod}, pvc); err != nil {
			t.Fatal(err)
		}
		if want := claimUIDs[in.cluster+"/"+pvc.Name]; string(pvc.UID) != want {
			t.Errorf("%s: %s has claim %s UID %s, want its own %s", in.cluster, in.pod, pvc.Name, pvc.UID, want)
		}
	}
}

// TestFleetDisruptionBudget: maxUnavailable 1 over three subsets renders
// PodDisruptionBudgets whose budgets sum to 1, and the member apiservers
// refuse an eviction in a subset whose part is 0.
func TestFleetDisruptionBudget(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "e2e-pdb")
	fs := f.newFleetSet(ns, "db", 6)
	extra := fs.Spec.Topology.Subsets[0]
	extra.Name, extra.Replicas = "extra", nil
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, extra)
	fs.Spec.DisruptionBudget = &fleetv1.DisruptionBudget{MaxUnavailable: intstr.FromInt32(1)}
	f.createFleetSet(t, fs)
	ins := f.waitReady(t, ns, "db", 6)

	parts := map[string]int{} // subset → maxUnavailable
	eventually(t, waitTimeout, "a PodDisruptionBudget per subset, observed", func(ctx context.Context) (bool, string, error) {
		for _, s := range fs.Spec.Topology.Subsets {
			pdb := &policyv1.PodDisruptionBudget{}
			if err := f.member(s.Cluster).c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-" + s.Name}, pdb); err != nil {
				return false, fmt.Sprintf("%s: db-%s: %v", s.Cluster, s.Name, err), nil
			}
			if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.ExpectedPods == 0 {
				return false, fmt.Sprintf("%s: db-%s not observed yet", s.Cluster, s.Name), nil
			}
			parts[s.Name] = pdb.Spec.MaxUnavailable.IntValue()
		}
		return true, "", nil
	})
	sum := 0
	for _, p := range parts {
		sum += p
	}
	t.Logf("budget parts %v", parts)
	if sum != 1 {
		t.Errorf("PodDisruptionBudgets sum to %d (%v), want the fleet's 1", sum, parts)
	}
	for _, in := range ins {
		if parts[in.subset] != 0 {
			continue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: in.pod}}
		err := f.member(in.cluster).c.SubResource("eviction").Create(t.Context(), p, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: in.pod}})
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("%s: evicting %s of subset %s (budget 0): %v, want 429 Too Many Requests", in.cluster, in.pod, in.subset, err)
		}
		break
	}
}
