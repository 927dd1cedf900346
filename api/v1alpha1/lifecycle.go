package v1alpha1

import (
	"slices"
	"strconv"
	"strings"
)

// Lifecycle actions: commands or HTTP calls fleetset runs for the workload
// at the steps it must know about, as KubeBlocks' lifecycle actions do
// (roleProbe, memberJoin, memberLeave, switchover) plus rolloutComplete.
// fleetset-scheduler's member component runs them in each member cluster,
// through the member apiserver's pods/exec, only in pods that are instances
// of a SubsetPlacement and only in containers of their own template (see
// docs/lifecycle-actions.md). A failing action holds its step and says so.

// ActionTarget says in which instance's pod an action runs.
// +kubebuilder:validation:Enum=Self;AnyLive
type ActionTarget string

const (
	// TargetSelf runs the action in the pod of the instance it is about.
	TargetSelf ActionTarget = "Self"
	// TargetAnyLive runs it in another Running and Ready instance of the
	// same FleetSet in the same member cluster (the quorum), or in the
	// instance's own pod when there is none.
	TargetAnyLive ActionTarget = "AnyLive"
)

// HTTPScheme is the scheme of an HTTP action.
// +kubebuilder:validation:Enum=HTTP
type HTTPScheme string

// SchemeHTTP is plain HTTP, the only scheme (pod IPs have no certificate
// names to check).
const SchemeHTTP HTTPScheme = "HTTP"

// ExecAction runs a command in a container of the target pod, as
// `env NAME=VALUE ... <command...>` (the container needs `env` on its PATH).
type ExecAction struct {
	// Container is the name of one of the pod template's containers; empty:
	// the template's first container.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Container string `json:"container,omitempty"`
	// Command is the argv to run; no shell is implied (write
	// ["sh", "-c", "..."] for one).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=8192
	// +listType=atomic
	Command []string `json:"command"`
}

// HTTPAction sends GET http://<pod IP>:<port><path>, with the action's
// environment as query parameters; a 2xx answer is a success and its body
// the result.
type HTTPAction struct {
	// Port of the target pod.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// Path of the request. Default "/".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must start with /"
	// +optional
	Path string `json:"path,omitempty"`
	// Scheme: HTTP (the default and only value).
	// +kubebuilder:default=HTTP
	// +optional
	Scheme HTTPScheme `json:"scheme,omitempty"`
}

// LifecycleAction is one action: exactly one of Exec and HTTPGet.
// +kubebuilder:validation:XValidation:rule="has(self.exec) != has(self.httpGet)",message="set exactly one of exec and httpGet"
type LifecycleAction struct {
	// Exec runs a command in the target pod.
	// +optional
	Exec *ExecAction `json:"exec,omitempty"`
	// HTTPGet calls the target pod.
	// +optional
	HTTPGet *HTTPAction `json:"httpGet,omitempty"`
	// Target is the pod the action runs in: Self (default) or AnyLive.
	// +kubebuilder:default=Self
	// +optional
	Target ActionTarget `json:"target,omitempty"`
	// TimeoutSeconds of one attempt, in seconds. Default 10 (roleProbe: 2).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
	// Retries is how many more attempts follow a failed one before the step
	// holds (and is tried again later). Default 3.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries *int32 `json:"retries,omitempty"`
	// PeriodSeconds between two runs, in seconds: roleProbe only. Default 5.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
}

