package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

const statusExample = `  # Subsets of FleetSet mydb in the current namespace of the hub (the current context)
  kubectl fleetset status mydb

  # ... and its pods, read from the member clusters east and west
  kubectl fleetset status mydb -n db --member east=.fleet/east/kubeconfig --member west=.fleet/west/kubeconfig

  # members as contexts of the same kubeconfig file
  kubectl fleetset status mydb --context hub --member-context east=east --member-context west=west

  # every instance: pod, cluster, domain, DNS name
  kubectl fleetset status mydb --instances

  # the FleetSet itself
  kubectl fleetset status mydb -o yaml

  # redrawn every 2 seconds as a rollout or failover moves (Ctrl-C to stop)
  kubectl fleetset status mydb --watch`

// StatusOptions are the inputs of `kubectl fleetset status`. Build it with
// NewStatusOptions; Complete, Validate and Run it, as kubectl's commands do.
type StatusOptions struct {
	// ConfigFlags are the standard kubectl client flags; they select the hub.
	ConfigFlags *genericclioptions.ConfigFlags
	// PrintFlags give -o json|yaml|name|jsonpath=...|go-template=...: the
	// FleetSet is printed instead of the status tables.
	PrintFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	// Members are --member values, CLUSTER=KUBECONFIG.
	Members []string
	// MemberContexts are --member-context values, CLUSTER=CONTEXT, contexts
	// of the kubeconfig the hub is read with.
	MemberContexts []string
	// MemberTimeout bounds every request to a member cluster.
	MemberTimeout time.Duration
	// Now returns the time lease ages are measured against.
	Now func() time.Time
	// Instances (--instances) adds the instance table.
	Instances bool
	// Watch (--watch, -w) prints the status again every Interval.
	Watch bool
	// Interval is how often --watch prints (--interval, default 2s).
	Interval time.Duration

	name, namespace string
	scheme          *runtime.Scheme
	hub             client.Client
	members         []member
}

// NewStatusOptions returns StatusOptions that read the hub through flags and
// write to streams, with a member timeout of 10s.
func NewStatusOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{
		ConfigFlags:   flags,
		PrintFlags:    genericclioptions.NewPrintFlags(""),
		IOStreams:     streams,
		MemberTimeout: 10 * time.Second,
		Interval:      2 * time.Second,
		Now:           time.Now,
	}
}

// NewCmdStatus returns `kubectl fleetset status NAME`, reading the hub
// through flags and writing to streams.
func NewCmdStatus(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "status NAME [--member CLUSTER=KUBECONFIG]... [--member-context CLUSTER=CONTEXT]...",
		Short: "Show where a FleetSet's subsets and instances run",
		Long: `Show a FleetSet's status as the hub sees it: replicas, revisions and conditions,
then one line per subset: its cluster (home→fallback once relocated), ordinal
range [start,start+replicas), replicas per domain (the hub's division), ready
and updated replicas, fleet revision, rollout phase, fencing epoch, failover
phase, and the age of the last resync lease renewal the hub wrote for the
cluster. With --instances, one line per desired instance: pod name, cluster,
domain and stable DNS name, as the fleet view delivered to every member
lists them.

Given member clusters (--member, --member-context; the names are the
ManagedCluster names), it also lists the FleetSet's pods in them, sorted by
ordinal (cluster, zone, node, pod, ordinal, ready), and one line per member:
its pod count and its own resync Lease, or why it could not be read.`,
		Example: statusExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().StringArrayVar(&o.Members, "member", nil, "A member cluster to list pods from, as CLUSTER=KUBECONFIG (repeatable). CLUSTER is the ManagedCluster name.")
	cmd.Flags().StringArrayVar(&o.MemberContexts, "member-context", nil, "A member cluster to list pods from, as CLUSTER=CONTEXT of the hub's kubeconfig file (repeatable).")
	cmd.Flags().BoolVar(&o.Instances, "instances", false, "Also list every desired instance as the fleet view does: pod, cluster, domain (its ordinal's: the pod's label fleetset.io/domain) and stable DNS name.")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Print the status again every --interval until interrupted (redrawn in place on a terminal), as a rollout, failover or failback moves.")
	cmd.Flags().DurationVar(&o.Interval, "interval", o.Interval, "How often --watch prints.")
	cmd.Flags().DurationVar(&o.MemberTimeout, "member-timeout", o.MemberTimeout, "Timeout of each request to a member cluster; an unreachable member is reported, not fatal.")
	return cmd
}

// Complete reads the FleetSet name from args, the namespace and the hub's
// client configuration from the kubectl flags, and the member clusters'
// configurations. It returns an error when the hub's kubeconfig cannot be
// loaded or a member flag is malformed; a member whose kubeconfig cannot be
// loaded is reported by Run instead.
func (o *StatusOptions) Complete(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("exactly one FleetSet name is required, got %d", len(args))
	}
	o.name = args[0]
	var err error
	if o.namespace, _, err = o.ConfigFlags.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	if o.scheme == nil {
		o.scheme = runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{fleetv1.AddToScheme, workv1.Install, coordinationv1.AddToScheme} {
			if err := add(o.scheme); err != nil {
				return err
			}
		}
		o.PrintFlags.WithTypeSetter(o.scheme)
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return err
	}
	cfg.UserAgent = userAgent
	if o.hub, err = client.New(cfg, client.Options{Scheme: o.scheme}); err != nil {
		return fmt.Errorf("creating a client for the hub: %w", err)
	}
	kubeconfig := ""
	if o.ConfigFlags.KubeConfig != nil {
		kubeconfig = *o.ConfigFlags.KubeConfig
	}
	o.members, err = parseMembers(o.Members, o.MemberContexts, kubeconfig, o.MemberTimeout)
	return err
}

