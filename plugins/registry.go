// Package plugins lists the fleetset scheduler plugins for kube-scheduler's
// out-of-tree registry.
package plugins

import (
	"context"

	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetset/fleetset/member"
	// Register the plugins' args in kube-scheduler's config scheme.
	_ "github.com/fleetset/fleetset/plugins/apis/config/scheme"
	"github.com/fleetset/fleetset/plugins/ordinalspread"
	"github.com/fleetset/fleetset/plugins/subsetplacement"
)

// Registry returns the fleetset plugins by name, for
// scheduler.WithFrameworkOutOfTreeRegistry. SubsetPlacement starts m over
// the scheduler's informers and takes its Gate; m nil: no member component,
// nothing is fenced.
func Registry(m *member.Component) fwkruntime.Registry {
	var gates subsetplacement.GateFunc
	if m != nil {
		gates = func(ctx context.Context, h framework.Handle, placements client.Reader, writer client.Writer) (member.Gate, error) {
			return m.Start(ctx, member.Host{Pods: h.SharedInformerFactory().Core().V1().Pods(), Client: h.ClientSet(), Placements: placements, Writer: writer,
				RestConfig: h.KubeConfig()})
		}
	}
	return fwkruntime.Registry{
		subsetplacement.Name: subsetplacement.Factory(gates),
		ordinalspread.Name:   ordinalspread.New,
	}
}

// Options returns the app options that register the fleetset plugins, with
// the member component m, with app.NewSchedulerCommand.
func Options(m *member.Component) []app.Option {
	var opts []app.Option
	for name, factory := range Registry(m) {
		opts = append(opts, app.WithPlugin(name, factory))
	}
	return opts
}
