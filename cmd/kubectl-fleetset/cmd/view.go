package cmd

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// Status is everything `kubectl fleetset status` prints: the FleetSet, its
// subset rows, the resync leases the hub wrote, and, when member clusters
// were given, their pods and how each member answered. Build it with
// SubsetRows and PodRows; print it with Print.
type Status struct {
	// FleetSet is the hub's object, with its status.
	FleetSet *fleetv1.FleetSet
	// Subsets are the rows of the subset table, in spec order (SubsetRows).
	Subsets []SubsetRow
	// HubLeases maps a cluster name to the resync lease the hub last wrote
	// for it (ManifestWork v1alpha1.ResyncWorkName in the cluster's
	// namespace); a cluster absent from the map prints "-".
	HubLeases map[string]LeaseState
	// Heartbeats maps a cluster name to its member's heartbeat Lease on the
	// hub (api/v1alpha1/member.go): the member's last contact with the hub
	// and what it last reported of itself. Empty: no member table.
	Heartbeats map[string]HeartbeatState
	// Members are the member clusters given on the command line, sorted by
	// cluster name; empty when none was given (no pod table is printed).
	Members []MemberReport
	// Pods are the FleetSet's pods in every reachable member, sorted by
	// SortPodRows.
	Pods []PodRow
	// Now is the time lease ages are measured against.
	Now time.Time
	// ShowInstances asks for the instance table (--instances): Instances,
	// every desired instance as the fleet view lists it (Instances).
	ShowInstances bool
	Instances     []fleetv1.FleetViewInstance
}

// SubsetRow is one line of the subset table: the hub's decision for one
// subset and the status its member fed back.
type SubsetRow struct {
	// Name of the subset.
	Name string
	// Home is the subset's spec cluster; Cluster is where it runs now
	// (status.subsets[].cluster), a fallback cluster after a relocation.
	Home, Cluster string
	// OrdinalStart is the first ordinal of the subset's block; its instances
	// hold ordinals [OrdinalStart, OrdinalStart+Replicas).
	OrdinalStart int32
	// Replicas is the subset's desired replicas; Partition how many of its
	// lowest instances stay on the old revision.
	Replicas, Partition int32
	// Domains are the desired replicas of each domain, in spec order; empty
	// when the subset is spread only (no domains in the spec, or relocated
	// to a cluster where the hub knows none of them: plan.RelocatedDomains).
	Domains []fleetv1.DomainStatus
	// DomainsComputed is true when Domains were not in the status and were
	// computed here with the hub's own division (federation/plan.For).
	DomainsComputed bool
	// Reported is false when status.subsets has no entry for the subset yet:
	// then OrdinalStart, Replicas, Partition and Domains come from plan.For
	// and the observed fields are zero.
	Reported bool
	// Ready and Updated are the member StatefulSet's ready and updated
	// replicas, as fed back to the hub.
	Ready, Updated int32
	// Revision is the fleet revision the member StatefulSet last reported.
	Revision string
	// Rollout is the subset's RollingUpdate phase; Failover its failover
	// phase; Epoch its fencing epoch.
	Rollout  fleetv1.SubsetRolloutPhase
	Failover fleetv1.SubsetFailoverPhase
	Epoch    int64
}

// Ordinals returns the subset's ordinal range as "[start,end)".
func (r SubsetRow) Ordinals() string {
	return "[" + strconv.Itoa(int(r.OrdinalStart)) + "," + strconv.Itoa(int(r.OrdinalStart+r.Replicas)) + ")"
}

// LeaseState is the last renewal of one cluster's resync lease, or why it is
// not known.
type LeaseState struct {
	// RenewTime is the lease's renewTime; zero when unknown.
	RenewTime time.Time
	// Duration is the lease's leaseDurationSeconds.
	Duration time.Duration
	// Missing is true when there is no lease.
	Missing bool
	// Err is the error met reading the lease.
	Err error
}

// MemberReport is how one member cluster given on the command line answered.
type MemberReport struct {
	// Cluster is the ManagedCluster name the member was given as.
	Cluster string
	// Err is set when the member's pods could not be listed (unreachable,
	// bad kubeconfig, forbidden); then it contributed no pod row.
	Err error
	// Pods is how many of the FleetSet's pods it holds.
	Pods int
	// Lease is the member's own resync Lease
	// (v1alpha1.ResyncLeaseNamespace/ResyncLeaseName), as the member sees it.
	Lease LeaseState
	// Notes are lesser problems (nodes unreadable: zones unknown).
	Notes []string
}

// PodRow is one line of the pod table: one instance in one member cluster.
type PodRow struct {
	// Cluster is the member the pod runs in.
	Cluster string
	// Zone is the value of the FleetSet's topology key on the pod's node;
	// "" when the pod is not bound or the node is unknown.
	Zone string
	// Node is spec.nodeName; "" when the pod is not bound.
	Node string
	// Pod is the pod's name.
	Pod string
	// Ordinal is the pod's apps.kubernetes.io/pod-index label; -1 when the
	// label is missing or not a non-negative integer.
	Ordinal int64
	// Ready is the pod's Ready condition.
	Ready bool
	// Role is the pod's label fleetset.io/role (spec.roles); "" when none.
	Role string
}