// LifecycleActions are a FleetSet's lifecycle actions, all optional.
// +kubebuilder:validation:XValidation:rule="(!has(self.memberJoin) || !has(self.memberJoin.periodSeconds)) && (!has(self.memberLeave) || !has(self.memberLeave.periodSeconds)) && (!has(self.switchover) || !has(self.switchover.periodSeconds)) && (!has(self.rolloutComplete) || !has(self.rolloutComplete.periodSeconds))",message="periodSeconds is for roleProbe only"
// +kubebuilder:validation:XValidation:rule="!has(self.roleProbe) || !has(self.roleProbe.target) || self.roleProbe.target == 'Self'",message="roleProbe runs in each instance itself: target must be Self"
type LifecycleActions struct {
	// RoleProbe learns an instance's role: its result (stdout, or the HTTP
	// body), trimmed, is the role name. It runs every periodSeconds in every
	// running instance (target Self). Exclusive with spec.roleProbe; needs
	// spec.roles.
	// +optional
	RoleProbe *LifecycleAction `json:"roleProbe,omitempty"`
	// MemberJoin runs once an instance's container runs on a claim that has
	// not joined (first start, relocation, move, replaced volume, scale-up
	// after a ScaledDown leave), before the instance counts as Ready (pod
	// readiness gate fleetset.io/member-joined).
	// +optional
	MemberJoin *LifecycleAction `json:"memberJoin,omitempty"`
	// MemberLeave runs before an instance is removed by scale-down (the hub
	// holds the replica decrease until it succeeded), and for a relocated or
	// moved instance in its new cluster before memberJoin.
	// +optional
	MemberLeave *LifecycleAction `json:"memberLeave,omitempty"`
	// Switchover runs in the outdated leader's pod when a role-ordered
	// rollout reaches it, with the candidate to hand the role to; then
	// spec.switchover's policy and deadline wait for the role to move.
	// Without it the leader is annotated fleetset.io/switchover-requested.
	// +optional
	Switchover *LifecycleAction `json:"switchover,omitempty"`
	// RolloutComplete runs once per revision, once every instance of the
	// fleet runs it.
	// +optional
	RolloutComplete *LifecycleAction `json:"rolloutComplete,omitempty"`
}

// ActionName names an action in FLEETSET_ACTION, metrics and events.
type ActionName string

const (
	ActionRoleProbe       ActionName = "roleProbe"
	ActionMemberJoin      ActionName = "memberJoin"
	ActionMemberLeave     ActionName = "memberLeave"
	ActionSwitchover      ActionName = "switchover"
	ActionRolloutComplete ActionName = "rolloutComplete"
)

// LeaveReason is FLEETSET_LEAVE_REASON.
// +kubebuilder:validation:Enum=ScaledDown;Purged;Relocated;Moved
type LeaveReason string

const (
	// LeaveScaledDown: the instance is removed by scale-down; its claim is
	// kept (the workload may keep it to resurrect on scale-up).
	LeaveScaledDown LeaveReason = "ScaledDown"
	// LeavePurged: the instance is removed and its claim deleted.
	LeavePurged LeaveReason = "Purged"
	// LeaveRelocated: the instance was relocated by failover; its data
	// stays behind in the lost cluster.
	LeaveRelocated LeaveReason = "Relocated"
	// LeaveMoved: the instance was moved by a spec change; its data stays
	// in the cluster it left.
	LeaveMoved LeaveReason = "Moved"
)

// JoinReason is FLEETSET_JOIN_REASON.
type JoinReason string

const (
	JoinFirstStart  JoinReason = "FirstStart"
	JoinRelocated   JoinReason = "Relocated"
	JoinMoved       JoinReason = "Moved"
	JoinFreshVolume JoinReason = "FreshVolume"
	JoinRejoin      JoinReason = "Rejoin"
)

// Environment variable names of every action (docs/lifecycle-actions.md).
const (
	EnvAction            = "FLEETSET_ACTION"
	EnvInstanceName      = "FLEETSET_INSTANCE_NAME"
	EnvInstanceOrdinal   = "FLEETSET_INSTANCE_ORDINAL"
	EnvInstanceFQDN      = "FLEETSET_INSTANCE_FQDN"
	EnvMembers           = "FLEETSET_MEMBERS"
	EnvMemberFQDNs       = "FLEETSET_MEMBER_FQDNS"
	EnvLeaderName        = "FLEETSET_LEADER_NAME"
	EnvLeaderFQDN        = "FLEETSET_LEADER_FQDN"
	EnvLeaveReason       = "FLEETSET_LEAVE_REASON"
	EnvJoinReason        = "FLEETSET_JOIN_REASON"
	EnvCandidateName     = "FLEETSET_CANDIDATE_NAME"
	EnvCandidateFQDN     = "FLEETSET_CANDIDATE_FQDN"
	EnvRevision          = "FLEETSET_REVISION"
	DefaultClusterDomain = "cluster.local"
)

