// Command fleetset-scheduler is kube-scheduler with the fleetset plugins
// (SubsetPlacement, OrdinalSpread) registered out of tree, as
// sigs.k8s.io/scheduler-plugins builds its scheduler. It takes every
// kube-scheduler flag; its profile comes from --config (see
// manifests/scheduler/config.yaml). It also owns fleetset's member component
// (package member: heartbeat to the hub, peer checks, fencing, and the
// claims, roles and updater controllers), configured by the --member-*
// flags and started by the SubsetPlacement plugin once the scheduler's
// informers exist.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/fleetset/fleetset/member"
	"github.com/fleetset/fleetset/plugins"
)

func main() {
	cfg := member.DefaultConfig()
	component := member.New(&cfg)
	command := app.NewSchedulerCommand(plugins.Options(component)...)
	command.Use = "fleetset-scheduler"
	// The member flags are parsed with kube-scheduler's, and printed after
	// them in --help and usage.
	mfs := pflag.NewFlagSet("member", pflag.ContinueOnError)
	cfg.AddFlags(mfs)
	command.Flags().AddFlagSet(mfs)
	help, usage := command.HelpFunc(), command.UsageFunc()
	command.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		fmt.Fprintf(c.OutOrStdout(), "\nMember flags (fleetset):\n\n%s", mfs.FlagUsages())
	})
	command.SetUsageFunc(func(c *cobra.Command) error {
		err := usage(c)
		fmt.Fprintf(c.OutOrStderr(), "\nMember flags (fleetset):\n\n%s", mfs.FlagUsages())
		return err
	})
	os.Exit(cli.Run(command))
}
