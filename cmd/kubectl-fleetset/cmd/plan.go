package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/federation/rollout"
)

// PlanOptions are the inputs of `kubectl fleetset plan -f FILE`.
type PlanOptions struct {
	*VerbOptions
	// File (-f) holds the FleetSet as it would be applied ("-": stdin).
	File string
	// Output (-o) is "" (text) or "json".
	Output string
	// NoDryRun skips the server-side dry run (--dry-run=false).
	NoDryRun bool
}

// Plan is what `kubectl fleetset plan` computes: the change a FleetSet's new
// spec makes, by the hub's own division (plan.For), rendering
// (manifestwork.StatefulSet, manifestwork.Instances) and rollout planner
// (rollout.Plan).
type Plan struct {
	// Namespace and Name of the FleetSet; Create when it does not exist.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Create    bool   `json:"create,omitempty"`
	// Refused is the hub apiserver's refusal of the change (server-side dry
	// run: schema, CEL rules, admission policies); "" when admitted.
	Refused string `json:"refused,omitempty"`
	// DryRun says whether the server-side dry run ran ("admitted",
	// "refused", "skipped").
	DryRun string `json:"dryRun"`
	// Invalid is plan.For's error: the hub would report InvalidSpec and
	// deliver nothing.
	Invalid string `json:"invalid,omitempty"`
	// Findings are what the hub would report Degraded (reason: message).
	Findings []string `json:"findings,omitempty"`
	// Subsets, in spec order (removed subsets last).
	Subsets []PlanSubset `json:"subsets,omitempty"`
	// Created, Removed and Moved are instances (pod names) by ordinal order.
	Created []PlanInstance `json:"created,omitempty"`
	Removed []PlanInstance `json:"removed,omitempty"`
	Moved   []PlanMove     `json:"moved,omitempty"`
	// Rolled are the instances replaced by the rollout, in its order;
	// RolloutSteps the same grouped by step of the planner (instances of
	// one step are replaced at once).
	Rolled       []PlanInstance `json:"rolled,omitempty"`
	RolloutSteps [][]string     `json:"rolloutSteps,omitempty"`
	// Notes qualify the plan (a paused rollout, a Manual strategy, a
	// relocated subset, what the plan cannot know).
	Notes []string `json:"notes,omitempty"`
}

// PlanSubset is one subset before and after; nil: absent.
type PlanSubset struct {
	Name   string           `json:"name"`
	Before *PlanSubsetState `json:"before,omitempty"`
	After  *PlanSubsetState `json:"after,omitempty"`
	// Rolls is whether its StatefulSet's pod template changes, or
	// instances of an unfinished rollout (Outdated) remain to be replaced.
	Rolls bool `json:"rolls,omitempty"`
	// Outdated is how many of its instances run an older revision than its
	// template now (status: replicas − updatedReplicas), before the change.
	Outdated int32 `json:"outdated,omitempty"`
}

// PlanSubsetState is a subset as the hub delivers it.
type PlanSubsetState struct {
	Cluster      string           `json:"cluster"`
	OrdinalStart int32            `json:"ordinalStart"`
	Replicas     int32            `json:"replicas"`
	Domains      map[string]int32 `json:"domains,omitempty"`
	// domainOrder is the domains' spec order; template the rendered pod
	// template of its StatefulSet.
	domainOrder []string
	template    *templateRevision
}

// templateRevision is a subset's rendered pod template.
type templateRevision struct{ spec any }

// PlanInstance is one instance.
type PlanInstance struct {
	Name    string `json:"name"`
	Subset  string `json:"subset"`
	Cluster string `json:"cluster"`
	Ordinal int32  `json:"ordinal"`
	Domain  string `json:"domain,omitempty"`
}

