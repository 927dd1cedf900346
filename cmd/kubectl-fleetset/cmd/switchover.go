package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// AnnotationSwitchoverTo is v1alpha1.AnnotationSwitchoverTo.
const AnnotationSwitchoverTo = fleetv1.AnnotationSwitchoverTo

// SwitchoverAny is v1alpha1.SwitchoverToAny.
const SwitchoverAny = fleetv1.SwitchoverToAny

// SwitchoverOptions are the inputs of `kubectl fleetset switchover NAME`.
type SwitchoverOptions struct {
	*VerbOptions
	// To (--to) is the instance to hand the leader role to; empty with Any.
	To string
	// Any (--any) lets the workload choose the new leader.
	Any bool
	// Yes (--yes) skips the confirmation.
	Yes bool
}

// NewCmdSwitchover returns `kubectl fleetset switchover NAME (--to
// INSTANCE | --any)`.
func NewCmdSwitchover(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &SwitchoverOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := verbCommand(o.VerbOptions, "switchover NAME (--to INSTANCE | --any) --yes", "Hand a FleetSet's leader role to another instance",
		"Annotate the FleetSet "+AnnotationSwitchoverTo+"=<instance>, or \"*\" with --any to let the workload\n"+
			"choose: the hub and the member component of the leader's cluster run the FleetSet's switchover\n"+
			"lifecycle action in the leader (candidate: the instance named, or none) and remove the annotation\n"+
			"when the role has moved. The FleetSet must have a leader role (spec.roles[].isLeader); INSTANCE must\n"+
			"be one of its desired instances (a pod name, e.g. mydb-west-1000) and not the leader. Writes are\n"+
			"interrupted while the role moves: asks for --yes (or the FleetSet's name on a terminal).",
		"  kubectl fleetset switchover mydb -n db --to mydb-west-1000 --yes\n  kubectl fleetset switchover mydb -n db --any --yes", o.Run)
	cmd.Flags().StringVar(&o.To, "to", "", "The instance (pod name) to hand the leader role to.")
	cmd.Flags().BoolVar(&o.Any, "any", false, "Let the workload choose the new leader.")
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "Do not ask for confirmation.")
	return cmd
}

// Run validates the request against the FleetSet, asks for confirmation
// and writes the annotation, printing what it did and what to watch. It
// returns an error for a FleetSet without a leader role, a --to that is no
// desired instance or is the leader, both or neither of --to and --any, an
// unconfirmed request, or a failed read or patch.
func (o *SwitchoverOptions) Run(ctx context.Context) error {
	if (o.To == "") == !o.Any {
		return fmt.Errorf("give exactly one of --to INSTANCE and --any")
	}
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	target, err := switchoverTarget(fs, o.To)
	if err != nil {
		return err
	}
	if why := o.unfitCandidate(ctx, fs, target); why != "" {
		return fmt.Errorf("candidate %s %s: nothing changed (the hub would refuse it)", target, why)
	}
	leader := "no leader reported now (status.leader)"
	if l := fs.Status.Leader; l != nil {
		leader = fmt.Sprintf("leader %s (subset %s, cluster %s)", l.Name, l.Subset, l.Cluster)
	}
	if cur, ok := fs.Annotations[AnnotationSwitchoverTo]; ok {
		if cur == target {
			fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s switchover to %s already requested (annotation %s): nothing changed\nWatch: %s\n", o.Name, describeTarget(target), AnnotationSwitchoverTo, o.watchHint())
			return nil
		}
		fmt.Fprintf(o.Out, "A switchover to %s is pending; this replaces it.\n", describeTarget(cur))
	}
	fmt.Fprintf(o.Out, "Fleetset %s/%s: %s; switchover to %s.\n", o.Namespace, o.Name, leader, describeTarget(target))
	if err := o.confirm(o.Yes, fmt.Sprintf("switch fleetset %s's leader over", o.Name), o.Name); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationSwitchoverTo, target)
	if err := o.Hub.Patch(ctx, fs, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("annotating fleetset %q: %w", o.Name, err)
	}
	fmt.Fprintf(o.Out, "fleetset.fleetset.io/%s annotated %s=%s: switchover to %s requested\n", o.Name, AnnotationSwitchoverTo, target, describeTarget(target))
	fmt.Fprintf(o.Out, "The member component runs the switchover action in the leader; the hub removes the annotation once the role has moved (event SwitchoverDone), or after spec.switchover.deadlineSeconds (event SwitchoverFailed).\n")
	fmt.Fprintf(o.Out, "Watch: %s (the Leader line in the header, each pod's role with --member)\n", o.watchHint())
	return nil
}

