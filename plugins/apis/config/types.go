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