// PlanMove is an instance that changes cluster.
type PlanMove struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// NewCmdPlan returns `kubectl fleetset plan -f FILE`.
func NewCmdPlan(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PlanOptions{VerbOptions: newVerbOptions(flags, streams)}
	cmd := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Show what applying a FleetSet would do, before applying it",
		Long: "Compare the FleetSet in FILE with the one on the hub (none: a creation) and show, computed by the hub's\n" +
			"own division, rendering and rollout code: per subset its cluster, ordinal block, replicas and domains\n" +
			"before and after; the instances created, removed, moved between clusters, and rolled (replaced by the\n" +
			"rollout, in its order); what the hub would report Degraded; and, from a server-side dry run against\n" +
			"the hub, which admission rule (schema, CEL, ValidatingAdmissionPolicy) refuses it. Nothing is changed.",
		Example: "  kubectl fleetset plan -f fleetset.yaml\n  kubectl fleetset plan -f fleetset.yaml -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.File == "" {
				return fmt.Errorf("-f FILE is required")
			}
			if o.Output != "" && o.Output != "json" {
				return fmt.Errorf("-o %q: want json or nothing", o.Output)
			}
			fs, err := readFleetSetFile(o.File, o.In)
			if err != nil {
				return err
			}
			if o.Namespace == "" && fs.Namespace != "" {
				if f := o.ConfigFlags; f == nil || f.Namespace == nil || *f.Namespace == "" {
					o.Namespace = fs.Namespace
				}
			}
			if err := o.Complete([]string{fs.Name}); err != nil {
				return err
			}
			p, err := o.Plan(cmd.Context(), fs)
			if err != nil {
				return err
			}
			return o.print(p)
		},
	}
	cmd.Flags().StringVarP(&o.File, "filename", "f", "", "The FleetSet to plan, as it would be applied (YAML or JSON; - for stdin).")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json (the plan as data); default text.")
	cmd.Flags().BoolVar(&o.NoDryRun, "no-dry-run", false, "Do not ask the hub for a server-side dry run (no admission check).")
	return cmd
}

// readFleetSetFile decodes the FleetSet in file ("-": in).
func readFleetSetFile(file string, in interface{ Read([]byte) (int, error) }) (*fleetv1.FleetSet, error) {
	var b []byte
	var err error
	if file == "-" {
		var sb strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, rerr := in.Read(buf)
			sb.Write(buf[:n])
			if rerr != nil {
				break
			}
		}
		b = []byte(sb.String())
	} else if b, err = os.ReadFile(file); err != nil {
		return nil, err
	}
	fs := &fleetv1.FleetSet{}
	if err := yaml.UnmarshalStrict(b, fs); err != nil {
		if err2 := yaml.Unmarshal(b, fs); err2 != nil {
			return nil, fmt.Errorf("%s: %w", file, err2)
		}
	}
	if fs.Kind != "" && (fs.Kind != "FleetSet" || schema.FromAPIVersionAndKind(fs.APIVersion, fs.Kind).Group != fleetv1.GroupVersion.Group) {
		return nil, fmt.Errorf("%s: kind %s %s, want a FleetSet (%s)", file, fs.APIVersion, fs.Kind, fleetv1.GroupVersion)
	}
	if fs.Name == "" {
		return nil, fmt.Errorf("%s: metadata.name is required", file)
	}
	return fs, nil
}

// Plan computes the plan of applying next: the dry run (unless NoDryRun),
// then the division, instances and rollout before (the FleetSet on the
// hub, with its status) and after (next as the dry run returned it, with
// the same status). It returns an error only when the hub cannot be read.
func (o *PlanOptions) Plan(ctx context.Context, next *fleetv1.FleetSet) (*Plan, error) {
	next = next.DeepCopy()
	next.Namespace = o.Namespace
	p := &Plan{Namespace: o.Namespace, Name: next.Name, DryRun: "skipped"}
	cur := &fleetv1.FleetSet{}
	switch err := o.Hub.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: next.Name}, cur); {
	case apierrors.IsNotFound(err):
		p.Create, cur = true, nil
	case err != nil:
		if _, err2 := o.getFleetSet(ctx); err2 != nil {
			return nil, err2
		}
		return nil, err
	}
	if !o.NoDryRun {
		admitted, err := o.dryRun(ctx, cur, next)
		if err != nil {
			p.DryRun, p.Refused = "refused", err.Error()
		} else {
			p.DryRun, next = "admitted", admitted
		}
	}
	if cur != nil {
		next.Status = *cur.Status.DeepCopy()
	}
	if next.Spec.Topology.PlacementRef != nil || (cur != nil && cur.Spec.Topology.PlacementRef != nil) {
		p.Notes = append(p.Notes, "spec.topology.placementRef: the subsets follow the Placement's decisions, which plan does not read; only the admission check is shown")
		return p, nil
	}
	var before []manifestwork.Subset
	var beforeInst []fleetv1.FleetViewInstance
	if cur != nil {
		var err error
		if before, beforeInst, err = delivered(cur, previousStarts(cur)); err != nil {
			p.Notes = append(p.Notes, "the FleetSet on the hub cannot be divided now: "+err.Error())
		}
	}
	prev := map[string]int32{}
	if cur != nil {
		prev = previousStarts(cur)
	}
	planned, findings, err := plan.For(next, prev)
	if err != nil {
		p.Invalid = err.Error()
		return p, nil
	}
	for _, f := range findings {
		where := ""
		if f.Subset != "" {
			where = " (subset " + f.Subset + ")"
		}
		p.Findings = append(p.Findings, f.Reason+where+": "+f.Message)
	}
	after, afterInst, err := render(next, planned)
	if err != nil {
		p.Invalid = err.Error()
		return p, nil
	}
	compare(p, cur, next, before, after, beforeInst, afterInst)
	return p, nil
}