// describeTarget names a switchover target for messages.
func describeTarget(target string) string {
	if target == SwitchoverAny {
		return "an instance the workload chooses"
	}
	return "instance " + target
}

// switchoverTarget returns the annotation value for to ("":
// SwitchoverAny) after the hub's own check (manifestwork.SwitchoverTarget).
func switchoverTarget(fs *fleetv1.FleetSet, to string) (string, error) {
	target, err := manifestwork.SwitchoverTarget(fs, to)
	if err != nil {
		return "", fmt.Errorf("%w: nothing changed", err)
	}
	return target, nil
}

// unfitCandidate says, early and as far as the caller may read, why the
// hub would refuse instance target as a switchover candidate ("" when
// nothing says so, or for "*"); the hub's own check
// (federation/controller unfitCandidate) decides. From the FleetSet's
// status: the candidate's subset failing over, failing back or moving, or
// not every instance of it Ready; from the hub, when readable: its
// ManagedCluster not Available, or its member's heartbeat Lease reporting
// Holding or Fenced, or not renewed for twice its duration (cut off; twice,
// as the Lease holds the member's clock, not this one's).
func (o *SwitchoverOptions) unfitCandidate(ctx context.Context, fs *fleetv1.FleetSet, target string) string {
	if target == SwitchoverAny {
		return ""
	}
	var ss *fleetv1.SubsetStatus
	for i := range fs.Status.Subsets {
		s := &fs.Status.Subsets[i]
		if rest, ok := strings.CutPrefix(target, manifestwork.StatefulSetName(fs.Name, s.Name)+"-"); ok {
			if n, err := manifestwork.ParseOrdinal(rest); err == nil && manifestwork.InBlock(n, s.OrdinalStart, s.Replicas) {
				ss = s
			}
		}
	}
	if ss == nil {
		return ""
	}
	switch {
	case ss.Failover == fleetv1.SubsetFailingOver || ss.Failover == fleetv1.SubsetFailingBack || ss.Failover == fleetv1.SubsetMoving:
		return fmt.Sprintf("is not delivered to run: subset %s is %s (cluster %s)", ss.Name, ss.Failover, ss.Cluster)
	case ss.ReadyReplicas < ss.Replicas:
		return fmt.Sprintf("is not known Ready: subset %s on cluster %s reports %d of its %d instances Ready", ss.Name, ss.Cluster, ss.ReadyReplicas, ss.Replicas)
	}
	mc := &clusterv1.ManagedCluster{}
	if err := o.Hub.Get(ctx, types.NamespacedName{Name: ss.Cluster}, mc); err == nil && !apimeta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		return fmt.Sprintf("is out of contact: ManagedCluster %s is not Available", ss.Cluster)
	}
	l := &coordinationv1.Lease{}
	if err := o.Hub.Get(ctx, types.NamespacedName{Namespace: ss.Cluster, Name: fleetv1.HeartbeatLeaseName}, l); err != nil {
		return ""
	}
	if st := l.Annotations[fleetv1.AnnotationMemberState]; st != "" && st != "InContact" {
		return fmt.Sprintf("is out of contact: cluster %s's member reports itself %s (%s)", ss.Cluster, st, l.Annotations[fleetv1.AnnotationMemberReason])
	}
	if l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil {
		d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		if age := o.Now().Sub(l.Spec.RenewTime.Time); age > 2*d {
			return fmt.Sprintf("is out of contact: cluster %s's member heartbeat was renewed %v ago, its timeout is %v: it is cut off from the hub", ss.Cluster, age.Round(time.Second), d)
		}
	}
	return ""
}
