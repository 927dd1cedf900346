package main

import (
	"context"
	"fmt"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// StorageClass parameters.
const (
	// ParamBasePath is the folder on the node under which each volume gets
	// its own directory, <basePath>/<pv-name>. Default DefaultBasePath.
	ParamBasePath = "basePath"
	// ParamPin says what a volume is pinned to: PinZone (default) gives the
	// PV a node affinity to the selected node's topology.kubernetes.io/zone,
	// as zonal network storage would have; PinNode adds the node's
	// kubernetes.io/hostname, for nodes where the hostPath is real and so
	// node-local data (kind).
	ParamPin = "pin"

	PinZone = "zone"
	PinNode = "node"

	DefaultBasePath = "/var/lib/fleetset-local"

	// AnnSelectedNode is the node the volume was provisioned for (the
	// claim's volume.kubernetes.io/selected-node), kept for inspection.
	AnnSelectedNode = "fleetset.io/provisioned-for-node"
)

// localProvisioner provisions hostPath PersistentVolumes pinned to the zone
// (or the node) the scheduler selected. There is no storage to create or
// delete: the kubelet makes the directory (DirectoryOrCreate) when a pod
// mounts it, and kwok nodes mount nothing.
type localProvisioner struct {
	client kubernetes.Interface
}

var _ controller.Provisioner = (*localProvisioner)(nil)

// Provision implements controller.Provisioner.
func (p *localProvisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	if opts.SelectedNodeName == "" {
		return nil, controller.ProvisioningFinished, fmt.Errorf("no selected node: StorageClass %s must have volumeBindingMode WaitForFirstConsumer", opts.StorageClass.Name)
	}
	node, err := p.client.CoreV1().Nodes().Get(ctx, opts.SelectedNodeName, metav1.GetOptions{})
	if err != nil {
		// The node may be gone: let the scheduler pick another one.
		return nil, controller.ProvisioningReschedule, fmt.Errorf("reading the selected node %s: %w", opts.SelectedNodeName, err)
	}
	pv, err := volumeFor(opts, node)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	klog.FromContext(ctx).Info("Provisioned", "PVC", klog.KObj(opts.PVC), "PV", pv.Name, "node", node.Name,
		"zone", node.Labels[corev1.LabelTopologyZone], "capacity", pv.Spec.Capacity.Storage().String())
	return pv, controller.ProvisioningFinished, nil
}

// Delete implements controller.Provisioner. The directory, if a kubelet made
// one, stays on the node: this process does not run there (on kind it goes
// with the node container at kind-down). The library then deletes the PV.
func (p *localProvisioner) Delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	klog.FromContext(ctx).Info("Deleting", "PV", pv.Name)
	return nil
}

// volumeFor builds the PersistentVolume for a claim on the selected node.
func volumeFor(opts controller.ProvisionOptions, node *corev1.Node) (*corev1.PersistentVolume, error) {
	basePath, pin := DefaultBasePath, PinZone
	for k, v := range opts.StorageClass.Parameters {
		switch k {
		case ParamBasePath:
			if !path.IsAbs(v) {
				return nil, fmt.Errorf("StorageClass %s: parameter %s=%q is not an absolute path", opts.StorageClass.Name, k, v)
			}
			basePath = path.Clean(v)
		case ParamPin:
			if v != PinZone && v != PinNode {
				return nil, fmt.Errorf("StorageClass %s: parameter %s=%q: want %q or %q", opts.StorageClass.Name, k, v, PinZone, PinNode)
			}
			pin = v
		default:
			return nil, fmt.Errorf("StorageClass %s: unknown parameter %q", opts.StorageClass.Name, k)
		}
	}
	size, ok := opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil, fmt.Errorf("claim %s/%s requests no storage", opts.PVC.Namespace, opts.PVC.Name)
	}

	zone := node.Labels[corev1.LabelTopologyZone]
	host := node.Labels[corev1.LabelHostname]
	var match []corev1.NodeSelectorRequirement
	if zone != "" {
		match = append(match, corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}})
	}
	// A node without a zone can only be pinned to itself.
	if pin == PinNode || zone == "" {
		if host == "" {
			return nil, fmt.Errorf("node %s has neither a %s label to pin the volume to nor a %s label", node.Name, corev1.LabelTopologyZone, corev1.LabelHostname)
		}
		match = append(match, corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{host}})
	}
	sort.Slice(match, func(i, j int) bool { return match[i].Key < match[j].Key })

	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        opts.PVName,
			Annotations: map[string]string{AnnSelectedNode: node.Name},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size.String())},
			AccessModes:                   opts.PVC.Spec.AccessModes,
			VolumeMode:                    opts.PVC.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: reclaim,
			MountOptions:                  opts.StorageClass.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{
					Path: path.Join(basePath, opts.PVName),
					Type: new(corev1.HostPathDirectoryOrCreate),
				},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: match}},
			}},
		},
	}
	if zone != "" {
		pv.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	}
	return pv, nil
}
