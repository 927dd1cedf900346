package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// VerbOptions are the inputs every state-changing verb shares: the hub's
// client flags, the output streams, and the FleetSet (or cluster) named.
type VerbOptions struct {
	// ConfigFlags are the standard kubectl client flags; they select the hub.
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// Hub is the hub's client; Complete builds it when nil (tests set it).
	Hub client.Client
	// Namespace is the FleetSet's namespace; Complete reads it from the
	// flags when empty.
	Namespace string
	// Name is the FleetSet's (or, for out-of-service, the cluster's) name.
	Name string
	// Now returns the time written into annotations and taints.
	Now func() time.Time
	// IsTerminal reports whether In is a terminal, where destructive verbs
	// prompt for a confirmation; nil: inputIsTerminal (tests set it).
	IsTerminal func(io.Reader) bool
}

// newVerbOptions returns VerbOptions over flags and streams.
func newVerbOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *VerbOptions {
	return &VerbOptions{ConfigFlags: flags, IOStreams: streams, Now: time.Now}
}

// Complete takes the one name in args, the namespace from the flags and
// builds the hub's client, unless set already. It returns an error for
// another number of args or an unloadable kubeconfig.
func (o *VerbOptions) Complete(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("exactly one name is required, got %d", len(args))
	}
	o.Name = args[0]
	if o.Namespace == "" && o.ConfigFlags != nil {
		ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return err
		}
		o.Namespace = ns
	}
	if o.Hub != nil {
		return nil
	}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{fleetv1.AddToScheme, clusterv1.Install} {
		if err := add(s); err != nil {
			return err
		}
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	cfg.UserAgent = userAgent
	if o.Hub, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return fmt.Errorf("creating a client for the hub: %w", err)
	}
	return nil
}

// getFleetSet reads the FleetSet o names, with the status command's
// errors for a missing FleetSet or a server that is not the hub.
func (o *VerbOptions) getFleetSet(ctx context.Context) (*fleetv1.FleetSet, error) {
	fs := &fleetv1.FleetSet{}
	if err := o.Hub.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, fs); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("fleetset %q not found in namespace %q", o.Name, o.Namespace)
		case apimeta.IsNoMatchError(err):
			return nil, fmt.Errorf("the server does not serve FleetSets (%s): is the current context the fleetset hub? %w", fleetv1.GroupVersion, err)
		}
		return nil, fmt.Errorf("getting fleetset %q in namespace %q: %w", o.Name, o.Namespace, err)
	}
	return fs, nil
}

// watchHint is the command that shows what a verb's change does next.
func (o *VerbOptions) watchHint() string {
	return fmt.Sprintf("kubectl fleetset status %s -n %s --watch", o.Name, o.Namespace)
}

// verbCommand returns a cobra command running run after Complete with
// the command's args.
func verbCommand(o *VerbOptions, use, short, long, example string, run func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			return run(cmd.Context())
		},
	}
}

// NewCmdPause returns `kubectl fleetset pause NAME`: it sets
// spec.updateStrategy.rollingUpdate.paused.
func NewCmdPause(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := newVerbOptions(flags, streams)
	return verbCommand(o, "pause NAME", "Pause a FleetSet's rolling update before its next instance",
		"Set spec.updateStrategy.rollingUpdate.paused: the hub updates no further instance; instances already\n"+
			"being replaced finish. The FleetSet shows Progressing RolloutPaused while a rollout waits.",
		"  kubectl fleetset pause mydb -n db", func(ctx context.Context) error { return o.SetPaused(ctx, true) })
}

// NewCmdResume returns `kubectl fleetset resume NAME`: it clears
// spec.updateStrategy.rollingUpdate.paused.
func NewCmdResume(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := newVerbOptions(flags, streams)
	return verbCommand(o, "resume NAME", "Resume a FleetSet's paused rolling update",
		"Clear spec.updateStrategy.rollingUpdate.paused: the rollout goes on from where it stopped.",
		"  kubectl fleetset resume mydb -n db", func(ctx context.Context) error { return o.SetPaused(ctx, false) })
}

