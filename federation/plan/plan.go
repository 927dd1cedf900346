// Package plan is the hub's pure decision for a FleetSet: the division of
// its replicas over subsets and their domains (internal/apportion) and the
// subsets' ordinal blocks (federation/ordinals), with the problems met. It
// reads only the FleetSet; the renderer (federation/manifestwork) turns a
// plan into ManifestWorks.
package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/ordinals"
	"github.com/fleetset/fleetset/internal/apportion"
)

// Domain is one domain of a subset: its share, as the FleetSet gives it,
// and the replicas division gives it at the subset's current size.
type Domain struct {
	// Name of the domain (a value of the topology key).
	Name string
	// Share is the domain's spec.topology.subsets[].domains[].replicas (nil:
	// an even share of the rest); the SubsetPlacement carries it unchanged.
	Share *intstr.IntOrString
	// Replicas division gave the domain (for status).
	Replicas int32
}

// Subset is the hub's decision for one subset: where it runs, its ordinal
// block, its replicas and partition, and its domains.
type Subset struct {
	// Name of the subset.
	Name string
	// Cluster is the ManagedCluster running it.
	Cluster string
	// OrdinalStart is the first ordinal of its block; BlockSize the block's
	// length, in ordinals.
	OrdinalStart int32
	BlockSize    int32
	// Replicas is the subset's desired replicas (≤ BlockSize).
	Replicas int32
	// Partition is how many of its lowest instances stay on the old revision.
	Partition int32
	// Revision is the subset revision (FleetSet
	// status.subsets[].revision): a hash of Template, Claims and
	// DependenciesHash, stamped on the StatefulSet as
	// v1alpha1.AnnotationRevision; empty: no annotation.
	Revision string
	// Domains in spec order; empty when the subset names no domain.
	Domains []Domain
	// NodeSelector is the subset's spec.topology.subsets[].nodeSelector.
	NodeSelector *corev1.NodeSelector
	// Epoch is the subset's fencing epoch (failover), for the fleet view.
	Epoch int64
	// Fencing, when set, is delivered as the SubsetPlacement's spec.fencing
	// (failover policy Relocate).
	Fencing *fleetv1.PlacementFencing
	// Template and Claims are the subset's pod template and volume claim
	// templates after its overrides (manifestwork.SubsetTemplate); nil: the
	// fleet's spec.template and spec.volumeClaimTemplates.
	Template *corev1.PodTemplateSpec
	Claims   []corev1.PersistentVolumeClaim
	// Dependencies are the ConfigMaps and Secrets delivered with the subset
	// (manifestwork.Dependency), sorted by kind and name; DependenciesHash
	// is their manifestwork.DependenciesHash.
	Dependencies     []runtime.Object
	DependenciesHash string
	// Roles is the role of each of its running instances, by pod name, and
	// Leaders the pods holding the leader role, as its member last reported
	// (spec.roles); for the fleet view.
	Roles   map[string]string
	Leaders []string
	// Update is the instruction of a role-ordered rollout for its member
	// (SubsetPlacement spec.update); nil outside one.
	Update *fleetv1.PlacementUpdate
}

// Problem is one thing that keeps a FleetSet from being delivered as
// specified; it becomes part of the Degraded condition and a Warning event.
type Problem struct {
	// Reason is one of the v1alpha1 Reason constants.
	Reason string
	// Subset and Cluster name what is affected; empty when the whole FleetSet is.
	Subset, Cluster string
	// Message says what is wrong, naming the field when the spec is at fault.
	Message string
}

// String returns "subset <s> on cluster <c>: <message>".
func (p Problem) String() string {
	switch {
	case p.Subset != "" && p.Cluster != "":
		return fmt.Sprintf("subset %s on cluster %s: %s", p.Subset, p.Cluster, p.Message)
	case p.Subset != "":
		return fmt.Sprintf("subset %s: %s", p.Subset, p.Message)
	case p.Cluster != "":
		return fmt.Sprintf("cluster %s: %s", p.Cluster, p.Message)
	}
	return p.Message
}