// SubsetRows returns the subset rows of fs, one per spec subset in spec
// order, then one per status subset no longer in the spec. Each row takes
// the status's values; where the status has no per-domain counts for a
// subset (or no entry for the subset at all), they are computed with
// plan.For, the hub's own division, from the status's ordinal starts, and
// the row says so. If plan.For refuses the spec, only the status is used.
func SubsetRows(fs *fleetv1.FleetSet) []SubsetRow {
	reported := make(map[string]fleetv1.SubsetStatus, len(fs.Status.Subsets))
	previous := make(map[string]int32, len(fs.Status.Subsets))
	for _, ss := range fs.Status.Subsets {
		reported[ss.Name] = ss
		previous[ss.Name] = ss.OrdinalStart
	}
	planned := map[string]plan.Subset{}
	var plans []plan.Subset
	if subsets, _, err := plan.For(fs, previous); err == nil {
		plans = subsets
		for _, p := range subsets {
			planned[p.Name] = p
		}
	}
	rows := make([]SubsetRow, 0, len(fs.Spec.Topology.Subsets))
	inSpec := make(map[string]bool, len(fs.Spec.Topology.Subsets))
	for _, s := range fs.Spec.Topology.Subsets {
		inSpec[s.Name] = true
		r := SubsetRow{Name: s.Name, Home: s.Cluster, Cluster: s.Cluster}
		p, havePlan := planned[s.Name]
		if ss, ok := reported[s.Name]; ok {
			r.fromStatus(ss)
		} else if havePlan {
			r.OrdinalStart, r.Replicas, r.Partition = p.OrdinalStart, p.Replicas, p.Partition
		}
		// A relocated subset keeps its domains only where the hub knows
		// them (plan.RelocatedDomains).
		if len(r.Domains) == 0 && havePlan {
			domains := p.Domains
			if r.Cluster != r.Home {
				domains, _ = plan.RelocatedDomains(plans, p, r.Cluster)
			}
			for _, d := range domains {
				r.Domains = append(r.Domains, fleetv1.DomainStatus{Name: d.Name, Replicas: d.Replicas})
			}
			r.DomainsComputed = len(r.Domains) > 0
		}
		rows = append(rows, r)
	}
	for _, ss := range fs.Status.Subsets {
		if !inSpec[ss.Name] {
			r := SubsetRow{Name: ss.Name, Home: ss.Cluster}
			r.fromStatus(ss)
			rows = append(rows, r)
		}
	}
	return rows
}

// Instances returns every desired instance of fs, by ordinal, as the fleet
// view the hub delivers lists them (manifestwork.Instances over plan.For,
// from the status's ordinal starts): pod name, the cluster its subset runs
// in now (status.subsets[].cluster), the domain its ordinal belongs to
// (none for a subset relocated to a cluster where the hub knows none of its
// domains: plan.RelocatedDomains) and its DNS name. nil when the fleet has more than
// v1alpha1.MaxFleetViewInstances replicas; the error is plan.For's.
func Instances(fs *fleetv1.FleetSet) ([]fleetv1.FleetViewInstance, error) {
	previous := make(map[string]int32, len(fs.Status.Subsets))
	current := make(map[string]string, len(fs.Status.Subsets))
	for _, ss := range fs.Status.Subsets {
		previous[ss.Name], current[ss.Name] = ss.OrdinalStart, ss.Cluster
	}
	subsets, _, err := plan.For(fs, previous)
	if err != nil {
		return nil, err
	}
	placed := make([]manifestwork.Subset, len(subsets))
	for i, p := range subsets {
		placed[i] = manifestwork.FromPlan(p)
		if c := current[p.Name]; c != "" && c != p.Cluster {
			placed[i].Cluster = c
			placed[i].Domains, _ = plan.RelocatedDomains(subsets, p, c)
		}
	}
	return manifestwork.Instances(fs, placed)
}

// fromStatus copies a status.subsets entry into r.
func (r *SubsetRow) fromStatus(ss fleetv1.SubsetStatus) {
	r.Reported = true
	if ss.Cluster != "" {
		r.Cluster = ss.Cluster
	}
	r.OrdinalStart, r.Replicas, r.Partition = ss.OrdinalStart, ss.Replicas, ss.Partition
	r.Domains = append([]fleetv1.DomainStatus(nil), ss.Domains...)
	r.Ready, r.Updated, r.Revision = ss.ReadyReplicas, ss.UpdatedReplicas, ss.FleetRevision
	r.Rollout, r.Failover, r.Epoch = ss.Rollout, ss.Failover, ss.Epoch
}

// PodRows returns one row per pod of one member cluster. zones maps a node
// name to the value of the FleetSet's topology key on it (nil: unknown).
// Rows come in the pods' order; sort them with SortPodRows.
func PodRows(cluster string, pods []corev1.Pod, zones map[string]string) []PodRow {
	rows := make([]PodRow, 0, len(pods))
	for i := range pods {
		pod := &pods[i]
		r := PodRow{Cluster: cluster, Node: pod.Spec.NodeName, Pod: pod.Name, Ordinal: -1, Zone: zones[pod.Spec.NodeName], Role: pod.Labels[fleetv1.LabelRole]}
		if n, err := strconv.ParseInt(pod.Labels[fleetv1.LabelPodIndex], 10, 64); err == nil && n >= 0 {
			r.Ordinal = n
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				r.Ready = c.Status == corev1.ConditionTrue
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// SortPodRows sorts rows by ordinal, rows without one last, then by cluster
// and pod name (two clusters may briefly hold the same ordinal while a
// subset moves).
func SortPodRows(rows []PodRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if (a.Ordinal < 0) != (b.Ordinal < 0) {
			return b.Ordinal < 0
		}
		if a.Ordinal != b.Ordinal {
			return a.Ordinal < b.Ordinal
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Pod < b.Pod
	})
}

// HeartbeatState is a member's heartbeat Lease as read from the hub.
type HeartbeatState struct {
	// LeaseState is the Lease's renewTime (the member's clock) and its
	// leaseDurationSeconds (the member's heartbeat timeout), or why it
	// could not be read.
	LeaseState
	// State and Reason are the member's own state (InContact, Holding,
	// Fenced) and why, as it last reported them.
	State, Reason string
}