// Member join marks.
const (
	// ConditionMemberJoined is the pod readiness gate the hub adds to the
	// pod template when spec.lifecycleActions.memberJoin is set; the member
	// component sets the pod condition True once memberJoin succeeded in the
	// pod, or at once when the instance's claims already joined.
	ConditionMemberJoined = "fleetset.io/member-joined"
	// AnnotationMemberJoined on an instance's claims (or, without claims, on
	// the pod): the UID of the pod whose memberJoin succeeded on them. It is
	// removed after a ScaledDown leave.
	AnnotationMemberJoined = "fleetset.io/member-joined"
)

// Lifecycle action defaults.
const (
	DefaultActionTimeoutSeconds          int32 = 10
	DefaultRoleProbeActionTimeoutSeconds int32 = 2
	DefaultActionRetries                 int32 = 3
	DefaultActionPeriodSeconds           int32 = 5
	DefaultHTTPActionPath                      = "/"
	// MaxActionOutput is the most of an action's stdout (and stderr) kept,
	// in bytes.
	MaxActionOutput = 4096
)

// TimeoutSecondsOrDefault returns the timeout of one attempt of action
// name, in seconds: TimeoutSeconds, or 10 (2 for roleProbe) when unset.
func (a *LifecycleAction) TimeoutSecondsOrDefault(name ActionName) int32 {
	if a.TimeoutSeconds > 0 {
		return a.TimeoutSeconds
	}
	if name == ActionRoleProbe {
		return DefaultRoleProbeActionTimeoutSeconds
	}
	return DefaultActionTimeoutSeconds
}

// RetriesOrDefault returns how many attempts follow a failed one: Retries,
// or 3 when unset.
func (a *LifecycleAction) RetriesOrDefault() int32 {
	if a.Retries == nil {
		return DefaultActionRetries
	}
	return *a.Retries
}

// PeriodSecondsOrDefault returns the role probe's period in seconds:
// PeriodSeconds, or 5 when unset.
func (a *LifecycleAction) PeriodSecondsOrDefault() int32 {
	if a.PeriodSeconds > 0 {
		return a.PeriodSeconds
	}
	return DefaultActionPeriodSeconds
}

// TargetOrDefault returns Target, or Self when unset.
func (a *LifecycleAction) TargetOrDefault() ActionTarget {
	if a.Target == "" {
		return TargetSelf
	}
	return a.Target
}

// PathOrDefault returns the request's path, "/" when unset.
func (h *HTTPAction) PathOrDefault() string {
	if h.Path == "" {
		return DefaultHTTPActionPath
	}
	return h.Path
}

