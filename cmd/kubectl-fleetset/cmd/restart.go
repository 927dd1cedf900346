package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/rollout"
)

// AnnotationRestartedAt is the pod template annotation `kubectl rollout
// restart` writes; restart writes it into the FleetSet's template, so the
// hub's rollout replaces every instance.
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// RestartOptions are the inputs of `kubectl fleetset restart NAME`.
type RestartOptions struct {
	*VerbOptions
	// Yes (--yes) skips the confirmation.
	Yes bool
}

// NewCmdRestart returns `kubectl fleetset restart NAME`: a rolling restart
// of every instance through the FleetSet's own rollout.
func NewCmdRestart(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RestartOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := verbCommand(o.VerbOptions, "restart NAME --yes", "Restart every instance of a FleetSet, as its rollout goes",
		"Stamp the annotation "+AnnotationRestartedAt+" into spec.template.metadata.annotations, as\n"+
			"kubectl rollout restart does: the template's revision changes and the hub replaces every instance\n"+
			"through the FleetSet's rollout — subset by subset in fleet order, highest ordinal first, within\n"+
			"rollingUpdate.maxUnavailable (a paused rollout waits for resume; with updateStrategy Manual only\n"+
			"the instances above each subset's partition are replaced). Every pod restarts: asks for --yes\n"+
			"(or the FleetSet's name on a terminal).",
		"  kubectl fleetset restart mydb -n db --yes", o.Run)
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "Do not ask for confirmation.")
	return cmd
}

// Run stamps the restart annotation (the current time, RFC 3339) into the
// FleetSet's template after confirm, and prints what the rollout will do
// and what to watch. It returns an error when the FleetSet cannot be read
// or patched, or the restart is not confirmed.
func (o *RestartOptions) Run(ctx context.Context) error {
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	order, budget := restartOrder(fs)
	fmt.Fprintf(o.Out, "Restarting fleetset %s/%s replaces all %d instances: %s.\n", o.Namespace, o.Name, fs.Spec.Replicas, budget)
	if err := o.confirm(o.Yes, fmt.Sprintf("restart every instance of fleetset %s", o.Name), o.Name); err != nil {
		return err
	}
	at := o.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, AnnotationRestartedAt, at)
	if err := o.Hub.Patch(ctx, fs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching fleetset %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s restarted: spec.template annotation %s=%s\n", o.Name, AnnotationRestartedAt, at)
	fmt.Fprintf(o.Out, "Fleet order: %s.\n", order)
	fmt.Fprintf(o.Out, "Watch: %s (UPDATED climbs subset by subset; Progressing RolloutUpdating, then Complete)\n", o.watchHint())
	if ru := fs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Paused {
		fmt.Fprintf(o.Out, "Note: the rollout is paused: nothing is replaced until kubectl fleetset resume %s -n %s\n", o.Name, o.Namespace)
	}
	fmt.Fprintf(o.Out, "Pause: kubectl fleetset pause %s -n %s\n", o.Name, o.Namespace)
	return nil
}

// restartOrder describes the fleet order of fs's subsets (subsetOrder
// first, then spec order; inside each, highest ordinal first) and the
// rollout's budget.
func restartOrder(fs *fleetv1.FleetSet) (string, string) {
	us := fs.Spec.UpdateStrategy
	names := subsetOrder(fs)
	if us.Type == fleetv1.ManualUpdateStrategyType {
		return strings.Join(names, ", ") + " (each highest ordinal first, down to its partition)",
			"updateStrategy Manual: each subset's instances above spec.updateStrategy.manualUpdate.partitions, highest ordinal first"
	}
	ru := us.RollingUpdate
	if ru == nil {
		ru = &fleetv1.RollingUpdateFleetSet{}
	}
	budget := "within maxUnavailable " + fmt.Sprint(fleetv1.DefaultMaxUnavailable)
	if n, err := rollout.ResolveMaxUnavailable(ru.MaxUnavailable, fs.Spec.Replicas); err == nil {
		budget = fmt.Sprintf("within maxUnavailable %d, %d subset(s) at a time", n, ru.MaxConcurrentSubsetsOrDefault())
	}
	if ru.Partition > 0 {
		budget += fmt.Sprintf("; rollingUpdate.partition %d keeps the last %d in fleet order on the old revision", ru.Partition, ru.Partition)
	}
	return strings.Join(names, ", ") + " (each highest ordinal first)", "one by one through the rollout, " + budget
}

// subsetOrder returns fs's subset names in fleet order: those named in
// rollingUpdate.subsetOrder first, then the others in spec order (the
// hub's fleetOrder).
func subsetOrder(fs *fleetv1.FleetSet) []string {
	var out []string
	seen := map[string]bool{}
	spec := map[string]bool{}
	for _, s := range fs.Spec.Topology.Subsets {
		spec[s.Name] = true
	}
	if ru := fs.Spec.UpdateStrategy.RollingUpdate; ru != nil && fs.Spec.UpdateStrategy.Type != fleetv1.ManualUpdateStrategyType {
		for _, n := range ru.SubsetOrder {
			if spec[n] && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, s := range fs.Spec.Topology.Subsets {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	return out
}