// dryRun sends next to the hub as a server-side dry run: an update over
// cur (its resourceVersion), or a create. It returns the object the
// apiserver would store (defaults applied) or its refusal.
func (o *PlanOptions) dryRun(ctx context.Context, cur, next *fleetv1.FleetSet) (*fleetv1.FleetSet, error) {
	obj := next.DeepCopy()
	obj.Status = fleetv1.FleetSetStatus{}
	if cur == nil {
		obj.ResourceVersion = ""
		if err := o.Hub.Create(ctx, obj, client.DryRunAll); err != nil {
			return nil, err
		}
		return obj, nil
	}
	obj.ResourceVersion, obj.UID = cur.ResourceVersion, cur.UID
	if err := o.Hub.Update(ctx, obj, client.DryRunAll); err != nil {
		return nil, err
	}
	return obj, nil
}

// delivered divides fs as the hub does (plan.For) and renders its subsets
// and instances; a relocated subset (status failover phase) stays on its
// status cluster, as the hub keeps it.
func delivered(fs *fleetv1.FleetSet, previous map[string]int32) ([]manifestwork.Subset, []fleetv1.FleetViewInstance, error) {
	planned, _, err := plan.For(fs, previous)
	if err != nil {
		return nil, nil, err
	}
	return render(fs, planned)
}

// render turns planned into the subsets the hub renders (templates after
// overrides; a relocated subset on its status cluster) and their instances
// (manifestwork.Instances).
func render(fs *fleetv1.FleetSet, planned []plan.Subset) ([]manifestwork.Subset, []fleetv1.FleetViewInstance, error) {
	status := map[string]fleetv1.SubsetStatus{}
	for _, ss := range fs.Status.Subsets {
		status[ss.Name] = ss
	}
	out := make([]manifestwork.Subset, len(planned))
	for i, ps := range planned {
		sub := manifestwork.FromPlan(ps)
		if ss, ok := status[ps.Name]; ok && ss.Failover != "" && ss.Cluster != "" {
			sub.Cluster = ss.Cluster
		}
		for j := range fs.Spec.Topology.Subsets {
			if s := &fs.Spec.Topology.Subsets[j]; s.Name == ps.Name {
				tmpl, claims, err := manifestwork.SubsetTemplate(fs, s, fmt.Sprintf("spec.topology.subsets[%d]", j))
				if err != nil {
					return nil, nil, err
				}
				sub.Template, sub.Claims = tmpl, claims
			}
		}
		out[i] = sub
	}
	inst, err := manifestwork.Instances(fs, out)
	return out, inst, err
}

// podTemplate is subset sub's StatefulSet pod template, as rendered.
func podTemplate(fs *fleetv1.FleetSet, sub manifestwork.Subset) any {
	sts, err := manifestwork.StatefulSet(fs, sub)
	if err != nil {
		return nil
	}
	return sts.Spec.Template
}

