package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// CordonOptions are the inputs of `kubectl fleetset cordon|uncordon NAME
// CLUSTER`.
type CordonOptions struct {
	*VerbOptions
	// Cluster is the ManagedCluster to cordon or uncordon.
	Cluster string
	// Yes (--yes) skips the confirmation uncordon asks for when instances
	// would be removed.
	Yes bool
}

// NewCmdCordon returns `kubectl fleetset cordon NAME CLUSTER`.
func NewCmdCordon(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CordonOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := cordonCommand(o, "cordon NAME CLUSTER [--yes]", "Put no new instance of a FleetSet on a member cluster",
		"Add CLUSTER to the FleetSet's spec.topology.cordonedClusters, kubectl cordon's contract for one FleetSet\n"+
			"and one cluster: its subsets on CLUSTER keep the instances they run and get no new ones (a scale-up\n"+
			"puts them on the other subsets, a scale-down may still shrink them), and CLUSTER is no relocation\n"+
			"target of the FleetSet. A subset of CLUSTER relocated to another cluster keeps its instances where\n"+
			"they run and does not fail back while CLUSTER is cordoned. Nothing is removed or restarted; should the\n"+
			"division change any subset's replicas now (a scale-up not yet delivered), it lists them and asks for\n"+
			"--yes. Other FleetSets are not affected; for every FleetSet at once, taint the ManagedCluster (NoSelect)\n"+
			"instead.",
		"  kubectl fleetset cordon mydb east -n db", func(ctx context.Context) error { return o.Run(ctx, true) })
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "Do not ask for confirmation.")
	return cmd
}

// NewCmdUncordon returns `kubectl fleetset uncordon NAME CLUSTER`.
func NewCmdUncordon(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CordonOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := cordonCommand(o, "uncordon NAME CLUSTER [--yes]", "Let a FleetSet put instances on a cordoned member cluster again",
		"Remove CLUSTER from the FleetSet's spec.topology.cordonedClusters: the next division gives its subsets\n"+
			"their full shares again. When that moves replicas back (instances created on CLUSTER, removed from\n"+
			"other subsets), it lists them and asks for --yes (or the FleetSet's name on a terminal).",
		"  kubectl fleetset uncordon mydb east -n db --yes", func(ctx context.Context) error { return o.Run(ctx, false) })
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "Do not ask for confirmation.")
	return cmd
}

// cordonCommand is verbCommand for NAME CLUSTER.
func cordonCommand(o *CordonOptions, use, short, long, example string, run func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Long: long, Example: example,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args[:1]); err != nil {
				return err
			}
			o.Cluster = args[1]
			return run(cmd.Context())
		},
	}
}

