// Package plan is the hub's pure decision for a FleetSet: the division of
// its replicas over subsets and their domains (internal/apportion) and the
// subsets' ordinal blocks (federation/ordinals), with its findings. It
// reads only the FleetSet; the renderer (federation/manifestwork) turns a
// plan into ManifestWorks.
package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

// Subset is one subset as For divides it: its cluster, ordinal block,
// replicas, manual partition, domains and node selector.
type Subset struct {
	// Name of the subset.
	Name string
	// Cluster is the ManagedCluster running it (its spec cluster, from For).
	Cluster string
	// OrdinalStart is the first ordinal of its block; BlockSize the block's
	// length, in ordinals.
	OrdinalStart int32
	BlockSize    int32
	// Replicas is the subset's desired replicas (≤ BlockSize).
	Replicas int32
	// Partition is how many of its lowest instances stay on the old revision.
	Partition int32
	// Domains in spec order; empty when the subset names no domain.
	Domains []Domain
	// NodeSelector is the subset's spec.topology.subsets[].nodeSelector.
	NodeSelector *corev1.NodeSelector
}

// Finding is one way For could not follow the spec to the letter (a share
// it cannot meet, a subset cut to its block, a block moved); the hub reports
// it as a problem.
type Finding struct {
	// Reason is one of the v1alpha1 Reason constants.
	Reason string
	// Subset and Cluster name what is affected; empty when the whole FleetSet is.
	Subset, Cluster string
	// Message says what is wrong, naming the spec field.
	Message string
}

// For divides fs over its subsets and their domains and assigns the ordinal
// blocks. previous maps a subset name to the ordinalStart it held before
// (status.subsets, or the ManifestWorks' record). It returns the subsets in
// spec order, and its findings: subsets cut to their block, infeasible
// shares. A subset on a cluster of spec.topology.cordonedClusters takes no
// more replicas than status records for it there (subsetShares). It returns an error naming the field when fs cannot be divided at
// all; then it returns no plan.
func For(fs *fleetv1.FleetSet, previous map[string]int32) ([]Subset, []Finding, error) {
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
	shares, problems := subsetShares(fs)
	div, err := apportion.Divide(spec.Replicas, shares)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.topology.subsets: %w", err)
	}
	if len(div.Unmet) > 0 {
		for _, u := range div.Unmet {
			problems = append(problems, Finding{Reason: fleetv1.ReasonDivisionInfeasible, Message: "spec.topology.subsets: " + u})
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
			problems = append(problems, Finding{Reason: fleetv1.ReasonOrdinalBlockFull, Subset: s.Name, Cluster: s.Cluster,
				Message: fmt.Sprintf("division gave %d replicas, cut to spec.topology.ordinalBlockSize %d", div.Assignments[i].Replicas, block)})
		}
		if blocks[i].Reassigned {
			problems = append(problems, Finding{Reason: fleetv1.ReasonOrdinalBlockFull, Subset: s.Name, Cluster: s.Cluster,
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
				problems = append(problems, Finding{Reason: fleetv1.ReasonDivisionInfeasible, Subset: s.Name, Cluster: s.Cluster,
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
