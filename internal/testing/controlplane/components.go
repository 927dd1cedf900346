package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/controller/statefulset"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// SchedulerConfigFile is the shipped KubeSchedulerConfiguration.
func SchedulerConfigFile() string {
	return filepath.Join(RepoRoot(), "manifests", "scheduler", "config.yaml")
}

// DefaultProfileConfigFile is a KubeSchedulerConfiguration holding only
// kube-scheduler's default profile.
func DefaultProfileConfigFile() string {
	return filepath.Join(RepoRoot(), "internal", "testing", "controlplane", "testdata", "default-scheduler.yaml")
}

// StartScheduler runs kube-scheduler in-process with the out-of-tree plugins
// of registry (the caller's: for fleetset, plugins.Registry()) and the
// profiles of the given KubeSchedulerConfiguration files (the shipped one
// when none is given). It returns once the scheduler's informers synced; the
// scheduler stops with ctx. Errors: unreadable config or scheduler setup.
func StartScheduler(ctx context.Context, cfg *rest.Config, registry fwkruntime.Registry, configFiles ...string) error {
	if len(configFiles) == 0 {
		configFiles = []string{SchedulerConfigFile()}
	}
	logger := klog.FromContext(ctx)
	var profiles []schedconfig.KubeSchedulerProfile
	for _, f := range configFiles {
		kc, err := options.LoadConfigFromFile(logger, f)
		if err != nil {
			return fmt.Errorf("loading %s: %w", f, err)
		}
		profiles = append(profiles, kc.Profiles...)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 5000
	cs := kubernetes.NewForConfigOrDie(cfg)
	informerFactory := scheduler.NewInformerFactory(cs, 0)
	dynInformerFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, v1.NamespaceAll, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	sched, err := scheduler.New(ctx, cs, informerFactory, dynInformerFactory,
		profile.NewRecorderFactory(broadcaster),
		scheduler.WithKubeConfig(cfg),
		scheduler.WithProfiles(profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(2),
	)
	if err != nil {
		return fmt.Errorf("creating scheduler: %w", err)
	}
	broadcaster.StartRecordingToSink(ctx.Done())
	informerFactory.Start(ctx.Done())
	dynInformerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	dynInformerFactory.WaitForCacheSync(ctx.Done())
	go sched.Run(ctx)
	return nil
}

// StartStatefulSetController runs the real StatefulSet controller
// (k8s.io/kubernetes/pkg/controller/statefulset) in-process, with a stand-in
// for the kubelet's part in pod deletion: pods marked for deletion are removed
// at once, as a kubelet would after their containers stop. It stops with ctx.
func StartStatefulSetController(ctx context.Context, cfg *rest.Config) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 1000
	cs := kubernetes.NewForConfigOrDie(cfg)
	f := informers.NewSharedInformerFactory(cs, 0)
	ssc := statefulset.NewStatefulSetController(ctx,
		f.Core().V1().Pods(), f.Apps().V1().StatefulSets(),
		f.Core().V1().PersistentVolumeClaims(), f.Apps().V1().ControllerRevisions(), cs)
	podInformer := f.Core().V1().Pods().Informer()
	zero := int64(0)
	finish := func(obj interface{}) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.DeletionTimestamp == nil {
			return
		}
		_ = cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	_, _ = podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    finish,
		UpdateFunc: func(_, obj interface{}) { finish(obj) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	go ssc.Run(ctx, 5)
}
