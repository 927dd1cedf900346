// Package plugins lists the fleetset scheduler plugins for kube-scheduler's
// out-of-tree registry.
package plugins

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Register the plugins' args in kube-scheduler's config scheme.
	_ "github.com/fleetset/fleetset/plugins/apis/config/scheme"
	"github.com/fleetset/fleetset/plugins/ordinalspread"
	"github.com/fleetset/fleetset/plugins/subsetplacement"
)

// Registry returns the fleetset plugins by name, for
// scheduler.WithFrameworkOutOfTreeRegistry.
func Registry() fwkruntime.Registry {
	return fwkruntime.Registry{
		subsetplacement.Name: subsetplacement.New,
		ordinalspread.Name:   ordinalspread.New,
	}
}

// Options returns the app options that register the fleetset plugins with
// app.NewSchedulerCommand.
func Options() []app.Option {
	var opts []app.Option
	for name, factory := range Registry() {
		opts = append(opts, app.WithPlugin(name, factory))
	}
	return opts
}
