package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OrdinalSpreadArgs are the args of the OrdinalSpread score plugin.
//
// +kubebuilder:object:root=true
type OrdinalSpreadArgs struct {
	metav1.TypeMeta

	// DomainWeight is the part of the node score, out of 100, given to nodes
	// in the domain the pod's ordinal maps to; the other 100-DomainWeight
	// rewards nodes holding fewer pods of the same set. Above 50 the
	// ordinal's domain always wins over the spread.
	DomainWeight int32
}

// LocalityMetadata says where a bound pod of a SubsetPlacement carries its
// locality: its ordinal's domain (fleetset.io/domain) and its placement's
// cluster (fleetset.io/cluster).
type LocalityMetadata string

const (
	// LocalityLabelsAndAnnotations: PreBind patches the pod's labels, and the
	// Binding sets the same keys as annotations. One pod PATCH per pod.
	LocalityLabelsAndAnnotations LocalityMetadata = "LabelsAndAnnotations"
	// LocalityAnnotations: the Binding alone sets them, as annotations, in
	// the same write that sets spec.nodeName. No PATCH; the pods carry no
	// locality labels.
	LocalityAnnotations LocalityMetadata = "Annotations"
)

// SubsetPlacementArgs are the args of the SubsetPlacement plugin.
//
// +kubebuilder:object:root=true
type SubsetPlacementArgs struct {
	metav1.TypeMeta

	// LocalityMetadata says where a bound pod carries its locality.
	LocalityMetadata LocalityMetadata
}
