package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// ReportOptions are the inputs of `kubectl fleetset report NAME`.
type ReportOptions struct {
	*VerbOptions
	// OutputFile (-f, --output-file) is the archive written; default
	// fleetset-report-<namespace>-<name>-<time>.tar.gz.
	OutputFile string
	// Members are --member-kubeconfig values and MemberFiles --member
	// values, CLUSTER=KUBECONFIG; MemberContexts --member-context values.
	Members, MemberFiles, MemberContexts []string
	// MemberTimeout bounds every request to a member.
	MemberTimeout time.Duration
	// MemberClients replace the clients built from the member flags, by
	// cluster (tests).
	MemberClients map[string]client.Client
}

// NewCmdReport returns `kubectl fleetset report NAME`.
func NewCmdReport(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ReportOptions{VerbOptions: newVerbOptions(flags, streams), MemberTimeout: 10 * time.Second}
	cmd := verbCommand(o.VerbOptions, "report NAME [-f FILE] [--member-kubeconfig CLUSTER=KUBECONFIG]...", "Write one archive of a FleetSet's state on the hub and its members, for a bug report",
		"Write a tar.gz with, from the hub: the FleetSet, its ManifestWorks, the SubsetPlacements they deliver,\n"+
			"the ManagedClusters it uses, the members' heartbeat Leases and the events of the FleetSet and its\n"+
			"works; and from every member given (--member-kubeconfig, --member, --member-context): the FleetSet's\n"+
			"StatefulSets, SubsetPlacements, pods and events, and the member component's Leases, pods and events\n"+
			"(namespace "+fleetv1.ResyncLeaseNamespace+"). What cannot be read is listed in errors.txt; it is not fatal.\n"+
			"Secrets are never read, and the values of the Secrets the hub delivers (in its ManifestWorks) and of\n"+
			"kubectl apply's last-applied-configuration annotations are redacted: keys stay, each value becomes its\n"+
			"size and a keyed hash. managedFields are left out.",
		"  kubectl fleetset report mydb -n db --member-kubeconfig east=east.kubeconfig --member-kubeconfig west=west.kubeconfig",
		o.Run)
	cmd.Flags().StringVarP(&o.OutputFile, "output-file", "f", "", "The archive to write (default fleetset-report-<namespace>-<name>-<time>.tar.gz).")
	cmd.Flags().StringArrayVar(&o.Members, "member-kubeconfig", nil, "A member cluster to collect from, as CLUSTER=KUBECONFIG (repeatable). CLUSTER is the ManagedCluster name.")
	cmd.Flags().StringArrayVar(&o.MemberFiles, "member", nil, "The same as --member-kubeconfig (the status command's name).")
	cmd.Flags().StringArrayVar(&o.MemberContexts, "member-context", nil, "A member cluster to collect from, as CLUSTER=CONTEXT of the hub's kubeconfig file (repeatable).")
	cmd.Flags().DurationVar(&o.MemberTimeout, "member-timeout", o.MemberTimeout, "Timeout of each request to a member cluster.")
	return cmd
}

// archive collects the report's files in memory, and what failed. The
// object lists (lists) are redacted (redactor) and marshalled into files
// by seal, once every one is collected, so that a Secret value seen in one
// file is scrubbed out of all.
type archive struct {
	files  map[string][]byte
	lists  map[string][]map[string]any
	errors []string
}

func (a *archive) fail(format string, args ...any) {
	a.errors = append(a.errors, fmt.Sprintf(format, args...))
}

// list adds, as file name, a v1 List of the objects of gvk that opts
// select, without managedFields; keep, if set, filters them.
func (a *archive) list(ctx context.Context, c client.Client, name string, gvk schema.GroupVersionKind, keep func(*unstructured.Unstructured) bool, opts ...client.ListOption) []unstructured.Unstructured {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, l, opts...); err != nil {
		a.fail("%s: listing %s: %v", name, gvk.Kind, err)
		return nil
	}
	var items []unstructured.Unstructured
	for _, it := range l.Items {
		if keep == nil || keep(&it) {
			items = append(items, it)
		}
	}
	a.add(name, items)
	return items
}

// add records items as file name, sorted by namespace and name, without
// managedFields; seal writes it. The items are deep-copied: callers keep
// theirs unredacted.
func (a *archive) add(name string, items []unstructured.Unstructured) {
	sort.Slice(items, func(i, j int) bool {
		return items[i].GetNamespace()+"/"+items[i].GetName() < items[j].GetNamespace()+"/"+items[j].GetName()
	})
	objs := make([]map[string]any, len(items))
	for i := range items {
		u := items[i].DeepCopy()
		u.SetManagedFields(nil)
		objs[i] = u.Object
	}
	a.lists[name] = objs
}

