package cmd

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// OutOfServiceOptions are the inputs of `kubectl fleetset out-of-service
// CLUSTER`.
type OutOfServiceOptions struct {
	*VerbOptions
	// Yes (--yes) skips the confirmation prompt.
	Yes bool
	// Remove (--remove) removes the taint instead.
	Remove bool
}

// NewCmdOutOfService returns `kubectl fleetset out-of-service CLUSTER`: it
// taints the ManagedCluster fleetset.io/out-of-service, after a prompt.
func NewCmdOutOfService(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &OutOfServiceOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := verbCommand(o.VerbOptions, "out-of-service CLUSTER [--yes] [--remove]",
		"Confirm that a member cluster runs none of its FleetSets' pods any more",
		"Taint the ManagedCluster fleetset.io/out-of-service (effect NoSelect): the operator's confirmation that\n"+
			"the cluster runs none of its pods any more (powered off, or its pods stopped by hand). The hub then\n"+
			"relocates its subsets (failover policy Relocate) at once, without waiting for the fence deadline,\n"+
			"and a held relocation (RelocationHeld) goes ahead. If the cluster still runs pods, two copies of an\n"+
			"instance may run: the command asks you to type the cluster's name unless --yes is given.\n"+
			"--remove takes the taint off (relocated subsets come home by failback).",
		"  kubectl fleetset out-of-service east\n  kubectl fleetset out-of-service east --yes\n  kubectl fleetset out-of-service east --remove",
		o.Run)
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "Do not ask for confirmation.")
	cmd.Flags().BoolVar(&o.Remove, "remove", false, "Remove the taint: the cluster is in service again.")
	return cmd
}

// Run taints (or, with Remove, untaints) the ManagedCluster named by Name,
// after listing the subsets it hosts and, unless Yes, reading the
// cluster's name back from In. It returns an error when the cluster does
// not exist, the confirmation does not match, or the update fails.
func (o *OutOfServiceOptions) Run(ctx context.Context) error {
	mc := &clusterv1.ManagedCluster{}
	if err := o.Hub.Get(ctx, types.NamespacedName{Name: o.Name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("managedcluster %q not found", o.Name)
		}
		return fmt.Errorf("getting managedcluster %q: %w", o.Name, err)
	}
	i := taintIndex(mc)
	if o.Remove {
		return o.untaint(ctx, mc, i)
	}
	if i >= 0 {
		fmt.Fprintf(o.Out, "managedcluster.cluster.open-cluster-management.io/%s already tainted %s: nothing changed\n", o.Name, fleetv1.TaintOutOfService)
		return nil
	}
	hosted := o.hostedSubsets(ctx)
	fmt.Fprintf(o.Out, "Cluster %s hosts %s.\n", o.Name, hosted)
	fmt.Fprintf(o.Out, "Tainting it %s tells the hub it runs none of their pods any more: subsets of Relocate FleetSets move at once, without waiting for the fence deadline.\n", fleetv1.TaintOutOfService)
	if !o.Yes {
		fmt.Fprintf(o.Out, "Only go on if %s is powered off or its pods are stopped. Type the cluster's name to confirm: ", o.Name)
		line, _ := bufio.NewReader(o.In).ReadString('\n')
		if strings.TrimSpace(line) != o.Name {
			return fmt.Errorf("not confirmed: nothing changed (type %q, or pass --yes)", o.Name)
		}
	}
	patch := client.MergeFrom(mc.DeepCopy())
	// No timeAdded: OCM's ManagedCluster webhook refuses a client's and
	// stamps the taint itself ("It is not allowed to set TimeAdded").
	mc.Spec.Taints = append(mc.Spec.Taints, clusterv1.Taint{Key: fleetv1.TaintOutOfService, Effect: clusterv1.TaintEffectNoSelect})
	if err := o.Hub.Patch(ctx, mc, patch); err != nil {
		return fmt.Errorf("tainting managedcluster %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "managedcluster.cluster.open-cluster-management.io/%s tainted %s:NoSelect\n", o.Name, fleetv1.TaintOutOfService)
	fmt.Fprintf(o.Out, "Watch: kubectl fleetset status NAME -n NAMESPACE --watch (CLUSTER %s→fallback, FAILOVER FailedOver)\nUndo: kubectl fleetset out-of-service %s --remove\n", o.Name, o.Name)
	return nil
}

// untaint removes taint i (none: -1) from mc.
func (o *OutOfServiceOptions) untaint(ctx context.Context, mc *clusterv1.ManagedCluster, i int) error {
	if i < 0 {
		fmt.Fprintf(o.Out, "managedcluster.cluster.open-cluster-management.io/%s has no taint %s: nothing changed\n", o.Name, fleetv1.TaintOutOfService)
		return nil
	}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Spec.Taints = append(mc.Spec.Taints[:i:i], mc.Spec.Taints[i+1:]...)
	if err := o.Hub.Patch(ctx, mc, patch); err != nil {
		return fmt.Errorf("untainting managedcluster %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "managedcluster.cluster.open-cluster-management.io/%s untainted %s\n", o.Name, fleetv1.TaintOutOfService)
	fmt.Fprintf(o.Out, "Relocated subsets come home by failback (Automatic, or kubectl fleetset failback NAME).\n")
	return nil
}

// taintIndex returns the index of mc's out-of-service taint, or -1.
func taintIndex(mc *clusterv1.ManagedCluster) int {
	for i, t := range mc.Spec.Taints {
		if t.Key == fleetv1.TaintOutOfService {
			return i
		}
	}
	return -1
}

// hostedSubsets describes the FleetSet subsets that run on o.Name now
// (status.subsets[].cluster) in every namespace, or why it cannot tell.
func (o *OutOfServiceOptions) hostedSubsets(ctx context.Context) string {
	var list fleetv1.FleetSetList
	if err := o.Hub.List(ctx, &list); err != nil {
		return fmt.Sprintf("subsets not known (listing FleetSets: %v)", err)
	}
	var out []string
	for _, fs := range list.Items {
		for _, ss := range fs.Status.Subsets {
			if ss.Cluster == o.Name {
				out = append(out, fmt.Sprintf("%s/%s %s (%d replicas)", fs.Namespace, fs.Name, ss.Name, ss.Replicas))
			}
		}
	}
	if len(out) == 0 {
		return "no FleetSet subset"
	}
	sort.Strings(out)
	return fmt.Sprintf("%d FleetSet subsets: %s", len(out), strings.Join(out, ", "))
}
