package main

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func TestVolumeFor(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-db-0"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
	}
	zoned := node(map[string]string{corev1.LabelTopologyZone: "zone-b", corev1.LabelHostname: "host-1"})
	zone := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}
	host := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"host-1"}}
	retain := corev1.PersistentVolumeReclaimRetain
	for _, c := range []struct {
		name     string
		params   map[string]string
		reclaim  *corev1.PersistentVolumeReclaimPolicy
		node     *corev1.Node
		want     []corev1.NodeSelectorRequirement
		path     string
		policy   corev1.PersistentVolumeReclaimPolicy
		errorHas string
	}{
		{name: "zone by default", node: zoned, want: []corev1.NodeSelectorRequirement{zone}, path: "/var/lib/fleetset-local/pvc-1", policy: corev1.PersistentVolumeReclaimDelete},
		{name: "pin node", params: map[string]string{"pin": "node", "basePath": "/data/"}, reclaim: &retain, node: zoned,
			want: []corev1.NodeSelectorRequirement{host, zone}, path: "/data/pvc-1", policy: retain},
		{name: "no zone: the node", node: node(map[string]string{corev1.LabelHostname: "host-1"}), want: []corev1.NodeSelectorRequirement{host},
			path: "/var/lib/fleetset-local/pvc-1", policy: corev1.PersistentVolumeReclaimDelete},
		{name: "no zone, no hostname", node: node(nil), errorHas: "neither"},
		{name: "bad pin", params: map[string]string{"pin": "rack"}, node: zoned, errorHas: "pin"},
		{name: "relative base path", params: map[string]string{"basePath": "data"}, node: zoned, errorHas: "absolute"},
		{name: "unknown parameter", params: map[string]string{"size": "1"}, node: zoned, errorHas: "unknown parameter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fleetset-local"}, Provisioner: DefaultName,
				Parameters: c.params, ReclaimPolicy: c.reclaim}
			pv, err := volumeFor(controller.ProvisionOptions{StorageClass: sc, PVName: "pvc-1", PVC: claim, SelectedNodeName: "n1"}, c.node)
			if c.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errorHas) {
					t.Fatalf("error %v, want one with %q", err, c.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pv.Spec.NodeAffinity.Required.NodeSelectorTerms; len(got) != 1 || !reflect.DeepEqual(got[0].MatchExpressions, c.want) {
				t.Errorf("node affinity %+v, want one term %+v", got, c.want)
			}
			if hp := pv.Spec.HostPath; hp == nil || hp.Path != c.path || hp.Type == nil || *hp.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("hostPath %+v, want %s DirectoryOrCreate", hp, c.path)
			}
			if q := pv.Spec.Capacity[corev1.ResourceStorage]; q.String() != "1Gi" {
				t.Errorf("capacity %s, want 1Gi", q.String())
			}
			if pv.Spec.PersistentVolumeReclaimPolicy != c.policy {
				t.Errorf("reclaim policy %s, want %s", pv.Spec.PersistentVolumeReclaimPolicy, c.policy)
			}
			if pv.Annotations[AnnSelectedNode] != "n1" {
				t.Errorf("annotations %v", pv.Annotations)
			}
		})
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, a := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "example.com:0"} {
		if ln, err := listenLoopback(a); err == nil {
			ln.Close()
			t.Errorf("listenLoopback(%q) listened", a)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		ln, err := listenLoopback(a)
		if err != nil {
			if a == "[::1]:0" {
				continue // no IPv6 loopback here
			}
			t.Errorf("listenLoopback(%q): %v", a, err)
			continue
		}
		ln.Close()
	}
}