// seal redacts every recorded list with r and writes each as a v1 List in
// YAML.
func (a *archive) seal(r *redactor) {
	var all []map[string]any
	for _, objs := range a.lists {
		all = append(all, objs...)
	}
	r.redact(all)
	for name, objs := range a.lists {
		items := make([]any, len(objs))
		for i := range objs {
			items[i] = objs[i]
		}
		b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			a.fail("%s: %v", name, err)
			continue
		}
		a.files[name] = b
	}
}

var (
	gvkFleetSet         = fleetv1.GroupVersion.WithKind("FleetSet")
	gvkSubsetPlacement  = fleetv1.GroupVersion.WithKind("SubsetPlacement")
	gvkManifestWork     = schema.GroupVersionKind{Group: workv1.GroupName, Version: "v1", Kind: "ManifestWork"}
	gvkManagedCluster   = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}
	gvkEvent            = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	gvkPod              = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvkLease            = schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
	gvkStatefulSet      = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	memberComponentName = fleetv1.ResyncLeaseNamespace
)

// Run collects the report and writes the archive, then prints where it is,
// what it holds and what could not be read. It returns an error when the
// FleetSet cannot be read or the archive cannot be written.
func (o *ReportOptions) Run(ctx context.Context) error {
	fs, err := o.getFleetSet(ctx)
	if err != nil {
		return err
	}
	now := o.Now().UTC()
	a := &archive{files: map[string][]byte{}, lists: map[string][]map[string]any{}}
	clusters := o.collectHub(ctx, a, fs)
	members, err := o.memberClients()
	if err != nil {
		return err
	}
	var given []string
	for _, m := range members {
		given = append(given, m.cluster)
		if m.err != nil {
			a.fail("member %s: %v", m.cluster, m.err)
			continue
		}
		o.collectMember(ctx, a, fs, m.cluster, m.c)
	}
	var missing []string
	for _, c := range clusters {
		if !containsString(given, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		a.fail("members not collected (no --member-kubeconfig given): %s", strings.Join(missing, ", "))
	}
	red := newRedactor()
	a.seal(red)
	for i, e := range a.errors {
		a.errors[i] = red.scrubString(e)
	}
	readme := fmt.Sprintf("kubectl fleetset report of fleetset %s/%s, %s\nhub: hub/*.yaml; members: %s\nerrors: %d (errors.txt)\n%s.\n",
		fs.Namespace, fs.Name, now.Format(time.RFC3339), joinOrNone(given), len(a.errors), red.summary())
	a.files["README.txt"] = []byte(readme)
	a.files["errors.txt"] = []byte(strings.Join(a.errors, "\n") + "\n")
	file := o.OutputFile
	if file == "" {
		file = fmt.Sprintf("fleetset-report-%s-%s-%s.tar.gz", fs.Namespace, fs.Name, now.Format("20060102T150405Z"))
	}
	dir := fmt.Sprintf("fleetset-report-%s-%s", fs.Namespace, fs.Name)
	if err := writeArchive(file, dir, a.files, now); err != nil {
		return err
	}
	names := make([]string, 0, len(a.files))
	for n := range a.files {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(o.Out, "Wrote %s: %d files, from the hub and %d member(s) (%s)\n", file, len(names), len(given), joinOrNone(given))
	for _, n := range names {
		fmt.Fprintf(o.Out, "  %s/%s\n", dir, n)
	}
	if len(a.errors) > 0 {
		fmt.Fprintf(o.Out, "Not collected (%d, also in errors.txt):\n", len(a.errors))
		for _, e := range a.errors {
			fmt.Fprintf(o.Out, "  %s\n", e)
		}
	}
	fmt.Fprintf(o.Out, "%s.\nAttach %s to the bug report; it holds no Secret value, but ConfigMaps, pod specs (env values written in the template) and events are copied as they are and may name hosts, images and settings.\n", red.summary(), file)
	return nil
}

// collectHub adds the hub's files and returns the clusters the FleetSet
// uses (spec and status).
func (o *ReportOptions) collectHub(ctx context.Context, a *archive, fs *fleetv1.FleetSet) []string {
	a.list(ctx, o.Hub, "hub/fleetset.yaml", gvkFleetSet, func(u *unstructured.Unstructured) bool { return u.GetName() == fs.Name }, client.InNamespace(fs.Namespace))
	works := a.list(ctx, o.Hub, "hub/manifestworks.yaml", gvkManifestWork, nil,
		client.MatchingLabels{fleetv1.LabelOwnerNamespace: fs.Namespace, fleetv1.LabelOwnerName: fs.Name})
	var placements []unstructured.Unstructured
	for _, w := range works {
		manifests, _, _ := unstructured.NestedSlice(w.Object, "spec", "workload", "manifests")
		for _, m := range manifests {
			obj, ok := m.(map[string]any)
			if !ok {
				continue
			}
			u := unstructured.Unstructured{Object: obj}
			if u.GroupVersionKind() == gvkSubsetPlacement {
				placements = append(placements, *u.DeepCopy())
			}
		}
	}
	a.add("hub/subsetplacements.yaml", placements)
	a.list(ctx, o.Hub, "hub/events.yaml", gvkEvent, nil, client.InNamespace(fs.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", fs.Name)})
	var workEvents []unstructured.Unstructured
	for _, w := range works {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvkEvent.GroupVersion().WithKind("EventList"))
		if err := o.Hub.List(ctx, l, client.InNamespace(w.GetNamespace()),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", w.GetName())}); err != nil {
			a.fail("hub/work-events.yaml: %s/%s: %v", w.GetNamespace(), w.GetName(), err)
			continue
		}
		workEvents = append(workEvents, l.Items...)
	}
	a.add("hub/work-events.yaml", workEvents)
	var clusters []string
	for _, s := range fs.Spec.Topology.Subsets {
		clusters = appendUnique(clusters, s.Cluster)
	}
	for _, ss := range fs.Status.Subsets {
		clusters = appendUnique(clusters, ss.Cluster)
	}
	for _, w := range works {
		clusters = appendUnique(clusters, w.GetNamespace())
	}
	sort.Strings(clusters)
	a.list(ctx, o.Hub, "hub/managedclusters.yaml", gvkManagedCluster, func(u *unstructured.Unstructured) bool { return containsString(clusters, u.GetName()) })
	var leases []unstructured.Unstructured
	for _, c := range clusters {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvkLease.GroupVersion().WithKind("LeaseList"))
		if err := o.Hub.List(ctx, l, client.InNamespace(c), client.MatchingLabels{fleetv1.LabelHeartbeat: "true"}); err != nil {
			a.fail("hub/heartbeat-leases.yaml: %s: %v", c, err)
			continue
		}
		leases = append(leases, l.Items...)
	}
	a.add("hub/heartbeat-leases.yaml", leases)
	return clusters
}

// collectMember adds member cluster's files.
func (o *ReportOptions) collectMember(ctx context.Context, a *archive, fs *fleetv1.FleetSet, cluster string, c client.Client) {
	dir := path.Join("members", cluster)
	set := client.MatchingLabels{fleetv1.LabelSet: fs.Name}
	ns := client.InNamespace(fs.Namespace)
	a.list(ctx, c, dir+"/statefulsets.yaml", gvkStatefulSet, nil, ns, set)
	a.list(ctx, c, dir+"/subsetplacements.yaml", gvkSubsetPlacement, nil, ns, set)
	a.list(ctx, c, dir+"/pods.yaml", gvkPod, nil, ns, set)
	a.list(ctx, c, dir+"/events.yaml", gvkEvent, func(u *unstructured.Unstructured) bool {
		name, _, _ := unstructured.NestedString(u.Object, "involvedObject", "name")
		return strings.HasPrefix(name, fs.Name+"-") || name == fs.Name
	}, ns)
	sys := client.InNamespace(memberComponentName)
	a.list(ctx, c, dir+"/member-component/leases.yaml", gvkLease, nil, sys)
	a.list(ctx, c, dir+"/member-component/pods.yaml", gvkPod, nil, sys)
	a.list(ctx, c, dir+"/member-component/events.yaml", gvkEvent, nil, sys)
}

// memberClient is one member's client, or why there is none.
type memberClient struct {
	cluster string
	c       client.Client
	err     error
}

// memberClients returns the members' clients: MemberClients, else those
// of the member flags, sorted by cluster.
func (o *ReportOptions) memberClients() ([]memberClient, error) {
	var out []memberClient
	if o.MemberClients != nil {
		for c, cl := range o.MemberClients {
			out = append(out, memberClient{cluster: c, c: cl})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].cluster < out[j].cluster })
		return out, nil
	}
	kubeconfig := ""
	if o.ConfigFlags != nil && o.ConfigFlags.KubeConfig != nil {
		kubeconfig = *o.ConfigFlags.KubeConfig
	}
	members, err := parseMembers(append(append([]string(nil), o.Members...), o.MemberFiles...), o.MemberContexts, kubeconfig, o.MemberTimeout)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		mc := memberClient{cluster: m.cluster, err: m.err}
		if m.err == nil {
			mc.c, mc.err = client.New(m.config, client.Options{})
		}
		out = append(out, mc)
	}
	return out, nil
}

// writeArchive writes files under dir into a gzip'd tar at file.
func writeArchive(file, dir string, files map[string][]byte, now time.Time) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: path.Join(dir, n), Mode: 0o644, Size: int64(len(b)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

func appendUnique(list []string, s string) []string {
	if s == "" || containsString(list, s) {
		return list
	}
	return append(list, s)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