// compare fills p from the subsets and instances before and after.
func compare(p *Plan, cur, next *fleetv1.FleetSet, before, after []manifestwork.Subset, beforeInst, afterInst []fleetv1.FleetViewInstance) {
	state := func(fs *fleetv1.FleetSet, s manifestwork.Subset) *PlanSubsetState {
		st := &PlanSubsetState{Cluster: s.Cluster, OrdinalStart: s.OrdinalStart, Replicas: s.Replicas}
		if len(s.Domains) > 0 {
			st.Domains = map[string]int32{}
			for _, d := range s.Domains {
				st.Domains[d.Name] = d.Replicas
				st.domainOrder = append(st.domainOrder, d.Name)
			}
		}
		st.template = &templateRevision{spec: podTemplate(fs, s)}
		return st
	}
	byName := map[string]*PlanSubset{}
	for _, s := range after {
		ps := PlanSubset{Name: s.Name, After: state(next, s)}
		p.Subsets = append(p.Subsets, ps)
	}
	for i := range p.Subsets {
		byName[p.Subsets[i].Name] = &p.Subsets[i]
	}
	for _, s := range before {
		if ps, ok := byName[s.Name]; ok {
			ps.Before = state(cur, s)
			continue
		}
		p.Subsets = append(p.Subsets, PlanSubset{Name: s.Name, Before: state(cur, s)})
		byName[s.Name] = &p.Subsets[len(p.Subsets)-1]
	}
	// Pointers into p.Subsets may have moved with the appends: rebuild.
	for i := range p.Subsets {
		byName[p.Subsets[i].Name] = &p.Subsets[i]
	}
	outdated := map[string]int32{}
	if cur != nil {
		for _, ss := range cur.Status.Subsets {
			outdated[ss.Name] = max(0, ss.Replicas-ss.UpdatedReplicas)
		}
	}
	for i := range p.Subsets {
		ps := &p.Subsets[i]
		if ps.Before == nil || ps.After == nil || ps.Before.Cluster != ps.After.Cluster {
			continue
		}
		ps.Rolls = !equality.Semantic.DeepEqual(ps.Before.template.spec, ps.After.template.spec)
		if !ps.Rolls {
			// Instances an unfinished (partitioned, paused) rollout left on
			// an older revision, the lowest of the subset: the change may
			// release them.
			ps.Outdated = min(outdated[ps.Name], ps.Before.Replicas)
			ps.Rolls = ps.Outdated > 0
		}
	}
	was := map[string]fleetv1.FleetViewInstance{}
	for _, in := range beforeInst {
		was[in.Name] = in
	}
	now := map[string]bool{}
	var kept []PlanInstance
	for _, in := range afterInst {
		now[in.Name] = true
		old, ok := was[in.Name]
		switch {
		case !ok:
			p.Created = append(p.Created, planInstance(in))
		case old.Cluster != in.Cluster:
			p.Moved = append(p.Moved, PlanMove{Name: in.Name, From: old.Cluster, To: in.Cluster})
		default:
			kept = append(kept, planInstance(in))
		}
	}
	for _, in := range beforeInst {
		if !now[in.Name] {
			p.Removed = append(p.Removed, planInstance(in))
		}
	}
	if cur != nil && len(cur.Spec.Topology.Subsets) > 0 && len(beforeInst) == 0 && cur.Spec.Replicas > fleetv1.MaxFleetViewInstances {
		p.Notes = append(p.Notes, fmt.Sprintf("more than %d instances: instances are not listed", fleetv1.MaxFleetViewInstances))
	}
	for _, ss := range next.Status.Subsets {
		if ss.Failover != "" {
			p.Notes = append(p.Notes, fmt.Sprintf("subset %s is %s on cluster %s: it stays there until it fails back", ss.Name, ss.Failover, ss.Cluster))
		}
	}
	rollOrder(p, next, after, kept)
	if next.Spec.DependenciesOrDefault() == fleetv1.DependenciesAuto && len(manifestwork.References(&next.Spec.Template)) > 0 {
		p.Notes = append(p.Notes, "spec.dependencies Auto: a change of a ConfigMap or Secret the template references also rolls its subsets; plan compares the templates only")
	}
}

// planInstance converts a fleet view instance.
func planInstance(in fleetv1.FleetViewInstance) PlanInstance {
	return PlanInstance{Name: in.Name, Subset: in.Subset, Cluster: in.Cluster, Ordinal: in.Ordinal, Domain: in.Domain}
}