// For divides fs over its subsets and their domains and assigns the ordinal
// blocks. previous maps a subset name to the ordinalStart it held before
// (status.subsets, or the ManifestWorks' record). It returns the subsets in
// spec order, and the problems met: subsets cut to their block, infeasible
// shares. It returns an error (an InvalidSpec problem naming the field) when
// fs cannot be divided at all; then it returns no plan.
func For(fs *fleetv1.FleetSet, previous map[string]int32) ([]Subset, []Problem, error) {
	spec := &fs.Spec
	if len(spec.Topology.Subsets) == 0 {
		return nil, nil, fmt.Errorf("spec.topology.subsets: must not be empty")
	}
	block := spec.Topology.OrdinalBlockSizeOrDefault()
	in := make([]ordinals.Subset, len(spec.Topology.Subsets))
	for i, s := range spec.Topology.Subsets {
		if s.Cluster == "" {
			return nil, nil, fmt.Errorf("spec.topology.subsets[%d].cluster: must not be empty", i)
		}
		in[i].Name = s.Name
		if p, ok := previous[s.Name]; ok {
			in[i].Previous = ptr.To(p)
		}
	}
	blocks, err := ordinals.Assign(block, in)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.topology.subsets: %w", err)
	}
	div, err := apportion.Divide(spec.Replicas, apportion.SubsetShares(spec.Topology.Subsets))
	if err != nil {
		return nil, nil, fmt.Errorf("spec.topology.subsets: %w", err)
	}
	var problems []Problem
	if len(div.Unmet) > 0 {
		for _, u := range div.Unmet {
			problems = append(problems, Problem{Reason: fleetv1.ReasonDivisionInfeasible, Message: "spec.topology.subsets: " + u})
		}
	}
	var partitions map[string]int32
	if spec.UpdateStrategy.ManualUpdate != nil {
		partitions = spec.UpdateStrategy.ManualUpdate.Partitions
	}
	out := make([]Subset, len(spec.Topology.Subsets))
	for i, s := range spec.Topology.Subsets {
		replicas, cut := ordinals.Clamp(div.Assignments[i].Replicas, block)
		if cut {
			problems = append(problems, Problem{Reason: fleetv1.ReasonOrdinalBlockFull, Subset: s.Name, Cluster: s.Cluster,
				Message: fmt.Sprintf("division gave %d replicas, cut to spec.topology.ordinalBlockSize %d", div.Assignments[i].Replicas, block)})
		}
		if blocks[i].Reassigned {
			problems = append(problems, Problem{Reason: fleetv1.ReasonOrdinalBlockFull, Subset: s.Name, Cluster: s.Cluster,
				Message: fmt.Sprintf("recorded ordinalStart %d is not a free block of %d; moved to %d", previous[s.Name], block, blocks[i].Start)})
		}
		sp := Subset{
			Name:         s.Name,
			Cluster:      s.Cluster,
			OrdinalStart: blocks[i].Start,
			BlockSize:    block,
			Replicas:     replicas,
			Partition:    partitions[s.Name],
			NodeSelector: s.NodeSelector.DeepCopy(),
		}
		if len(s.Domains) > 0 {
			dd, err := apportion.Divide(replicas, apportion.DomainShares(s.Domains))
			if err != nil {
				return nil, nil, fmt.Errorf("spec.topology.subsets[%d].domains: %w", i, err)
			}
			for _, u := range dd.Unmet {
				problems = append(problems, Problem{Reason: fleetv1.ReasonDivisionInfeasible, Subset: s.Name, Cluster: s.Cluster,
					Message: fmt.Sprintf("spec.topology.subsets[%d].domains: %s", i, u)})
			}
			for j, a := range dd.Assignments {
				sp.Domains = append(sp.Domains, Domain{Name: s.Domains[j].Name, Share: s.Domains[j].Replicas, Replicas: a.Replicas})
			}
		}
		out[i] = sp
	}
	return out, problems, nil
}

// RelocatedDomains returns the domains subset s keeps while it runs in
// cluster, a cluster other than its home (failover relocation): its own,
// so that every ordinal keeps its zone, when the subsets homed in cluster
// (subsets as For returns them, each at its spec cluster) name every one
// of them; otherwise nil (the fallback cluster's domains are unknown, so
// the subset is spread only there) and the first of s's domains that none
// of them names.
func RelocatedDomains(subsets []Subset, s Subset, cluster string) ([]Domain, string) {
	known := map[string]bool{}
	for _, o := range subsets {
		if o.Cluster == cluster {
			for _, d := range o.Domains {
				known[d.Name] = true
			}
		}
	}
	for _, d := range s.Domains {
		if !known[d.Name] {
			return nil, d.Name
		}
	}
	return s.Domains, ""
}
