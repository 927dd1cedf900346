package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Roles: which instance is the primary (the leader) and which follow, as
// KubeBlocks InstanceSet models them. Each instance's role is a pod label,
// LabelRole, written by fleetset-scheduler's member component from the
// FleetSet's roleProbe, or by the workload itself when there is no probe
// (the label contract, docs/hub.md#roles). The member component sums the
// roles of each subset up in its SubsetPlacement's status, which the work
// agent feeds back to the hub: FleetSet status.leader, the Degraded reasons
// NoLeader and MultipleLeaders, and the fleet view's roles come from there.

// RoleAccessMode is what a role serves.
// +kubebuilder:validation:Enum=ReadWrite;ReadOnly;None
type RoleAccessMode string

const (
	AccessReadWrite RoleAccessMode = "ReadWrite"
	AccessReadOnly  RoleAccessMode = "ReadOnly"
	AccessNone      RoleAccessMode = "None"
)

// Role is one role an instance may hold.
type Role struct {
	// Name of the role, the value of the pod label fleetset.io/role, such
	// as "primary" or "replica".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="name must be a valid label value"
	Name string `json:"name"`
	// AccessMode is what instances of the role serve (label
	// fleetset.io/access-mode): ReadWrite, ReadOnly or None (default).
	// +kubebuilder:default=None
	// +optional
	AccessMode RoleAccessMode `json:"accessMode,omitempty"`
	// IsLeader marks the leader role; at most one role is the leader, and
	// the fleet should have exactly one instance holding it.
	// +optional
	IsLeader bool `json:"isLeader,omitempty"`
	// UpdatePriority orders a rollout by role: lower first. The leader goes
	// last whatever its priority.
	// +kubebuilder:validation:Minimum=0
	// +optional
	UpdatePriority int32 `json:"updatePriority,omitempty"`
}