// rollOrder orders the kept instances of rolling subsets as the rollout
// replaces them: rollout.Plan (RollingUpdate) stepped until complete,
// each released StatefulSet replacing its highest outdated ordinal per
// step; under Manual each subset's instances above its partition, highest
// first.
func rollOrder(p *Plan, fs *fleetv1.FleetSet, after []manifestwork.Subset, kept []PlanInstance) {
	rolls := map[string]bool{}
	for _, ps := range p.Subsets {
		rolls[ps.Name] = ps.Rolls
	}
	keptBy := map[string]map[int32]PlanInstance{}
	for _, in := range kept {
		if keptBy[in.Subset] == nil {
			keptBy[in.Subset] = map[int32]PlanInstance{}
		}
		keptBy[in.Subset][in.Ordinal] = in
	}
	add := func(step []PlanInstance) {
		if len(step) == 0 {
			return
		}
		var names []string
		for _, in := range step {
			p.Rolled = append(p.Rolled, in)
			names = append(names, in.Name)
		}
		p.RolloutSteps = append(p.RolloutSteps, names)
	}
	subsets := map[string]manifestwork.Subset{}
	for _, s := range after {
		subsets[s.Name] = s
	}
	us := fs.Spec.UpdateStrategy
	if us.Type == fleetv1.ManualUpdateStrategyType {
		var parts map[string]int32
		if us.ManualUpdate != nil {
			parts = us.ManualUpdate.Partitions
		}
		for _, s := range after {
			if !rolls[s.Name] {
				continue
			}
			top := s.Replicas - 1
			for _, ps := range p.Subsets {
				if ps.Name == s.Name && ps.Outdated > 0 {
					top = ps.Outdated - 1 // only the outdated, lowest instances
				}
			}
			var step []PlanInstance
			for k := top; k >= parts[s.Name]; k-- {
				if in, ok := keptBy[s.Name][s.OrdinalStart+k]; ok {
					step = append(step, in)
				}
			}
			add(step)
		}
		if len(p.Rolled) > 0 {
			p.Notes = append(p.Notes, "updateStrategy Manual: each subset replaces its instances above its partition, highest ordinal first, independently of the others")
		}
		return
	}
	ru := us.RollingUpdate
	if ru == nil {
		ru = &fleetv1.RollingUpdateFleetSet{}
	}
	maxUnavailable, err := rollout.ResolveMaxUnavailable(ru.MaxUnavailable, fs.Spec.Replicas)
	if err != nil {
		p.Invalid = err.Error()
		return
	}
	spec := rollout.Spec{Revision: "new", MaxUnavailable: maxUnavailable, Partition: ru.Partition, MaxConcurrent: ru.MaxConcurrentSubsetsOrDefault()}
	order := subsetOrder(fs)
	// A subset that does not roll is updated; one whose template changes
	// starts with its instances created at the new revision (a scale-up's,
	// at the top); one with outdated instances left by an unfinished
	// rollout has all but those updated.
	updated := map[string]int32{}
	for _, in := range p.Created {
		updated[in.Subset]++
	}
	for _, ps := range p.Subsets {
		s, ok := subsets[ps.Name]
		switch {
		case !ok:
		case !rolls[ps.Name]:
			updated[ps.Name] = s.Replicas
		case ps.Outdated > 0:
			updated[ps.Name] = max(0, s.Replicas-ps.Outdated)
		}
	}
	if ru.Paused && slices.ContainsFunc(p.Subsets, func(ps PlanSubset) bool { return ps.Rolls }) {
		p.Notes = append(p.Notes, "rollingUpdate.paused: nothing is replaced until the rollout is resumed; the order below is the one it will follow")
	}
	if manifestwork.RoleOrdered(fs) {
		p.Notes = append(p.Notes, "role-ordered rollout (spec.roles): the leader goes last, after every other instance of the fleet, whichever subset holds it")
	}
	for range 100000 {
		var in []rollout.Subset
		for _, name := range order {
			s, ok := subsets[name]
			if !ok {
				continue
			}
			in = append(in, rollout.Subset{Name: name, Cluster: s.Cluster, Replicas: s.Replicas, ClusterAvailable: true,
				Target: "new", Revision: "new", Current: true, Observed: s.Replicas, Updated: updated[name], Ready: s.Replicas, Available: s.Replicas})
		}
		spec.Paused = false
		d := rollout.Plan(spec, in)
		if d.Complete {
			break
		}
		var step []PlanInstance
		progressed := false
		for _, name := range d.Updating {
			s := subsets[name]
			if part := d.Partitions[name]; s.Replicas-updated[name] > part {
				k := s.Replicas - 1 - updated[name]
				updated[name]++
				progressed = true
				if inst, ok := keptBy[name][s.OrdinalStart+k]; ok {
					step = append(step, inst)
				}
			}
		}
		add(step)
		if !progressed {
			break
		}
	}
	if ru.Partition > 0 && len(p.Rolled) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("rollingUpdate.partition %d: the last %d instances in fleet order stay on the old revision", ru.Partition, ru.Partition))
	}
}

