package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DefaultOrdinalBlockSize is spec.topology.ordinalBlockSize, in ordinals,
// when unset (the CRD's default marker repeats it: markers cannot name a
// constant).
const DefaultOrdinalBlockSize int32 = 1000

// OrdinalBlockSizeOrDefault returns OrdinalBlockSize, or
// DefaultOrdinalBlockSize when it is 0 (an object not defaulted by the
// apiserver, e.g. in a unit test).
func (t *FleetTopology) OrdinalBlockSizeOrDefault() int32 {
	if t.OrdinalBlockSize == 0 {
		return DefaultOrdinalBlockSize
	}
	return t.OrdinalBlockSize
}

// OrdinalBlockSizeOrDefault returns OrdinalBlockSize, or
// DefaultOrdinalBlockSize when it is 0.
func (s *SubsetPlacementSpec) OrdinalBlockSizeOrDefault() int32 {
	if s.OrdinalBlockSize == 0 {
		return DefaultOrdinalBlockSize
	}
	return s.OrdinalBlockSize
}

// TopologyKeyOrDefault returns key, or DefaultTopologyKey when key is empty;
// the hub and the scheduler default a FleetSet's or a SubsetPlacement's
// topologyKey with it.
func TopologyKeyOrDefault(key string) string {
	if key == "" {
		return DefaultTopologyKey
	}
	return key
}

// Defaults of optional FleetSet fields that the CRD leaves unset (a pointer
// left nil, so that "unset" stays visible in the object). Every reader
// resolves them through the accessors below, never with its own literal.
const (
	// DefaultTolerationSeconds is spec.failover.tolerationSeconds, in
	// seconds, when unset.
	DefaultTolerationSeconds int32 = 300
	// DefaultProgressDeadlineSeconds is
	// spec.updateStrategy.rollingUpdate.progressDeadlineSeconds, in seconds,
	// when unset.
	DefaultProgressDeadlineSeconds int32 = 600
	// DefaultMaxUnavailable is spec.updateStrategy.rollingUpdate.maxUnavailable,
	// in instances, when unset.
	DefaultMaxUnavailable int32 = 1
	// DefaultMaxConcurrentSubsets is
	// spec.updateStrategy.rollingUpdate.maxConcurrentSubsets when unset.
	DefaultMaxConcurrentSubsets int32 = 1
)

// TolerationSecondsOrDefault returns f.TolerationSeconds, or
// DefaultTolerationSeconds when f or the field is nil; in seconds.
func (f *Failover) TolerationSecondsOrDefault() int32 {
	if f == nil || f.TolerationSeconds == nil {
		return DefaultTolerationSeconds
	}
	return *f.TolerationSeconds
}

// ProgressDeadlineSecondsOrDefault returns r.ProgressDeadlineSeconds, or
// DefaultProgressDeadlineSeconds when r or the field is nil; in seconds.
func (r *RollingUpdateFleetSet) ProgressDeadlineSecondsOrDefault() int32 {
	if r == nil || r.ProgressDeadlineSeconds == nil {
		return DefaultProgressDeadlineSeconds
	}
	return *r.ProgressDeadlineSeconds
}

// MaxConcurrentSubsetsOrDefault returns r.MaxConcurrentSubsets, or
// DefaultMaxConcurrentSubsets when r or the field is nil.
func (r *RollingUpdateFleetSet) MaxConcurrentSubsetsOrDefault() int32 {
	if r == nil || r.MaxConcurrentSubsets == nil {
		return DefaultMaxConcurrentSubsets
	}
	return *r.MaxConcurrentSubsets
}

// TerminationGracePeriodSecondsOrDefault returns the pod template's
// terminationGracePeriodSeconds, or the API's default (30 s,
// corev1.DefaultTerminationGracePeriodSeconds) when unset; in seconds.
func (s *FleetSetSpec) TerminationGracePeriodSecondsOrDefault() int64 {
	if g := s.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// DefaultPodManagementPolicy is spec.podManagementPolicy when unset: a pod
// held Pending in a full domain must not block the other domains'
// instances, as OrderedReady would.
const DefaultPodManagementPolicy = appsv1.ParallelPodManagement

// PodManagementPolicyOrDefault returns spec.podManagementPolicy, or
// DefaultPodManagementPolicy when unset.
func (s *FleetSetSpec) PodManagementPolicyOrDefault() appsv1.PodManagementPolicyType {
	if s.PodManagementPolicy == "" {
		return DefaultPodManagementPolicy
	}
	return s.PodManagementPolicy
}

// DefaultPodSecurityLevel is the level of a hub namespace without the label
// LabelPodSecurityLevel (and so of a FleetSet there without
// spec.podSecurityLevel).
const DefaultPodSecurityLevel = PodSecurityBaseline

// PodSecurityLevelOrDefault returns spec.podSecurityLevel, or
// DefaultPodSecurityLevel when unset. It ignores the namespace's platform
// level: the hub uses tenancy.EffectiveLevel.
func (s *FleetSetSpec) PodSecurityLevelOrDefault() PodSecurityLevel {
	if s.PodSecurityLevel == "" {
		return DefaultPodSecurityLevel
	}
	return s.PodSecurityLevel
}

// DeletionPolicyOrDefault returns spec.deletionPolicy, or its default when
// unset: Retain when the spec has volumeClaimTemplates (data is kept), else
// Delete.
func (s *FleetSetSpec) DeletionPolicyOrDefault() DeletionPolicy {
	switch {
	case s.DeletionPolicy != "":
		return s.DeletionPolicy
	case len(s.VolumeClaimTemplates) > 0:
		return DeletionRetain
	}
	return DeletionDelete
}

// DependenciesOrDefault returns spec.dependencies, DependenciesAuto when
// unset.
func (s *FleetSetSpec) DependenciesOrDefault() DependenciesPolicy {
	if s.Dependencies == "" {
		return DependenciesAuto
	}
	return s.Dependencies
}