// RoleProbe says how fleetset's member component learns an instance's role.
type RoleProbe struct {
	// HTTPGet asks every running instance GET http://<pod IP>:<port><path>;
	// the response body (trimmed) is the role name.
	HTTPGet RoleProbeHTTPGet `json:"httpGet"`
	// PeriodSeconds between two probes of an instance. Default 5.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// TimeoutSeconds of one probe. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// FailureThreshold is how many probes in a row must fail before a
	// Warning event says so; the instance keeps its last role label until a
	// probe answers again. Default 3.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// RoleProbeHTTPGet is the role probe's request.
type RoleProbeHTTPGet struct {
	// Port of the instance's container.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// Path of the request. Default "/role".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must start with /"
	// +optional
	Path string `json:"path,omitempty"`
}

// RoleService is a Service, in every member cluster, selecting the
// FleetSet's instances of one role (or one access mode) there.
// +kubebuilder:validation:XValidation:rule="has(self.role) != has(self.accessMode)",message="set exactly one of role and accessMode"
type RoleService struct {
	// Name of the Service, a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="name must be a DNS-1035 label"
	Name string `json:"name"`
	// Role selects the instances holding this role (one of spec.roles).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Role string `json:"role,omitempty"`
	// AccessMode selects the instances whose role has this access mode.
	// +optional
	AccessMode RoleAccessMode `json:"accessMode,omitempty"`
	// Ports of the Service.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Ports []corev1.ServicePort `json:"ports"`
}

// LeaderStatus is the instance holding the leader role.
type LeaderStatus struct {
	// Name of the pod; Subset and Cluster where it runs.
	Name    string `json:"name"`
	Subset  string `json:"subset"`
	Cluster string `json:"cluster"`
}

// PlacementRoles is what a SubsetPlacement carries of the FleetSet's roles,
// for the member component.
type PlacementRoles struct {
	// Roles are the FleetSet's spec.roles.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Roles []Role `json:"roles"`
	// Probe is the FleetSet's spec.roleProbe; nil: the workload labels its
	// pods itself.
	// +optional
	Probe *RoleProbe `json:"probe,omitempty"`
}

// SubsetPlacementStatus is written by fleetset-scheduler's member component.
type SubsetPlacementStatus struct {
	// Roles lists the role of each running instance of the placement's
	// StatefulSet that holds one of spec.roles, as "<pod>=<role>" sorted
	// by pod name and joined by commas (a string, so that OCM's work agent
	// can feed it back with a JSONPath).
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	Roles string `json:"roles,omitempty"`
	// Leaders lists the pods holding the leader role, joined by commas.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Leaders string `json:"leaders,omitempty"`
	// UpdatedLeaders lists those of Leaders that run the StatefulSet's
	// status.updateRevision (label controller-revision-hash), joined by
	// commas: a role-ordered rollout defers a leader only while it is
	// outdated.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	UpdatedLeaders string `json:"updatedLeaders,omitempty"`
	// ObservedGeneration is the placement generation the roles were
	// summed up for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Actions is the member component's report of the lifecycle actions
	// the hub waits for (lifecycle.go).
	// +optional
	Actions *PlacementActionsStatus `json:"actions,omitempty"`
}

// Role labels on pods.
const (
	// LabelRole is an instance's role (a spec.roles name).
	LabelRole = "fleetset.io/role"
	// LabelAccessMode is its role's access mode.
	LabelAccessMode = "fleetset.io/access-mode"
)

// RoleProbe defaults.
const (
	DefaultRoleProbePeriodSeconds    int32 = 5
	DefaultRoleProbeTimeoutSeconds   int32 = 1
	DefaultRoleProbeFailureThreshold int32 = 3
	DefaultRoleProbePath                   = "/role"
)

// PeriodSecondsOrDefault returns PeriodSeconds, or the default when 0.
func (p *RoleProbe) PeriodSecondsOrDefault() int32 {
	if p.PeriodSeconds == 0 {
		return DefaultRoleProbePeriodSeconds
	}
	return p.PeriodSeconds
}

// TimeoutSecondsOrDefault returns TimeoutSeconds, or the default when 0.
func (p *RoleProbe) TimeoutSecondsOrDefault() int32 {
	if p.TimeoutSeconds == 0 {
		return DefaultRoleProbeTimeoutSeconds
	}
	return p.TimeoutSeconds
}

// FailureThresholdOrDefault returns FailureThreshold, or the default when 0.
func (p *RoleProbe) FailureThresholdOrDefault() int32 {
	if p.FailureThreshold == 0 {
		return DefaultRoleProbeFailureThreshold
	}
	return p.FailureThreshold
}

// PathOrDefault returns the probe's path, "/role" when unset.
func (g *RoleProbeHTTPGet) PathOrDefault() string {
	if g.Path == "" {
		return DefaultRoleProbePath
	}
	return g.Path
}

// SwitchoverPolicy says what a role-ordered rollout does when the leader
// does not hand its role over before the deadline.
// +kubebuilder:validation:Enum=Required;BestEffort
type SwitchoverPolicy string

const (
	// SwitchoverRequired holds the rollout before the leader until the
	// leader role has moved (Progressing RolloutBlocked, reason in the
	// message; a SwitchoverHeld event).
	SwitchoverRequired SwitchoverPolicy = "Required"
	// SwitchoverBestEffort updates the old leader after the deadline
	// anyway (a SwitchoverSkipped event).
	SwitchoverBestEffort SwitchoverPolicy = "BestEffort"
)

// Switchover says how a role-ordered rollout asks the leader to hand its
// role to an updated instance before the leader is updated: fleetset's
// member component annotates the leader pod AnnotationSwitchoverRequested
// (the request the workload answers by moving the leader role, e.g. a
// Patroni switchover), then waits up to DeadlineSeconds for the leader
// role to move.
type Switchover struct {
	// Policy: BestEffort (default) or Required.
	// +kubebuilder:default=BestEffort
	// +optional
	Policy SwitchoverPolicy `json:"policy,omitempty"`
	// DeadlineSeconds to wait for the leader role to move. Default 60.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	DeadlineSeconds int32 `json:"deadlineSeconds,omitempty"`
}

// AnnotationSwitchoverRequested on the leader pod, set by the member
// component when the rollout reaches the leader (value: the time of the
// request, RFC 3339): the workload should move the leader role to another
// instance. It is removed when the pod is replaced.
const AnnotationSwitchoverRequested = "fleetset.io/switchover-requested"

// DefaultSwitchoverDeadlineSeconds is switchover.deadlineSeconds when unset.
const DefaultSwitchoverDeadlineSeconds int32 = 60

// AnnotationSwitchoverTo on a FleetSet asks for a switchover of its leader
// now, outside any rollout (kubectl fleetset switchover): to the instance
// (pod name) it names, or SwitchoverToAny to let the workload choose. The
// hub has the member of the leader's cluster run the FleetSet's switchover
// lifecycle action in the leader once (status.requestedSwitchover), then
// removes the annotation when the leader role has moved, or when
// spec.switchover.deadlineSeconds passed without it (a Warning event).
const AnnotationSwitchoverTo = "fleetset.io/switchover-to"

// SwitchoverToAny is AnnotationSwitchoverTo's value that lets the workload
// choose the new leader (the action runs with no candidate).
const SwitchoverToAny = "*"

// RequestedSwitchoverStatus is the switchover an operator asked for with
// AnnotationSwitchoverTo, while the hub waits for the leader role to move.
type RequestedSwitchoverStatus struct {
	// To is the annotation's value: the instance asked to take the leader
	// role, or "*".
	// +kubebuilder:validation:MaxLength=253
	To string `json:"to"`
	// Pod is the leader asked to hand its role over; Subset and Cluster
	// where it runs.
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`
	// +kubebuilder:validation:MaxLength=63
	Subset string `json:"subset"`
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`
	// RequestedAt is when the hub took the request: the deadline
	// (spec.switchover.deadlineSeconds) counts from it, and it names the
	// request to the member (PlacementSwitchover.ID).
	RequestedAt metav1.Time `json:"requestedAt"`
	// Failed is the member's last report of the switchover action failing
	// (it runs again with a growing delay until the deadline).
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Failed string `json:"failed,omitempty"`
}

// LeaderUpdate is what a subset's member may do with the leader instance in
// a role-ordered rollout.
// +kubebuilder:validation:Enum=Hold;Switchover;Update
type LeaderUpdate string

const (
	// LeaderHold: do not touch the leader.
	LeaderHold LeaderUpdate = "Hold"
	// LeaderSwitchover: ask the leader to hand its role over
	// (AnnotationSwitchoverRequested); do not replace it.
	LeaderSwitchover LeaderUpdate = "Switchover"
	// LeaderUpdateNow: replace the leader like any other instance.
	LeaderUpdateNow LeaderUpdate = "Update"
)

// PlacementUpdate is the hub's instruction to a subset's member in a
// role-ordered rollout (spec.roles with RollingUpdate): the subset's
// StatefulSet has updateStrategy OnDelete, and the member component
// replaces its outdated pods (controller-revision-hash other than the
// StatefulSet's status.updateRevision) by deleting them — lowest role
// updatePriority first, then the highest ordinal — while fewer than
// MaxUnavailable of the subset's instances are unavailable. The leader
// (the pod holding the leader role) is replaced only when Leader is Update.
type PlacementUpdate struct {
	// MaxUnavailable is how many of the subset's instances may be
	// unavailable at once while the member replaces them; 0 holds.
	// +kubebuilder:validation:Minimum=0
	MaxUnavailable int32 `json:"maxUnavailable"`
	// Leader says what the member may do with the leader.
	Leader LeaderUpdate `json:"leader"`
}

// DeadlineSecondsOrDefault returns the switchover deadline in seconds.
func (s *Switchover) DeadlineSecondsOrDefault() int32 {
	if s == nil || s.DeadlineSeconds == 0 {
		return DefaultSwitchoverDeadlineSeconds
	}
	return s.DeadlineSeconds
}

// PolicyOrDefault returns the switchover policy, BestEffort when unset.
func (s *Switchover) PolicyOrDefault() SwitchoverPolicy {
	if s == nil || s.Policy == "" {
		return SwitchoverBestEffort
	}
	return s.Policy
}

// SwitchoverStatus is a switchover asked of the leader.
type SwitchoverStatus struct {
	// Pod is the leader asked to hand its role over; Subset and Cluster
	// where it runs.
	Pod     string `json:"pod"`
	Subset  string `json:"subset"`
	Cluster string `json:"cluster"`
	// RequestedAt is when the hub asked for it.
	RequestedAt metav1.Time `json:"requestedAt"`
	// Skipped is true once the deadline passed under policy BestEffort and
	// the leader is being updated anyway.
	// +optional
	Skipped bool `json:"skipped,omitempty"`
	// Held is true once the deadline passed under policy Required: the
	// rollout holds before the leader.
	// +optional
	Held bool `json:"held,omitempty"`
}