// PlacementActions is what a SubsetPlacement carries of the FleetSet's
// lifecycle actions, and the hub's instructions to the member component.
type PlacementActions struct {
	// Actions are the FleetSet's spec.lifecycleActions.
	Actions LifecycleActions `json:"actions"`
	// FleetSet is the name of the FleetSet (the fleet view ConfigMap
	// <fleetSet>-fleet in the same namespace lists its members and leader).
	// +kubebuilder:validation:MaxLength=63
	FleetSet string `json:"fleetSet"`
	// ServiceName is the FleetSet's governing Service: an instance's fleet
	// DNS name is <pod>.<serviceName>.<namespace>.svc.<cluster domain>.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// Members are the pod names of every desired instance of the FleetSet,
	// every subset in every cluster, in ordinal order (FLEETSET_MEMBERS);
	// empty above v1alpha1.MaxFleetViewInstances.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	Members []string `json:"members,omitempty"`
	// Leader is the pod holding the leader role as the hub last knew it
	// (empty: none known, or more than one).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Leader string `json:"leader,omitempty"`
	// Leave lists the instances of this placement that must run memberLeave
	// before the hub lowers the StatefulSet's replicas below them.
	// +listType=map
	// +listMapKey=ordinal
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Leave []PlacementLeave `json:"leave,omitempty"`
	// Epoch is the subset's fencing epoch (FleetSet
	// status.subsets[].epoch): it grows at every move of the subset to
	// another cluster. Claims joined at a lower epoch join again.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// Origin, when set, is where the subset ran before it was relocated
	// here: instances that start here on a claim that has not joined run
	// memberLeave (reason Relocated) and then memberJoin (reason
	// Relocated). Without it, such an instance of a subset at an epoch
	// above 0 has moved here (a spec move or a failback): reason Moved.
	// +optional
	Origin *SubsetOrigin `json:"origin,omitempty"`
	// Candidates are the fleet's instances that run the update revision and
	// are Ready, as the hub last saw them, by pod name, sorted: the
	// switchover candidates when none of this placement's qualifies.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Candidates []string `json:"candidates,omitempty"`
	// Switchover, when set, is a switchover an operator asked for
	// (FleetSet annotation fleetset.io/switchover-to): the member runs the
	// switchover action once in the leader pod it names, with its
	// candidate, and reports the ID in status.actions.switchover.
	// +optional
	Switchover *PlacementSwitchover `json:"switchover,omitempty"`
	// RolloutComplete, when set, is the fleet revision every instance now
	// runs: the member runs rolloutComplete once for it and reports it in
	// status.actions.rolloutComplete. The hub sets it on one placement.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RolloutComplete string `json:"rolloutComplete,omitempty"`
	// Joined lists the ordinals whose memberJoin succeeded in this
	// placement and that have not left since, sorted, joined by commas: an
	// instance among them that starts on a claim that has not joined
	// (a replaced volume) joins with reason FreshVolume.
	// +kubebuilder:validation:MaxLength=16384
	// +optional
	Joined string `json:"joined,omitempty"`
}

// PlacementLeave is one instance that must leave.
type PlacementLeave struct {
	// Ordinal of the instance.
	// +kubebuilder:validation:Minimum=0
	Ordinal int32 `json:"ordinal"`
	// Reason is FLEETSET_LEAVE_REASON: ScaledDown or Purged.
	Reason LeaveReason `json:"reason"`
}

