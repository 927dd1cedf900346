package controller

import (
	"fmt"

	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/ordinals"
	"github.com/fleetset/fleetset/internal/apportion"
)

// DefaultOrdinalBlockSize is the ordinal block size, in ordinals, of a
// FleetSet that leaves spec.topology.ordinalBlockSize unset (the CRD default).
const DefaultOrdinalBlockSize = 1000

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

// Plan divides fs over its subsets and their domains and assigns the ordinal
// blocks. previous maps a subset name to the ordinalStart it held before
// (status.subsets, or the ManifestWorks' record). It returns the subsets in
// spec order, and the problems met: subsets cut to their block, infeasible
// shares. It returns an error (an InvalidSpec problem naming the field) when
// fs cannot be divided at all; then it returns no plan.
func Plan(fs *fleetv1.FleetSet, previous map[string]int32) ([]manifestwork.SubsetPlan, []Problem, error) {
	spec := &fs.Spec
	if len(spec.Topology.Subsets) == 0 {
		return nil, nil, fmt.Errorf("spec.topology.subsets: must not be empty")
	}
	block := spec.Topology.OrdinalBlockSize
	if block == 0 {
		block = DefaultOrdinalBlockSize
	}
	in := make([]ordinals.Subset, len(spec.Topology.Subsets))
	shares := make([]apportion.Share, len(spec.Topology.Subsets))
	for i, s := range spec.Topology.Subsets {
		if s.Cluster == "" {
			return nil, nil, fmt.Errorf("spec.topology.subsets[%d].cluster: must not be empty", i)
		}
		in[i].Name = s.Name
		if p, ok := previous[s.Name]; ok {
			in[i].Previous = ptr.To(p)
		}
		shares[i] = apportion.Share{Name: s.Name, Replicas: s.Replicas, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
	}
	blocks, err := ordinals.Assign(block, in)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.topology.subsets: %w", err)
	}
	div, err := apportion.Divide(spec.Replicas, shares)
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
	plan := make([]manifestwork.SubsetPlan, len(spec.Topology.Subsets))
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
		sp := manifestwork.SubsetPlan{
			Name:         s.Name,
			Cluster:      s.Cluster,
			OrdinalStart: blocks[i].Start,
			BlockSize:    block,
			Replicas:     replicas,
			Partition:    partitions[s.Name],
		}
		if len(s.Domains) > 0 {
			ds := make([]apportion.Share, len(s.Domains))
			for j, d := range s.Domains {
				ds[j] = apportion.Share{Name: d.Name, Replicas: d.Replicas}
			}
			dd, err := apportion.Divide(replicas, ds)
			if err != nil {
				return nil, nil, fmt.Errorf("spec.topology.subsets[%d].domains: %w", i, err)
			}
			for _, u := range dd.Unmet {
				problems = append(problems, Problem{Reason: fleetv1.ReasonDivisionInfeasible, Subset: s.Name, Cluster: s.Cluster,
					Message: fmt.Sprintf("spec.topology.subsets[%d].domains: %s", i, u)})
			}
			for j, a := range dd.Assignments {
				sp.Domains = append(sp.Domains, manifestwork.DomainPlan{Name: s.Domains[j].Name, Share: s.Domains[j].Replicas, Replicas: a.Replicas})
			}
		}
		plan[i] = sp
	}
	return plan, problems, nil
}
