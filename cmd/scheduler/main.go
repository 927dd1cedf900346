// Command fleetset-scheduler is kube-scheduler with the fleetset plugins
// (SubsetPlacement, OrdinalSpread) registered out of tree, as
// sigs.k8s.io/scheduler-plugins builds its scheduler. It takes every
// kube-scheduler flag; its profile comes from --config (see
// manifests/scheduler/config.yaml).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/fleetset/fleetset/plugins"
)

func main() {
	command := app.NewSchedulerCommand(plugins.Options()...)
	command.Use = "fleetset-scheduler"
	os.Exit(cli.Run(command))
}
