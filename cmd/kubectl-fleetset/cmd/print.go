package cmd

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// maxMessage is how many characters of a condition message the header shows.
const maxMessage = 100

// Print writes st to w: the FleetSet header (replicas, revisions,
// conditions), the subset table, the instance table if asked for, the
// fencing table, and, when members were given, the pod
// table sorted by ordinal and one line per member. Each section is aligned
// on its own. It returns the first write error.
func Print(w io.Writer, st *Status) error {
	sections := []func(io.Writer) []string{
		func(w io.Writer) []string { printHeader(w, st); return nil },
		func(w io.Writer) []string { return printSubsets(w, st) },
	}
	if st.ShowInstances {
		sections = append(sections, func(w io.Writer) []string { return printInstances(w, st) })
	}
	if len(st.Heartbeats) > 0 {
		sections = append(sections, func(w io.Writer) []string { printHeartbeats(w, st); return nil })
	}
	if len(st.Members) > 0 {
		sections = append(sections,
			func(w io.Writer) []string { printPods(w, st); return nil },
			func(w io.Writer) []string { printMembers(w, st); return nil })
	}
	for i, section := range sections {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		// One tabwriter per section: kubectl's remembers column widths
		// across flushes.
		tw := printers.GetNewTabWriter(w)
		notes := section(tw)
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range notes {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// row writes cells as one tab-separated line.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// printHeader writes the FleetSet's name, replica counts, revisions and
// conditions (Ready, Progressing, Degraded first, then any other type).
func printHeader(w io.Writer, st *Status) {
	fs := st.FleetSet
	s := fs.Status
	// Fixed-width keys: the tabwriter aligns only the conditions.
	fmt.Fprintf(w, "%-12s%s\n", "Name:", fs.Name)
	fmt.Fprintf(w, "%-12s%s\n", "Namespace:", fs.Namespace)
	fmt.Fprintf(w, "%-12s%d desired, %d current, %d ready, %d updated\n", "Replicas:", fs.Spec.Replicas, s.Replicas, s.ReadyReplicas, s.UpdatedReplicas)
	fmt.Fprintf(w, "%-12supdate %s, current %s\n", "Revision:", orDash(s.UpdateRevision), orDash(s.CurrentRevision))
	if len(fs.Spec.Roles) > 0 {
		leader := "none reported (see condition Degraded)"
		if l := s.Leader; l != nil {
			leader = fmt.Sprintf("%s (subset %s, cluster %s)", l.Name, l.Subset, l.Cluster)
		}
		fmt.Fprintf(w, "%-12s%s\n", "Leader:", leader)
	}
	if r := s.RequestedSwitchover; r != nil {
		line := fmt.Sprintf("asked of %s (cluster %s) to %s since %s", r.Pod, r.Cluster, describeTarget(r.To), r.RequestedAt.UTC().Format(time.RFC3339))
		if r.Failed != "" {
			line += "; the action fails: " + r.Failed
		}
		fmt.Fprintf(w, "%-12s%s\n", "Switchover:", line)
	}
	if s.ObservedGeneration != fs.Generation {
		fmt.Fprintf(w, "%-12sgeneration %d of %d: the hub has not yet reconciled the latest spec\n", "Observed:", s.ObservedGeneration, fs.Generation)
	}
	fmt.Fprintln(w, "Conditions:")
	if len(s.Conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	}
	order := []string{fleetv1.ConditionReady, fleetv1.ConditionProgressing, fleetv1.ConditionDegraded}
	for _, c := range s.Conditions {
		if c.Type != fleetv1.ConditionReady && c.Type != fleetv1.ConditionProgressing && c.Type != fleetv1.ConditionDegraded {
			order = append(order, c.Type)
		}
	}
	for _, t := range order {
		for _, c := range s.Conditions {
			if c.Type == t {
				row(w, "  "+c.Type, string(c.Status), c.Reason, orDash(short(c.Message)))
			}
		}
	}
}

// printSubsets writes the subset table and returns the notes to print
// below it: what a "*" means, and unreadable hub leases.
func printSubsets(w io.Writer, st *Status) []string {
	row(w, "SUBSET", "CLUSTER", "ORDINALS", "REPLICAS", "DOMAINS", "READY", "UPDATED", "PARTITION", "REVISION", "ROLLOUT", "EPOCH", "FAILOVER", "LEASE")
	var computed bool
	for _, r := range st.Subsets {
		name, cluster, domains := r.Name, r.Cluster, domainList(r)
		if !r.Reported {
			name += "*"
			computed = true
		} else if r.DomainsComputed {
			domains += "*"
			computed = true
		}
		if r.Cluster != r.Home {
			cluster = r.Home + "→" + r.Cluster
		}
		ready, updated := itoa(r.Ready), itoa(r.Updated)
		if !r.Reported {
			ready, updated = "-", "-"
		}
		row(w, name, cluster, r.Ordinals(), itoa(r.Replicas), domains, ready, updated, itoa(r.Partition),
			orDash(r.Revision), orDash(string(r.Rollout)), strconv.FormatInt(r.Epoch, 10), orDash(string(r.Failover)),
			leaseAge(st.HubLeases[r.Cluster], st.Now))
	}
	var notes []string
	if computed {
		notes = append(notes, "* not in the FleetSet's status yet: computed here with the hub's division (federation/plan)")
	}
	seen := map[string]bool{}
	for _, r := range st.Subsets {
		l, ok := st.HubLeases[r.Cluster]
		if ok && l.Err != nil && !seen[r.Cluster] {
			seen[r.Cluster] = true
			notes = append(notes, fmt.Sprintf("resync lease of cluster %s: %s", r.Cluster, firstLine(l.Err.Error())))
		}
	}
	return notes
}

// printInstances writes the instance table: pod, cluster, domain, DNS
// name; for a fleet too large for the fleet view, a note instead.
func printInstances(w io.Writer, st *Status) []string {
	if len(st.Instances) == 0 && st.FleetSet.Spec.Replicas > fleetv1.MaxFleetViewInstances {
		return []string{fmt.Sprintf("instances not listed: more than %d replicas (the fleet view lists none either)", fleetv1.MaxFleetViewInstances)}
	}
	row(w, "INSTANCE", "CLUSTER", "DOMAIN", "DNS")
	for _, in := range st.Instances {
		row(w, in.Name, in.Cluster, orDash(in.Domain), in.DNSName)
	}
	return nil
}

// printHeartbeats writes the FENCING table, one line per cluster of the
// subsets (home and current): its member's last heartbeat on the hub (by this machine's clock,
// against the member's), and the member's own state and reason as it last
// reported them — fenced or holding and why.
func printHeartbeats(w io.Writer, st *Status) {
	row(w, "FENCING", "HEARTBEAT", "STATE", "WHY")
	clusters := make([]string, 0, len(st.Heartbeats))
	for c := range st.Heartbeats {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	for _, c := range clusters {
		h := st.Heartbeats[c]
		switch {
		case h.Err != nil:
			row(w, c, "-", "-", firstLine(h.Err.Error()))
		case h.Missing:
			row(w, c, "none", "-", "no member heartbeat: fencing is off there, and the hub never relocates from it")
		default:
			row(w, c, leaseAge(h.LeaseState, st.Now), orDash(h.State), orDash(short(h.Reason)))
		}
	}
}

// printPods writes the pod table: cluster, zone, node, pod, ordinal, ready.
func printPods(w io.Writer, st *Status) {
	withRoles := len(st.FleetSet.Spec.Roles) > 0
	if withRoles {
		row(w, "CLUSTER", "ZONE", "NODE", "POD", "ORDINAL", "READY", "ROLE")
	} else {
		row(w, "CLUSTER", "ZONE", "NODE", "POD", "ORDINAL", "READY")
	}
	if len(st.Pods) == 0 {
		row(w, "<none>")
	}
	for _, p := range st.Pods {
		ord := "?"
		if p.Ordinal >= 0 {
			ord = strconv.FormatInt(p.Ordinal, 10)
		}
		ready := "False"
		if p.Ready {
			ready = "True"
		}
		if withRoles {
			row(w, p.Cluster, orNone(p.Zone), orNone(p.Node), p.Pod, ord, ready, orNone(p.Role))
			continue
		}
		row(w, p.Cluster, orNone(p.Zone), orNone(p.Node), p.Pod, ord, ready)
	}
}

// printMembers writes one line per member given: its pod count and its own
// resync Lease, or why it could not be read; then one line per cluster of
// the subsets that was not given.
func printMembers(w io.Writer, st *Status) {
	row(w, "MEMBER", "PODS", "MEMBER LEASE", "PROBLEM")
	given := map[string]bool{}
	for _, m := range st.Members {
		given[m.Cluster] = true
		if m.Err != nil {
			row(w, m.Cluster, "-", "-", firstLine(memberError(m.Err)))
			continue
		}
		row(w, m.Cluster, strconv.Itoa(m.Pods), leaseAge(m.Lease, st.Now), orDash(firstLine(strings.Join(m.Notes, "; "))))
	}
	for _, r := range st.Subsets {
		if !given[r.Cluster] {
			given[r.Cluster] = true
			row(w, r.Cluster, "-", "-", "not given (--member or --member-context): its pods are not listed")
		}
	}
}

// memberError says why a member's pods could not be read: "unreachable: "
// and the error when the request got no answer (connection refused,
// timeout, TLS), else the error (the API's answer, a bad kubeconfig).
func memberError(err error) string {
	var status apierrors.APIStatus
	var urlErr *url.Error
	if !errors.As(err, &status) && errors.As(err, &urlErr) {
		return "unreachable: " + err.Error()
	}
	return err.Error()
}

// leaseAge returns how long ago l was renewed, "(expired)" appended once
// now is past renewTime + leaseDurationSeconds; "none" when there is no
// lease, "-" when it is not known.
func leaseAge(l LeaseState, now time.Time) string {
	switch {
	case !l.RenewTime.IsZero():
		age := duration.HumanDuration(max(now.Sub(l.RenewTime), 0))
		if fleetv1.LeaseExpired(l.RenewTime, l.Duration, now) {
			return age + " (expired)"
		}
		return age
	case l.Missing:
		return "none"
	}
	return "-"
}

// domainList returns "zone-a:2 zone-b:2 zone-c:1", or "spread" for a subset
// without domains.
func domainList(r SubsetRow) string {
	if len(r.Domains) == 0 {
		return "spread"
	}
	parts := make([]string, len(r.Domains))
	for i, d := range r.Domains {
		parts[i] = d.Name + ":" + strconv.Itoa(int(d.Replicas))
	}
	return strings.Join(parts, " ")
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// short returns the first line of s, cut to maxMessage characters.
func short(s string) string {
	s = firstLine(s)
	if r := []rune(s); len(r) > maxMessage {
		return string(r[:maxMessage-3]) + "..."
	}
	return s
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
