package manifestwork

import (
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Lease is the state of the resync lease the hub delivers to one cluster.
type Lease struct {
	// HolderIdentity is the hub's identity.
	HolderIdentity string
	// DurationSeconds is leaseDurationSeconds, in seconds.
	DurationSeconds int32
	// AcquireTime is when the hub (this identity) first held the lease.
	AcquireTime metav1.MicroTime
	// RenewTime is the last renewal.
	RenewTime metav1.MicroTime
}

// ResyncWork renders the per-cluster ManifestWork v1alpha1.ResyncWorkName in
// namespace cluster: the namespace v1alpha1.ResyncLeaseNamespace (orphaned on
// deletion: fleetset-scheduler may live there) and the Lease
// v1alpha1.ResyncLeaseName holding l. Both are applied with server-side apply
// and force, so every renewTime the hub writes reaches the member Lease.
func ResyncWork(cluster string, l Lease) (*workv1.ManifestWork, error) {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace},
	}
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseName, Namespace: fleetv1.ResyncLeaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(l.HolderIdentity),
			LeaseDurationSeconds: ptr.To(l.DurationSeconds),
			AcquireTime:          ptr.To(l.AcquireTime),
			RenewTime:            ptr.To(l.RenewTime),
		},
	}
	manifests, err := encode([]runtime.Object{ns, lease})
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fleetv1.ResyncWorkName,
			Namespace: cluster,
			Labels: map[string]string{
				fleetv1.LabelManagedBy: fleetv1.ManagedByHub,
				fleetv1.LabelResync:    "true",
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:     workv1.ManifestsTemplate{Manifests: manifests},
			DeleteOption: orphanNamespace(fleetv1.ResyncLeaseNamespace),
			ManifestConfigs: []workv1.ManifestConfigOption{
				applyConfig("", "namespaces", "", fleetv1.ResyncLeaseNamespace),
				applyConfig("coordination.k8s.io", "leases", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName),
			},
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
}

// LeaseOf returns the resync Lease a ManifestWork carries. It returns an error
// if the work holds no Lease manifest or the Lease cannot be decoded, or its
// holderIdentity, leaseDurationSeconds, acquireTime or renewTime is unset.
func LeaseOf(w *workv1.ManifestWork) (Lease, error) {
	for i, m := range w.Spec.Workload.Manifests {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &tm); err != nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		}
		if tm.Kind != "Lease" {
			continue
		}
		var l coordinationv1.Lease
		if err := json.Unmarshal(m.Raw, &l); err != nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		}
		s := l.Spec
		if s.HolderIdentity == nil || s.LeaseDurationSeconds == nil || s.AcquireTime == nil || s.RenewTime == nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: lease spec is incomplete", i)
		}
		return Lease{HolderIdentity: *s.HolderIdentity, DurationSeconds: *s.LeaseDurationSeconds, AcquireTime: *s.AcquireTime, RenewTime: *s.RenewTime}, nil
	}
	return Lease{}, fmt.Errorf("spec.workload.manifests: no Lease")
}