// Run cordons (cordon true) or uncordons Cluster for the FleetSet: it
// checks that the ManagedCluster exists, shows what the division does
// (plan.For with and without the cordon), asks for confirmation when
// uncordoning removes instances, and patches spec.topology.cordonedClusters
// with an optimistic lock. A FleetSet already so is left as it is.
func (o *CordonOptions) Run(ctx context.Context, cordon bool) error {
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	if err := o.Hub.Get(ctx, types.NamespacedName{Name: o.Cluster}, &clusterv1.ManagedCluster{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("managedcluster %q not found: nothing changed", o.Cluster)
		}
		return fmt.Errorf("getting managedcluster %q: %w", o.Cluster, err)
	}
	verb := map[bool]string{true: "cordoned", false: "uncordoned"}[cordon]
	if fs.Spec.Topology.Cordoned(o.Cluster) == cordon {
		fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s: cluster %s already %s: nothing changed\n", o.Name, o.Cluster, verb)
		return nil
	}
	next := fs.DeepCopy()
	if cordon {
		next.Spec.Topology.CordonedClusters = append(next.Spec.Topology.CordonedClusters, o.Cluster)
	} else {
		next.Spec.Topology.CordonedClusters = slices.DeleteFunc(next.Spec.Topology.CordonedClusters, func(c string) bool { return c == o.Cluster })
	}
	moves := divisionMoves(fs, next)
	if cordon {
		fmt.Fprintf(o.Out, "Cluster %s hosts %s of fleetset %s/%s: they keep their instances and get no new ones; it is no relocation target.\n",
			o.Cluster, hostedOn(fs, o.Cluster), o.Namespace, o.Name)
		if away := relocatedFrom(fs, o.Cluster); away != "" {
			fmt.Fprintf(o.Out, "Relocated away from %s: %s; they keep their instances where they run and do not fail back while %s is cordoned.\n", o.Cluster, away, o.Cluster)
		}
		if len(moves) > 0 {
			fmt.Fprintf(o.Out, "Cordoning %s changes the division now: %s.\n", o.Cluster, strings.Join(moves, "; "))
			if err := o.confirm(o.Yes, fmt.Sprintf("cordon %s for fleetset %s", o.Cluster, o.Name), o.Name); err != nil {
				return err
			}
		}
	} else {
		if len(moves) == 0 {
			fmt.Fprintf(o.Out, "Uncordoning %s changes no subset's replicas now; later divisions may put new instances there.\n", o.Cluster)
		} else {
			fmt.Fprintf(o.Out, "Uncordoning %s gives its subsets their full shares again: %s.\n", o.Cluster, strings.Join(moves, "; "))
			if err := o.confirm(o.Yes, fmt.Sprintf("uncordon %s for fleetset %s", o.Cluster, o.Name), o.Name); err != nil {
				return err
			}
		}
	}
	if err := o.Hub.Patch(ctx, next, client.MergeFromWithOptions(fs, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching fleetset %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s %s cluster %s (spec.topology.cordonedClusters: %s)\n", o.Name, verb, o.Cluster, joinOrNone(next.Spec.Topology.CordonedClusters))
	if cordon {
		fmt.Fprintf(o.Out, "Watch: %s (REPLICAS of the subsets on %s do not grow)\nUndo: kubectl fleetset uncordon %s %s -n %s\n", o.watchHint(), o.Cluster, o.Name, o.Cluster, o.Namespace)
		return nil
	}
	fmt.Fprintf(o.Out, "Watch: %s\n", o.watchHint())
	return nil
}

// hostedOn describes fs's subsets that run on cluster now.
func hostedOn(fs *fleetv1.FleetSet, cluster string) string {
	var out []string
	for _, ss := range fs.Status.Subsets {
		if ss.Cluster == cluster {
			out = append(out, fmt.Sprintf("subset %s (%d instances)", ss.Name, ss.Replicas))
		}
	}
	if len(out) == 0 {
		return "no subset"
	}
	return strings.Join(out, ", ")
}

// relocatedFrom describes fs's subsets whose spec cluster is cluster and
// that run elsewhere now; "" when none does.
func relocatedFrom(fs *fleetv1.FleetSet, cluster string) string {
	home := map[string]string{}
	for _, s := range fs.Spec.Topology.Subsets {
		home[s.Name] = s.Cluster
	}
	var out []string
	for _, ss := range fs.Status.Subsets {
		if home[ss.Name] == cluster && ss.Cluster != "" && ss.Cluster != cluster {
			out = append(out, fmt.Sprintf("subset %s (%d instances on %s)", ss.Name, ss.Replicas, ss.Cluster))
		}
	}
	return strings.Join(out, ", ")
}

// divisionMoves returns, per subset whose replicas plan.For changes from
// fs to next, "subset: a → b (…)"; nil when neither can be divided.
func divisionMoves(fs, next *fleetv1.FleetSet) []string {
	prev := previousStarts(fs)
	before, _, err1 := plan.For(fs, prev)
	after, _, err2 := plan.For(next, prev)
	if err1 != nil || err2 != nil {
		return nil
	}
	was := map[string]int32{}
	for _, s := range before {
		was[s.Name] = s.Replicas
	}
	var out []string
	for _, s := range after {
		if b := was[s.Name]; b != s.Replicas {
			what := "created"
			if s.Replicas < b {
				what = "removed"
			}
			out = append(out, fmt.Sprintf("subset %s on %s %d → %d (%d instances %s)", s.Name, s.Cluster, b, s.Replicas, max(b, s.Replicas)-min(b, s.Replicas), what))
		}
	}
	return out
}

// previousStarts returns the ordinal starts status records, by subset.
func previousStarts(fs *fleetv1.FleetSet) map[string]int32 {
	out := map[string]int32{}
	for _, ss := range fs.Status.Subsets {
		out[ss.Name] = ss.OrdinalStart
	}
	return out
}

// joinOrNone joins list, or says "none".
func joinOrNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