// print writes p as text or JSON.
func (o *PlanOptions) print(p *Plan) error {
	if o.Output == "json" {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(o.Out, string(b))
		return nil
	}
	PrintPlan(o.Out, p)
	return nil
}

// PrintPlan writes p for people.
func PrintPlan(w interface{ Write([]byte) (int, error) }, p *Plan) {
	what := "update"
	if p.Create {
		what = "create"
	}
	fmt.Fprintf(w, "Plan for fleetset %s/%s (%s)\n", p.Namespace, p.Name, what)
	switch p.DryRun {
	case "admitted":
		fmt.Fprintln(w, "Admission: admitted (server-side dry run on the hub)")
	case "refused":
		fmt.Fprintf(w, "Admission: REFUSED by the hub: %s\n", p.Refused)
	default:
		fmt.Fprintln(w, "Admission: not checked (--no-dry-run)")
	}
	if p.Invalid != "" {
		fmt.Fprintf(w, "The hub would report Degraded InvalidSpec and deliver nothing: %s\n", p.Invalid)
	}
	for _, f := range p.Findings {
		fmt.Fprintf(w, "The hub would report Degraded %s\n", f)
	}
	if len(p.Subsets) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "SUBSET\tCLUSTER\tORDINALS\tREPLICAS\tDOMAINS\tROLLS")
		for _, s := range p.Subsets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name,
				change(s.Before, s.After, func(st *PlanSubsetState) string { return st.Cluster }),
				change(s.Before, s.After, func(st *PlanSubsetState) string {
					return fmt.Sprintf("[%d,%d)", st.OrdinalStart, st.OrdinalStart+st.Replicas)
				}),
				change(s.Before, s.After, func(st *PlanSubsetState) string { return fmt.Sprint(st.Replicas) }),
				change(s.Before, s.After, domainsText),
				map[bool]string{true: "yes", false: "-"}[s.Rolls])
		}
		tw.Flush()
	}
	list := func(title string, ins []PlanInstance) {
		fmt.Fprintf(w, "\n%s (%d):", title, len(ins))
		if len(ins) == 0 {
			fmt.Fprintln(w, " none")
			return
		}
		fmt.Fprintln(w)
		for _, in := range ins {
			domain := ""
			if in.Domain != "" {
				domain = ", " + in.Domain
			}
			fmt.Fprintf(w, "  %s (%s%s)\n", in.Name, in.Cluster, domain)
		}
	}
	if p.Invalid == "" && len(p.Subsets) > 0 {
		list("Created", p.Created)
		list("Removed", p.Removed)
		fmt.Fprintf(w, "\nMoved between clusters (%d):", len(p.Moved))
		if len(p.Moved) == 0 {
			fmt.Fprintln(w, " none")
		} else {
			fmt.Fprintln(w)
			for _, m := range p.Moved {
				fmt.Fprintf(w, "  %s: %s → %s\n", m.Name, m.From, m.To)
			}
		}
		fmt.Fprintf(w, "\nRolled, in order (%d):", len(p.Rolled))
		if len(p.Rolled) == 0 {
			fmt.Fprintln(w, " none")
		} else {
			fmt.Fprintln(w)
			for i, step := range p.RolloutSteps {
				fmt.Fprintf(w, "  %d. %s\n", i+1, strings.Join(step, " + "))
			}
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if p.Refused == "" && p.Invalid == "" {
		fmt.Fprintf(w, "\nApply: kubectl apply -f FILE; then watch: kubectl fleetset status %s -n %s --watch\n", p.Name, p.Namespace)
	}
}

// change prints f of before → after, one side when equal, - when absent.
func change(before, after *PlanSubsetState, f func(*PlanSubsetState) string) string {
	b, a := "-", "-"
	if before != nil {
		b = f(before)
	}
	if after != nil {
		a = f(after)
	}
	if a == b {
		return a
	}
	return b + " → " + a
}

// domainsText prints a subset's domains as name:replicas in spec order.
func domainsText(st *PlanSubsetState) string {
	if len(st.domainOrder) == 0 {
		return "spread"
	}
	var parts []string
	for _, d := range st.domainOrder {
		parts = append(parts, fmt.Sprintf("%s:%d", d, st.Domains[d]))
	}
	return strings.Join(parts, " ")
}