// SetPaused patches the FleetSet's rollingUpdate.paused to paused (a
// merge patch; false removes the field) and prints what it did and what
// to watch. It returns an error for a Manual update strategy, which has no
// rollout to pause, or when the FleetSet cannot be read or patched. A
// FleetSet already in that state is left untouched and said so.
func (o *VerbOptions) SetPaused(ctx context.Context, paused bool) error {
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	if fs.Spec.UpdateStrategy.Type == fleetv1.ManualUpdateStrategyType {
		return fmt.Errorf("fleetset %q has updateStrategy Manual: it has no rollout to pause or resume (lower spec.updateStrategy.manualUpdate.partitions instead)", o.Name)
	}
	ru := fs.Spec.UpdateStrategy.RollingUpdate
	verb := map[bool]string{true: "paused", false: "resumed"}[paused]
	if (ru != nil && ru.Paused) == paused {
		fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s already %s: nothing changed\n", o.Name, verb)
		return nil
	}
	value := "null"
	if paused {
		value = "true"
	}
	patch := fmt.Sprintf(`{"spec":{"updateStrategy":{"rollingUpdate":{"paused":%s}}}}`, value)
	if err := o.Hub.Patch(ctx, fs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("patching fleetset %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s %s\n", o.Name, verb)
	if paused {
		fmt.Fprintf(o.Out, "The hub updates no further instance; instances already being replaced finish. While a rollout waits, Progressing reads RolloutPaused.\nWatch: %s\nResume: kubectl fleetset resume %s -n %s\n", o.watchHint(), o.Name, o.Namespace)
		return nil
	}
	fmt.Fprintf(o.Out, "The rollout goes on from where it stopped (Progressing RolloutUpdating), within maxUnavailable.\nWatch: %s\n", o.watchHint())
	return nil
}

// NewCmdFailback returns `kubectl fleetset failback NAME`: it annotates the
// FleetSet fleetset.io/failback.
func NewCmdFailback(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := newVerbOptions(flags, streams)
	return verbCommand(o, "failback NAME", "Bring a FleetSet's relocated subsets home",
		"Annotate the FleetSet fleetset.io/failback (failover.failback Manual): the hub drains each relocated\n"+
			"subset on its fallback cluster, then delivers it home with the next epoch, and removes the\n"+
			"annotation when they are home. With failback Automatic the hub does this by itself.",
		"  kubectl fleetset failback mydb -n db", o.Failback)
}

// Failback annotates the FleetSet fleetset.io/failback (a merge patch with
// the current time) when a subset runs away from home, and prints which
// subsets go home and what to watch. A FleetSet with no relocated subset
// is left untouched and said so. It returns an error when the FleetSet
// cannot be read or patched.
func (o *VerbOptions) Failback(ctx context.Context) error {
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	home := map[string]string{}
	for _, s := range fs.Spec.Topology.Subsets {
		home[s.Name] = s.Cluster
	}
	var away []string
	for _, ss := range fs.Status.Subsets {
		if ss.Failover == fleetv1.SubsetFailedOver || (home[ss.Name] != "" && ss.Cluster != home[ss.Name] && ss.Failover != fleetv1.SubsetMoving) {
			away = append(away, fmt.Sprintf("%s (%s→%s)", ss.Name, home[ss.Name], ss.Cluster))
		}
	}
	if len(away) == 0 {
		fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s has no relocated subset: nothing to fail back, nothing changed\n", o.Name)
		return nil
	}
	if _, ok := fs.Annotations[fleetv1.AnnotationFailback]; ok {
		fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s failback already requested (annotation %s): nothing changed\nWatch: %s\n", o.Name, fleetv1.AnnotationFailback, o.watchHint())
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, fleetv1.AnnotationFailback, o.Now().UTC().Format(time.RFC3339))
	if err := o.Hub.Patch(ctx, fs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("annotating fleetset %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s annotated %s: failback requested for %s\n", o.Name, fleetv1.AnnotationFailback, strings.Join(away, ", "))
	if fs.Spec.Failover != nil && fs.Spec.Failover.Failback == fleetv1.FailbackAutomatic {
		fmt.Fprintln(o.Out, "Note: failback is Automatic: the hub brings subsets home once their home cluster is back, with or without the annotation.")
	}
	fmt.Fprintf(o.Out, "Each subset is drained on its fallback cluster (FAILOVER FailingBack), then delivered home with the next EPOCH; the hub removes the annotation when all are home.\nWatch: %s\n", o.watchHint())
	return nil
}
