package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WhenUnsatisfiable says what fleetset-scheduler does when a pod cannot be
// placed in the domain its ordinal maps to.
// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
type WhenUnsatisfiable string

const (
	// DoNotSchedule keeps the pod Pending until a node in its ordinal's domain
	// fits. This is what keeps a re-created pod next to its zonal volume.
	DoNotSchedule WhenUnsatisfiable = "DoNotSchedule"
	// ScheduleAnyway lets the pod land in any of the placement's domains,
	// preferring its ordinal's domain when scoring.
	ScheduleAnyway WhenUnsatisfiable = "ScheduleAnyway"
)

// PlacementDomain is one value of the placement's topology key.
type PlacementDomain struct {
	// Name is the value of the topology key on the domain's nodes, e.g. "zone-a".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="name must be a valid label value (alphanumerics, '-', '_', '.', starting and ending alphanumeric)"
	Name string `json:"name"`

	// Replicas is how many of the subset's instances this domain holds. When
	// no domain sets it, the domains share the instances equally; a domain
	// without it in a placement where others set it holds none.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// SubsetPlacementSpec is the placement of one StatefulSet's pods over the
// domains of one cluster.
// +kubebuilder:validation:XValidation:rule="self.domains.all(d, !has(d.replicas)) || self.domains.exists(d, has(d.replicas) && d.replicas > 0)",message="domains: when replicas are given, at least one domain must have replicas > 0"
type SubsetPlacementSpec struct {
	// TopologyKey is the node label whose values name the domains.
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="topologyKey must be a qualified label key such as topology.kubernetes.io/zone"
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`

	// Domains are the domains pods may land in, in the order ordinals are
	// dealt to them. Names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Domains []PlacementDomain `json:"domains"`

	// NodeSelector further restricts the nodes pods may use; it is ANDed with
	// the domains. Same semantics as a required node affinity.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// OrdinalStart is the first ordinal of the StatefulSet (its
	// spec.ordinals.start); the pod with ordinal OrdinalStart+k is offset k.
	// +kubebuilder:validation:Minimum=0
	// +optional
	OrdinalStart int32 `json:"ordinalStart,omitempty"`

	// WhenUnsatisfiable says whether a pod must land in its ordinal's domain
	// (DoNotSchedule) or only prefers it (ScheduleAnyway).
	// +kubebuilder:default=DoNotSchedule
	// +optional
	WhenUnsatisfiable WhenUnsatisfiable `json:"whenUnsatisfiable,omitempty"`
}

// SubsetPlacement is the input of fleetset-scheduler for one StatefulSet: the
// domains its pods may use and how many instances each domain holds. Pods
// select it with the label fleetset.io/placement=<name>. It is written by
// fleetset-hub, or by hand in a single cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=splace,categories=fleet
// +kubebuilder:printcolumn:name="TOPOLOGY-KEY",type=string,JSONPath=`.spec.topologyKey`
// +kubebuilder:printcolumn:name="DOMAINS",type=string,JSONPath=`.spec.domains[*].name`
// +kubebuilder:printcolumn:name="ORDINAL-START",type=integer,JSONPath=`.spec.ordinalStart`
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.whenUnsatisfiable`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type SubsetPlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SubsetPlacementSpec `json:"spec"`
}

// SubsetPlacementList is a list of SubsetPlacements.
// +kubebuilder:object:root=true
type SubsetPlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SubsetPlacement `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SubsetPlacement{}, &SubsetPlacementList{})
}
