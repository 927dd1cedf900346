// Package cmd holds the commands of kubectl-fleetset, the kubectl plugin of
// fleetset: `kubectl fleetset status NAME` shows where a FleetSet's
// instances are meant to run and where they run, from the hub and,
// optionally, the member clusters; `plan -f` shows what a change would do;
// `pause`, `resume`, `restart`, `switchover`, `failback`, `cordon`,
// `uncordon` and `out-of-service` change a FleetSet's or a cluster's state
// on the hub; `report` writes an archive for a bug report. The commands follow kubectl's own
// (k8s.io/kubectl/pkg/cmd): an Options struct with Complete, Validate and
// Run, the standard kubectl client flags from cli-runtime's ConfigFlags, and
// output through IOStreams.
package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdFleetSet returns the root command, `kubectl fleetset`, with the
// standard kubectl client flags (--kubeconfig, --context, -n, ...) as
// persistent flags and its subcommands. Output goes to streams; errors are
// returned by Execute, not printed.
func NewCmdFleetSet(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-fleetset",
		Short: "Inspect and operate fleetset FleetSets",
		Long: "kubectl fleetset inspects FleetSets (fleetset.io/v1alpha1) on an Open Cluster Management hub:\n" +
			"where each subset and instance of a FleetSet is meant to run, and where it runs (status, status --watch);\n" +
			"what a change would do before it is applied (plan); pause, resume and restart its rollout, switch its\n" +
			"leader over, fail it back, cordon a member cluster for it, take a member cluster out of service, and\n" +
			"collect its state for a bug report (report).",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fleetset"},
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl completes plugins through kubectl_complete-<plugin>, not
		// through a completion command of the plugin.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(NewCmdStatus(flags, streams), NewCmdPlan(flags, streams), NewCmdPause(flags, streams), NewCmdResume(flags, streams),
		NewCmdRestart(flags, streams), NewCmdFailback(flags, streams), NewCmdSwitchover(flags, streams),
		NewCmdCordon(flags, streams), NewCmdUncordon(flags, streams), NewCmdOutOfService(flags, streams), NewCmdReport(flags, streams))
	return root
}