// SubsetOrigin is where a relocated or moved subset ran before.
type SubsetOrigin struct {
	// Cluster is the ManagedCluster the subset left.
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`
	// Epoch is the subset's fencing epoch since it arrived here.
	// +kubebuilder:validation:Minimum=0
	Epoch int64 `json:"epoch"`
	// Reason: Relocated (failover) or Moved (spec change).
	// +kubebuilder:validation:Enum=Relocated;Moved
	Reason LeaveReason `json:"reason"`
	// Replicas is how many instances were relocated: ordinals
	// [ordinalStart, ordinalStart+replicas); higher ordinals started here
	// (FirstStart). 0: every instance counts as relocated.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// PlacementSwitchover is a switchover an operator asked for, as the hub
// hands it to the leader's subset.
type PlacementSwitchover struct {
	// ID names the request (the leader, when the hub took it, the target):
	// the member runs the action once per ID.
	// +kubebuilder:validation:MaxLength=512
	ID string `json:"id"`
	// Leader is the pod holding the leader role, which runs the action.
	// +kubebuilder:validation:MaxLength=253
	Leader string `json:"leader"`
	// Candidate is the instance to hand the role to
	// (FLEETSET_CANDIDATE_NAME); empty lets the workload choose.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Candidate string `json:"candidate,omitempty"`
}

// PlacementActionsStatus is the member component's report of the actions
// the hub waits for, fed back to the hub through the ManifestWork (scalar
// strings, for JSONPaths).
type PlacementActionsStatus struct {
	// Left lists the ordinals of spec.actions.leave whose memberLeave
	// succeeded, sorted, joined by commas.
	// +kubebuilder:validation:MaxLength=16384
	// +optional
	Left string `json:"left,omitempty"`
	// LeaveFailed says why a memberLeave fails ("<pod>: <error>"); empty
	// when none does.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	LeaveFailed string `json:"leaveFailed,omitempty"`
	// RolloutComplete is the revision whose rolloutComplete succeeded.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RolloutComplete string `json:"rolloutComplete,omitempty"`
	// Switchover is the ID of the last requested switchover
	// (spec.actions.switchover) whose action succeeded.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Switchover string `json:"switchover,omitempty"`
	// SwitchoverFailed says why the requested switchover's action fails
	// ("<pod>: <error>"); empty when it does not.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SwitchoverFailed string `json:"switchoverFailed,omitempty"`
	// Joined lists the ordinals whose memberJoin succeeded in this
	// placement and that have not left since, sorted, joined by commas: an
	// instance among them that starts on a claim that has not joined
	// (a replaced volume) joins with reason FreshVolume.
	// +kubebuilder:validation:MaxLength=16384
	// +optional
	Joined string `json:"joined,omitempty"`
}

// FormatOrdinals returns ordinals sorted and joined by commas, as
// PlacementActionsStatus.Left holds them.
func FormatOrdinals(ordinals []int32) string {
	s := slices.Clone(ordinals)
	slices.Sort(s)
	s = slices.Compact(s)
	parts := make([]string, len(s))
	for i, o := range s {
		parts[i] = strconv.FormatInt(int64(o), 10)
	}
	return strings.Join(parts, ",")
}

// ParseOrdinals returns the ordinals of a comma-joined list, sorted;
// entries that are not non-negative integers are skipped.
func ParseOrdinals(s string) []int32 {
	var out []int32
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32); err == nil && n >= 0 {
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Claim marks of the member component's membership record.
const (
	// AnnotationMemberJoinedEpoch on an instance's claims: the subset's
	// epoch (SubsetPlacement spec.actions.epoch) when memberJoin succeeded
	// on them. A claim joined at a lower epoch
	// than the placement's holds data of a membership the workload was
	// told ended (the subset left the cluster since): it joins again.
	AnnotationMemberJoinedEpoch = "fleetset.io/member-joined-epoch"
	// AnnotationMemberLeft on an instance's claims: the reason of the
	// memberLeave that succeeded on them (ScaledDown or Purged); a later
	// scale-up joins them again with reason Rejoin.
	AnnotationMemberLeft = "fleetset.io/member-left"
)

// HTTPCallFields returns the fields of s that make fleetset's member
// component send HTTP requests to an instance's pod IP (spec.roleProbe,
// spec.lifecycleActions.<action>.httpGet), in a fixed order; nil when
// there are none. Such calls are refused for a pod on the node's network
// (hostNetwork: its IP is the node's), so the hub refuses a FleetSet whose
// template sets hostNetwork together with any of them.
func (s *FleetSetSpec) HTTPCallFields() []string {
	var out []string
	if s.RoleProbe != nil {
		out = append(out, "spec.roleProbe")
	}
	if a := s.LifecycleActions; a != nil {
		for _, f := range []struct {
			name   string
			action *LifecycleAction
		}{{"roleProbe", a.RoleProbe}, {"memberJoin", a.MemberJoin}, {"memberLeave", a.MemberLeave}, {"switchover", a.Switchover}, {"rolloutComplete", a.RolloutComplete}} {
			if f.action != nil && f.action.HTTPGet != nil {
				out = append(out, "spec.lifecycleActions."+f.name+".httpGet")
			}
		}
	}
	return out
}
