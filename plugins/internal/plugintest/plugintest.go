// Package plugintest builds a real scheduler framework (the runtime that
// kube-scheduler runs plugins in) holding the fleetset plugins over
// in-memory SubsetPlacements and a snapshot of pods and
// nodes, for unit tests.
package plugintest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Resolver returns a ordinaltarget.Resolver reading the given SubsetPlacements
// from memory.
func Resolver(t *testing.T, placements ...*fleetv1.SubsetPlacement) *ordinaltarget.Resolver {
	t.Helper()
	return ordinaltarget.NewResolver(Client(t, placements...), nil)
}

// Client returns an in-memory client holding the given SubsetPlacements.
// Each placement is replaced in placements by the stored copy (with a UID).
func Client(t *testing.T, placements ...*fleetv1.SubsetPlacement) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for i, sp := range placements {
		sp = sp.DeepCopy()
		sp.UID = types.UID("uid-" + sp.Name)
		sp.ResourceVersion = ""
		placements[i] = sp
		objs = append(objs, sp)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// Framework returns a framework with PrioritySort, DefaultBinder and the
// given plugin registrations, over a snapshot of pods and nodes.
func Framework(t *testing.T, pods []*v1.Pod, nodes []*v1.Node, fns ...tf.RegisterPluginFunc) framework.Framework {
	t.Helper()
	metrics.Register() // the framework instruments plugins; registration is once-only
	fns = append([]tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
	}, fns...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fw, err := tf.NewFramework(ctx, fns, "fleetset-scheduler",
		fwkruntime.WithSnapshotSharedLister(cache.NewSnapshot(pods, nodes)))
	if err != nil {
		t.Fatal(err)
	}
	return fw
}

// Factory adapts an already built plugin to a registry factory.
func Factory(p framework.Plugin) fwkruntime.PluginFactory {
	return func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return p, nil }
}
