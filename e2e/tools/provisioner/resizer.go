package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	// AnnResizer is the annotation by which kube-controller-manager's
	// expand controller names a claim's external resizer
	// (k8s.io/kubernetes/pkg/volume/util.SetClaimResizer). For a hostPath
	// PV it names none: it finds no expandable in-tree plugin, records an
	// ExternalExpanding event and leaves the claim to an external
	// controller. This resizer sets it to its provisioner name, as the CSI
	// external-resizer's claims carry their driver's.
	AnnResizer = "volume.kubernetes.io/storage-resizer"
	// annProvisionedBy is the PV annotation of the provisioning library.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
)

// resizer expands the PVs of this provisioner when their claims ask for
// more, the way an external resizer does for a volume that needs no
// file-system step on the node (kcm's util.MarkControllerReisizeInProgress,
// then util.UpdatePVSize and util.MarkResizeFinished):
//
//  1. claim status: Resizing condition, allocatedResources = the request,
//     allocatedResourceStatuses[storage] = ControllerResizeInProgress, and
//     the storage-resizer annotation;
//  2. PV spec.capacity = the request;
//  3. claim status: capacity = the request, the resize conditions and the
//     storage entry of allocatedResourceStatuses removed.
//
// Each step is written with the object's resourceVersion; a conflict
// requeues the claim and the next pass goes on from where it stopped.
type resizer struct {
	name   string
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	queue  workqueue.TypedRateLimitingInterface[string]
	synced []cache.InformerSynced
}

func newResizer(name string, client kubernetes.Interface, claims coreinformers.PersistentVolumeClaimInformer, pvs coreinformers.PersistentVolumeInformer) (*resizer, error) {
	r := &resizer{
		name:   name,
		client: client,
		claims: claims.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resizer"}),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, pvs.Informer().HasSynced},
	}
	enqueue := func(obj any) {
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok || !wantsResize(pvc) {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(pvc); err == nil {
			r.queue.Add(key)
		}
	}
	_, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return r, err
}

// wantsResize: a bound claim asks for more than it has, or a resize of it
// was left in progress.
func wantsResize(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return false
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	return want.Cmp(have) > 0 || pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimControllerResizeInProgress
}

func (r *resizer) run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer r.queue.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSync("resizer", ctx.Done(), r.synced...) {
		return
	}
	logger.Info("Started resizer", "provisioner", r.name)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for r.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func (r *resizer) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			klog.FromContext(ctx).V(2).Info("Conflict, retrying", "PVC", key, "err", err)
		} else {
			klog.FromContext(ctx).Error(err, "Resize failed, retrying", "PVC", key)
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

func (r *resizer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	// The informer's copy only says whether to look: the writes of the
	// previous pass may not have reached it yet, so the claim and the PV
	// are read from the apiserver.
	if pvc, err := r.claims.PersistentVolumeClaims(ns).Get(name); err != nil || !wantsResize(pvc) {
		return nil
	}
	pvc, err := r.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !wantsResize(pvc) {
		return nil
	}
	pv, err := r.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != r.name || pv.Spec.HostPath == nil {
		return nil // not ours
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return fmt.Errorf("PV %s is not bound to claim %s (uid %s)", pv.Name, key, pvc.UID)
	}
	logger := klog.FromContext(ctx).WithValues("PVC", klog.KObj(pvc), "PV", pv.Name)

	// The request; never less than the claim has (a resize left in
	// progress whose request went back down only gets finished).
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if have := pvc.Status.Capacity[corev1.ResourceStorage]; want.Cmp(have) < 0 {
		want = have
	}

	// 1. Resize in progress.
	if pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInProgress ||
		!quantityIs(pvc.Status.AllocatedResources, want) || pvc.Annotations[AnnResizer] != r.name {
		c := pvc.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[AnnResizer] = r.name
		c.Status.Conditions = withoutResizeConditions(c.Status.Conditions)
		c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{
			Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		})
		if c.Status.AllocatedResources == nil {
			c.Status.AllocatedResources = corev1.ResourceList{}
		}
		c.Status.AllocatedResources[corev1.ResourceStorage] = want
		if c.Status.AllocatedResourceStatuses == nil {
			c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
		}
		c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimControllerResizeInProgress
		if pvc, err = r.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("marking the resize in progress: %w", err)
		}
		logger.Info("Resizing", "from", pvc.Status.Capacity.Storage().String(), "to", want.String())
	}

	// 2. The volume: there is nothing to grow on the node, only the PV.
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		v := pv.DeepCopy()
		v.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := r.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("raising the PV's capacity: %w", err)
		}
	}

	// 3. Done: no file-system resize on the node is needed.
	c := pvc.DeepCopy()
	if c.Status.Capacity == nil {
		c.Status.Capacity = corev1.ResourceList{}
	}
	c.Status.Capacity[corev1.ResourceStorage] = want
	c.Status.Conditions = withoutResizeConditions(c.Status.Conditions)
	delete(c.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(c.Status.AllocatedResourceStatuses) == 0 {
		c.Status.AllocatedResourceStatuses = nil
	}
	if _, err := r.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("marking the resize finished: %w", err)
	}
	logger.Info("Resized", "capacity", want.String())
	return nil
}

func quantityIs(l corev1.ResourceList, q resource.Quantity) bool {
	have, ok := l[corev1.ResourceStorage]
	return ok && have.Cmp(q) == 0
}

// withoutResizeConditions drops the conditions a resize sets (those kcm's
// util.MergeResizeConditionOnPVC manages, and the resize error conditions).
func withoutResizeConditions(conds []corev1.PersistentVolumeClaimCondition) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	for _, c := range conds {
		switch c.Type {
		case corev1.PersistentVolumeClaimResizing, corev1.PersistentVolumeClaimFileSystemResizePending,
			corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError:
			continue
		}
		out = append(out, c)
	}
	return out
}
