package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Per-subset overrides, delivered dependencies and the fleet-wide
// disruption budget.
//
// A subset's StatefulSet is rendered from the fleet's spec in this order,
// each step over the result of the one before (docs/hub.md#per-subset-overrides):
//
//  1. spec.template and spec.volumeClaimTemplates;
//  2. the subset's first-class overrides: imageRegistryRewrites (every
//     container's and init container's image), containerResources,
//     tolerations (appended), storageClassNames (per claim template);
//  3. the subset's patch, a strategic merge patch of the pod template;
//  4. what fleetset owns, whatever the steps before say: schedulerName
//     fleetset-scheduler and the fleetset.io/ labels.
//
// The subset's revision is a hash of the result of steps 1-3 and of the
// content of the dependencies it delivers, so changing one subset's
// overrides rolls that subset only, through the fleet's RollingUpdate.

// ImageRegistryRewrite replaces the registry prefix of container images.
type ImageRegistryRewrite struct {
	// From is the prefix of fully qualified image references to rewrite,
	// such as "docker.io" or "registry.example.com/team". References are
	// normalised first ("nginx:1.27" is "docker.io/library/nginx:1.27"). The
	// prefix matches whole path components only.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	From string `json:"from"`
	// To replaces From, such as "mirror.east.example.com/docker-hub".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	To string `json:"to"`
}

// ContainerResources overrides one container's resources.
type ContainerResources struct {
	// Name of a container or init container of spec.template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Resources replace the container's requests and limits (each resource
	// named here replaces the template's value of it; others are kept).
	Resources corev1.ResourceRequirements `json:"resources"`
}

// ClaimStorageClass gives one volume claim template its storage class in
// one subset.
type ClaimStorageClass struct {
	// Claim is the metadata.name of an entry of spec.volumeClaimTemplates.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Claim string `json:"claim"`
	// StorageClassName is the StorageClass of the subset's claims made from
	// that template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName string `json:"storageClassName"`
}

// DependenciesPolicy says whether the hub delivers the ConfigMaps and
// Secrets the pod template references.
// +kubebuilder:validation:Enum=Auto;None
type DependenciesPolicy string

const (
	// DependenciesAuto: every ConfigMap and Secret that spec.template (after
	// each subset's overrides) references by name — volumes, projected
	// volume sources, envFrom, env valueFrom — is read from the FleetSet's
	// namespace on the hub and delivered with each subset's work; their
	// content is part of the subset revision, so an edit rolls the fleet. A
	// reference marked optional that does not exist is skipped; any other
	// missing one holds the FleetSet (Degraded DependencyMissing).
	DependenciesAuto DependenciesPolicy = "Auto"
	// DependenciesNone: nothing but the workload is delivered; the
	// referenced objects must exist in every member.
	DependenciesNone DependenciesPolicy = "None"
)

// DisruptionBudget is the fleet-wide budget of voluntary disruptions
// (evictions: node drains, cluster autoscalers).
type DisruptionBudget struct {
	// MaxUnavailable is the most instances, fleet-wide, that evictions may
	// leave unavailable: an integer, or a percent of spec.replicas rounded
	// down. The hub divides it over the subsets by the seat sequence it
	// divides replicas with (in proportion to their replicas), and renders
	// one PodDisruptionBudget per subset with its part, so the parts never
	// sum over the fleet's budget. A subset whose part is 0 refuses every
	// eviction.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnavailable must be a non-negative integer or a percent between 0% and 100%"
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`
}
