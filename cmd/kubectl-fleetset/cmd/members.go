package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// userAgent is the User-Agent of every request the plugin makes.
const userAgent = "kubectl-fleetset"

// member is one member cluster given on the command line: its client
// configuration, or why there is none.
type member struct {
	cluster string
	config  *rest.Config
	err     error
}

// parseMembers turns --member CLUSTER=KUBECONFIG and --member-context
// CLUSTER=CONTEXT values into members sorted by cluster; contexts are read
// from kubeconfig (the hub's --kubeconfig; empty: $KUBECONFIG or
// ~/.kube/config). Every request to a member times out after timeout. It
// returns an error for a value that is not CLUSTER=VALUE or a cluster given
// twice; a kubeconfig or context that cannot be loaded becomes the member's
// err, reported with the output.
func parseMembers(files, contexts []string, kubeconfig string, timeout time.Duration) ([]member, error) {
	seen := map[string]bool{}
	var out []member
	add := func(flag, value, v string, load func(string) (*rest.Config, error)) error {
		cluster, arg, ok := strings.Cut(v, "=")
		if !ok || cluster == "" || arg == "" {
			return fmt.Errorf("--%s %q: want CLUSTER=%s", flag, v, value)
		}
		if seen[cluster] {
			return fmt.Errorf("--%s %q: member %s is given twice", flag, v, cluster)
		}
		seen[cluster] = true
		m := member{cluster: cluster}
		if m.config, m.err = load(arg); m.err == nil {
			m.config.Timeout, m.config.UserAgent = timeout, userAgent
		}
		out = append(out, m)
		return nil
	}
	for _, v := range files {
		if err := add("member", "KUBECONFIG", v, func(path string) (*rest.Config, error) {
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
			}
			return cfg, nil
		}); err != nil {
			return nil, err
		}
	}
	for _, v := range contexts {
		if err := add("member-context", "CONTEXT", v, func(ctx string) (*rest.Config, error) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: ctx}).ClientConfig()
			if err != nil {
				return nil, fmt.Errorf("context %s: %w", ctx, err)
			}
			return cfg, nil
		}); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cluster < out[j].cluster })
	return out, nil
}

// readMembers reads, from every member at once, the FleetSet's pods (label
// fleetset.io/set=<name> in the FleetSet's namespace), the topology key of
// their nodes and the member's resync Lease. It returns one report per
// member, in members' order, and the pod rows of all members sorted by
// SortPodRows.
func readMembers(ctx context.Context, members []member, fs *fleetv1.FleetSet) ([]MemberReport, []PodRow) {
	reports := make([]MemberReport, len(members))
	rows := make([][]PodRow, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i], rows[i] = readMember(ctx, m, fs)
		}()
	}
	wg.Wait()
	var all []PodRow
	for _, r := range rows {
		all = append(all, r...)
	}
	SortPodRows(all)
	return reports, all
}

// readMember reads one member; see readMembers. A member whose pods cannot
// be listed gets Err and no rows; unreadable nodes or Lease become notes.
func readMember(ctx context.Context, m member, fs *fleetv1.FleetSet) (MemberReport, []PodRow) {
	rep := MemberReport{Cluster: m.cluster, Err: m.err}
	if m.err != nil {
		return rep, nil
	}
	cs, err := kubernetes.NewForConfig(m.config)
	if err != nil {
		rep.Err = err
		return rep, nil
	}
	pods, err := cs.CoreV1().Pods(fs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{fleetv1.LabelSet: fs.Name}.String()})
	if err != nil {
		rep.Err = err
		return rep, nil
	}
	rep.Pods = len(pods.Items)
	var zones map[string]string
	if len(pods.Items) > 0 {
		key := fleetv1.TopologyKeyOrDefault(fs.Spec.Topology.TopologyKey)
		if nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			rep.Notes = append(rep.Notes, "zones unknown: "+err.Error())
		} else {
			zones = make(map[string]string, len(nodes.Items))
			for _, n := range nodes.Items {
				zones[n.Name] = n.Labels[key]
			}
		}
	}
	switch l, err := cs.CoordinationV1().Leases(fleetv1.ResyncLeaseNamespace).Get(ctx, fleetv1.ResyncLeaseName, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
		rep.Lease.Missing = true
	case err != nil:
		rep.Lease.Err = err
		rep.Notes = append(rep.Notes, "resync Lease: "+err.Error())
	case l.Spec.RenewTime == nil:
		rep.Notes = append(rep.Notes, "resync Lease has no renewTime")
	default:
		rep.Lease.RenewTime = l.Spec.RenewTime.Time
		if l.Spec.LeaseDurationSeconds != nil {
			rep.Lease.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
	}
	return rep, PodRows(m.cluster, pods.Items, zones)
}
