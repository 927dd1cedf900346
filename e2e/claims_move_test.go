//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestMoveKeepsClaimsWhenScaledDelete moves a subset whose FleetSet asks
// its StatefulSets to delete claims on scale-down and on deletion
// (persistentVolumeClaimRetentionPolicy Delete/Delete) to a spare member:
// the subset is drained at replicas 0 and its StatefulSet removed in the
// cluster it leaves, and every claim there must stay, with its UID, since
// it is the only copy of the instance's data (docs/failover.md, "Claims on
// the way out"). The moved instances run in the new cluster under the same
// names.
func TestMoveKeepsClaimsWhenScaledDelete(t *testing.T) {
	f := theFleet
	if len(f.spare) == 0 {
		t.Skip("no spare member to move a subset to (FLEETSET_E2E_SPARE_MEMBERS)")
	}
	ns := f.newNamespace(t, "e2e-claims")
	fs := f.newFleetSet(ns, "db", 4)
	fs.Spec.VolumeClaimTemplates = dataClaim("1Gi")
	fs.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	from, to := f.members[0], f.spare[0]
	f.createFleetSet(t, fs)
	var moving []string
	for _, in := range f.waitReady(t, ns, "db", 4) {
		if in.cluster == from.name {
			moving = append(moving, in.pod)
		}
	}
	claims := map[string]types.UID{}
	eventually(t, 2*time.Minute, "the claims of "+from.name+"'s instances Bound", func(ctx context.Context) (bool, string, error) {
		for _, pod := range moving {
			var pvc corev1.PersistentVolumeClaim
			if err := from.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + pod}, &pvc); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return false, fmt.Sprintf("%s %s", pvc.Name, pvc.Status.Phase), nil
			}
			claims[pvc.Name] = pvc.UID
		}
		return true, "", nil
	})

	start := time.Now()
	f.updateFleetSet(t, ns, "db", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Cluster = to.name })
	eventually(t, 5*time.Minute, "the subset moved: its instances Running in "+to.name+", no pod or StatefulSet of it left in "+from.name, func(ctx context.Context) (bool, string, error) {
		for _, pod := range moving {
			var p corev1.Pod
			if err := to.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &p); err != nil || p.Status.Phase != corev1.PodRunning {
				return false, fmt.Sprintf("%s not Running in %s (%v)", pod, to.name, client.IgnoreNotFound(err)), client.IgnoreNotFound(err)
			}
		}
		var pods corev1.PodList
		var sets appsv1.StatefulSetList
		if err := from.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{fleetv1.LabelSet: "db"}); err != nil {
			return false, "", err
		}
		if err := from.c.List(ctx, &sets, client.InNamespace(ns)); err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0 && len(sets.Items) == 0, fmt.Sprintf("%d pods, %d StatefulSets left in %s", len(pods.Items), len(sets.Items), from.name), nil
	})
	moved := time.Since(start)
	time.Sleep(5 * time.Second) // a late claim deletion would show by now
	kept := 0
	for name, uid := range claims {
		var pvc corev1.PersistentVolumeClaim
		switch err := from.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pvc); {
		case err != nil:
			t.Errorf("claim %s in %s after the move: %v, want kept", name, from.name, err)
		case pvc.UID != uid || pvc.DeletionTimestamp != nil:
			t.Errorf("claim %s in %s after the move: UID %s (was %s), being deleted %v: want the same claim, kept", name, from.name, pvc.UID, uid, pvc.DeletionTimestamp != nil)
		default:
			kept++
		}
	}
	t.Logf("RESULT subset moved %s → %s with whenScaled/whenDeleted Delete in %v; %d of %d claims in %s kept", from.name, to.name, moved.Round(time.Second), kept, len(claims), from.name)
}
