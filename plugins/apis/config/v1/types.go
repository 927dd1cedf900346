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