// Validate checks the output format, if one was given, and the watch
// interval.
func (o *StatusOptions) Validate() error {
	if o.Watch && o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", o.Interval)
	}
	if o.printsObject() {
		if _, err := o.PrintFlags.ToPrinter(); err != nil {
			return err
		}
	}
	return nil
}

// printsObject reports whether -o (or --template) asks for the FleetSet
// object rather than the status tables.
func (o *StatusOptions) printsObject() bool {
	t := o.PrintFlags.TemplatePrinterFlags
	return *o.PrintFlags.OutputFormat != "" || (t != nil && t.TemplateArgument != nil && *t.TemplateArgument != "")
}

// Run reads the FleetSet and the resync leases from the hub and the pods
// from the members, and prints them (Print), or prints the FleetSet with
// the -o printer. It returns an error when the FleetSet cannot be read;
// unreadable leases and members are part of the output. With Watch it
// prints again every Interval until ctx is done (see watch).
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.Watch {
		return o.watch(ctx)
	}
	return o.runOnce(ctx, o.Out)
}

// watch prints the status every Interval until ctx is done, as `argo
// rollouts get --watch` does: redrawn in place when Out is a terminal,
// else one frame after the other, each headed by its time. A frame that
// fails shows its error and the watch goes on; it returns nil when ctx
// is done.
func (o *StatusOptions) watch(ctx context.Context) error {
	tty := isTerminal(o.Out)
	for {
		var frame bytes.Buffer
		err := o.runOnce(ctx, &frame)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintf(&frame, "error: %v\n", err)
		}
		if tty {
			fmt.Fprint(o.Out, "\x1b[H\x1b[2J")
		}
		fmt.Fprintf(o.Out, "Every %s: kubectl fleetset status %s -n %s    %s\n\n", o.Interval, o.name, o.namespace, o.Now().UTC().Format(time.RFC3339))
		_, _ = o.Out.Write(frame.Bytes())
		if !tty {
			fmt.Fprintln(o.Out)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Interval):
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runOnce reads and prints the status once to w; see Run.
func (o *StatusOptions) runOnce(ctx context.Context, w io.Writer) error {
	fs := &fleetv1.FleetSet{}
	if err := o.hub.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.name}, fs); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("fleetset %q not found in namespace %q", o.name, o.namespace)
		case apimeta.IsNoMatchError(err):
			return fmt.Errorf("the server does not serve FleetSets (%s): is the current context the fleetset hub? %w", fleetv1.GroupVersion, err)
		}
		return fmt.Errorf("getting fleetset %q in namespace %q: %w", o.name, o.namespace, err)
	}
	if o.printsObject() {
		p, err := o.PrintFlags.ToPrinter()
		if err != nil {
			return err
		}
		return p.PrintObj(fs, w)
	}
	st := &Status{FleetSet: fs, Subsets: SubsetRows(fs), HubLeases: map[string]LeaseState{}, Heartbeats: map[string]HeartbeatState{}}
	for _, r := range st.Subsets {
		if _, ok := st.HubLeases[r.Cluster]; !ok {
			st.HubLeases[r.Cluster] = o.hubLease(ctx, r.Cluster)
		}
		for _, c := range []string{r.Home, r.Cluster} {
			if _, ok := st.Heartbeats[c]; !ok && c != "" {
				st.Heartbeats[c] = o.heartbeat(ctx, c)
			}
		}
	}
	if o.Instances {
		var err error
		if st.Instances, err = Instances(fs); err != nil {
			return fmt.Errorf("fleetset %q: listing its instances: %w", o.name, err)
		}
		st.ShowInstances = true
	}
	st.Members, st.Pods = readMembers(ctx, o.members, fs)
	st.Now = o.Now()
	return Print(w, st)
}

// heartbeat returns cluster's member heartbeat Lease on the hub
// (v1alpha1.HeartbeatLeaseName in the cluster's namespace).
func (o *StatusOptions) heartbeat(ctx context.Context, cluster string) HeartbeatState {
	l := &coordinationv1.Lease{}
	if err := o.hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.HeartbeatLeaseName}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return HeartbeatState{LeaseState: LeaseState{Missing: true}}
		}
		return HeartbeatState{LeaseState: LeaseState{Err: fmt.Errorf("reading Lease %s/%s: %w", cluster, fleetv1.HeartbeatLeaseName, err)}}
	}
	h := HeartbeatState{State: l.Annotations[fleetv1.AnnotationMemberState], Reason: l.Annotations[fleetv1.AnnotationMemberReason]}
	if l.Spec.RenewTime != nil {
		h.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		h.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return h
}

// hubLease returns the resync lease the hub last wrote for cluster: the
// Lease in the spec of ManifestWork v1alpha1.ResyncWorkName in the
// cluster's namespace, which the hub rewrites at every renewal.
func (o *StatusOptions) hubLease(ctx context.Context, cluster string) LeaseState {
	w := &workv1.ManifestWork{}
	if err := o.hub.Get(ctx, types.NamespacedName{Namespace: cluster, Name: fleetv1.ResyncWorkName}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return LeaseState{Missing: true}
		}
		return LeaseState{Err: fmt.Errorf("reading ManifestWork %s/%s: %w", cluster, fleetv1.ResyncWorkName, err)}
	}
	l, err := manifestwork.LeaseOf(w)
	if err != nil {
		return LeaseState{Err: fmt.Errorf("ManifestWork %s/%s: %w", cluster, fleetv1.ResyncWorkName, err)}
	}
	return LeaseState{RenewTime: l.RenewTime.Time, Duration: time.Duration(l.DurationSeconds) * time.Second}
}
