package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OrdinalSpreadArgs are the args of the OrdinalSpread score plugin.
//
// +kubebuilder:object:root=true
type OrdinalSpreadArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DomainWeight is the part of the node score, out of 100, given to nodes
	// in the domain the pod's ordinal maps to (default 60); the rest rewards
	// nodes holding fewer pods of the same set.
	DomainWeight *int32 `json:"domainWeight,omitempty"`
}

// LocalityMetadata says where a bound pod of a SubsetPlacement carries its
// locality: its ordinal's domain (fleetset.io/domain) and its placement's
// cluster (fleetset.io/cluster).
type LocalityMetadata string

const (
	// LocalityLabelsAndAnnotations (the default): PreBind patches the pod's
	// labels, and the Binding sets the same keys as annotations. Costs one
	// pod PATCH per pod; the labels can be selected on.
	LocalityLabelsAndAnnotations LocalityMetadata = "LabelsAndAnnotations"
	// LocalityAnnotations: the Binding alone sets them, as annotations, in
	// the same write that sets spec.nodeName (the apiserver copies a
	// Binding's annotations onto the pod). No PATCH; the pods carry no
	// locality labels, and workloads read
	// metadata.annotations['fleetset.io/domain'].
	LocalityAnnotations LocalityMetadata = "Annotations"
)

// SubsetPlacementArgs are the args of the SubsetPlacement plugin.
//
// +kubebuilder:object:root=true
type SubsetPlacementArgs struct {
	metav1.TypeMeta `json:",inline"`

	// LocalityMetadata says where a bound pod carries its locality:
	// LabelsAndAnnotations (default) or Annotations.
	LocalityMetadata LocalityMetadata `json:"localityMetadata,omitempty"`
}
