package manifestwork

import (
	"encoding/json"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
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

// ResyncWork renders ManifestWork v1alpha1.ResyncWorkName for cluster: the
// namespace v1alpha1.ResyncLeaseNamespace (orphaned on deletion), the resync
// Lease holding l, and the peers ConfigMap: every other cluster's peer
// URLs (v1alpha1.PeersAllKey, each cluster's sorted) and the first of each
// (v1alpha1.PeersKey, for members before PeersAllKey). All are
// force-applied, so each renewTime reaches the member; the same peers give
// the same ConfigMap.
func ResyncWork(cluster string, l Lease, peers map[string][]string) (*workv1.ManifestWork, error) {
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
	first, all := map[string]string{}, map[string][]string{}
	for c, us := range peers {
		us = slices.Compact(slices.Sorted(slices.Values(us)))
		if c != cluster && len(us) > 0 {
			first[c], all[c] = us[0], us
		}
	}
	firstJSON, err := json.Marshal(first) // sorted keys: the same peers give the same work
	if err != nil {
		return nil, err
	}
	allJSON, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.PeersConfigMapName, Namespace: fleetv1.ResyncLeaseNamespace},
		Data:       map[string]string{fleetv1.PeersKey: string(firstJSON), fleetv1.PeersAllKey: string(allJSON)},
	}
	manifests, err := envelope.Encode([]runtime.Object{ns, lease, cm})
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
				applyConfig("", "configmaps", fleetv1.ResyncLeaseNamespace, fleetv1.PeersConfigMapName),
			},
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
}

// LeaseOf returns the resync Lease a ManifestWork carries. It returns an
// error if the work holds no Lease, or one that does not decode or lacks
// holderIdentity, leaseDurationSeconds, acquireTime or renewTime.
func LeaseOf(w *workv1.ManifestWork) (Lease, error) {
	var l coordinationv1.Lease
	i, err := envelope.Find(w, envelope.Key{Kind: "Lease"}, &l)
	if err != nil {
		return Lease{}, err
	}
	if i < 0 {
		return Lease{}, fmt.Errorf("spec.workload.manifests: no Lease")
	}
	s := l.Spec
	if s.HolderIdentity == nil || s.LeaseDurationSeconds == nil || s.AcquireTime == nil || s.RenewTime == nil {
		return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: lease spec is incomplete", i)
	}
	return Lease{HolderIdentity: *s.HolderIdentity, DurationSeconds: *s.LeaseDurationSeconds, AcquireTime: *s.AcquireTime, RenewTime: *s.RenewTime}, nil
}
