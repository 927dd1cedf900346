//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestPrivilegedFleetSetIsNeverDelivered is issue 35's tenant escape: a
// FleetSet author asks for podSecurityLevel privileged and runs a
// privileged container with the node's / mounted. Its namespace carries no
// platform level (baseline), so it is refused at admission (where the hub's
// policies are installed) or by the hub (Degraded InvalidSpec naming
// spec.podSecurityLevel), and no member ever gets a StatefulSet of it.
func TestPrivilegedFleetSetIsNeverDelivered(t *testing.T) {
	f := theFleet
	ns := f.newNamespace(t, "escape")
	fs := f.newFleetSet(ns, "root", 2)
	fs.Spec.PodSecurityLevel = fleetv1.PodSecurityPrivileged
	spec := &fs.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	const want = `spec.podSecurityLevel: "privileged" is more permissive than "baseline"`
	if err := f.hub.Create(t.Context(), fs); err != nil {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("creating the privileged FleetSet: %v", err)
		}
		t.Logf("refused at admission: %v", err)
	} else {
		eventually(t, waitTimeout, "Degraded InvalidSpec naming spec.podSecurityLevel", func(ctx context.Context) (bool, string, error) {
			c, why, err := f.degraded(ctx, ns, "root")
			if c == nil || err != nil {
				return false, why, err
			}
			return c.Reason == fleetv1.ReasonInvalidSpec && strings.Contains(c.Message, want), c.Reason + ": " + c.Message, nil
		})
	}
	// Give a delivery, had there been one, time to reach the members.
	time.Sleep(10 * time.Second)
	for _, m := range f.members {
		var sts appsv1.StatefulSetList
		if err := m.c.List(t.Context(), &sts, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := m.c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(sts.Items)+len(pods.Items) != 0 {
			t.Errorf("%s: %d StatefulSets and %d pods of a tenant's privileged FleetSet delivered in %s", m.name, len(sts.Items), len(pods.Items), ns)
		}
	}
}
