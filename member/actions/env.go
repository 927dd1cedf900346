package actions

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Env is what an action's environment is made of.
type Env struct {
	// Action is FLEETSET_ACTION.
	Action fleetv1.ActionName
	// Namespace and ServiceName make fleet DNS names; ClusterDomain ends
	// them ("" is cluster.local).
	Namespace, ServiceName, ClusterDomain string
	// Instance is the pod name of the instance the action is about; Ordinal
	// its ordinal.
	Instance string
	Ordinal  int32
	// Members are the pod names of every desired instance, ordinal order.
	Members []string
	// Leader is the current leader's pod name ("" unknown).
	Leader string
	// LeaveReason, JoinReason, Candidate and Revision are the
	// action-specific values (memberLeave, memberJoin, switchover,
	// rolloutComplete).
	LeaveReason fleetv1.LeaveReason
	JoinReason  fleetv1.JoinReason
	Candidate   string
	Revision    string
}

// FQDN returns the fleet DNS name of pod name:
// <pod>.<serviceName>.<namespace>.svc.<cluster domain>.
func (e Env) FQDN(name string) string {
	if name == "" {
		return ""
	}
	d := e.ClusterDomain
	if d == "" {
		d = fleetv1.DefaultClusterDomain
	}
	return name + "." + e.ServiceName + "." + e.Namespace + ".svc." + d
}

// Vars returns the environment in a fixed order: the common variables,
// then those of e.Action (present, possibly empty, for their action only).
func (e Env) Vars() []EnvVar {
	fqdns := make([]string, len(e.Members))
	for i, m := range e.Members {
		fqdns[i] = e.FQDN(m)
	}
	out := []EnvVar{
		{fleetv1.EnvAction, string(e.Action)},
		{fleetv1.EnvInstanceName, e.Instance},
		{fleetv1.EnvInstanceOrdinal, strconv.FormatInt(int64(e.Ordinal), 10)},
		{fleetv1.EnvInstanceFQDN, e.FQDN(e.Instance)},
		{fleetv1.EnvMembers, strings.Join(e.Members, ",")},
		{fleetv1.EnvMemberFQDNs, strings.Join(fqdns, ",")},
		{fleetv1.EnvLeaderName, e.Leader},
		{fleetv1.EnvLeaderFQDN, e.FQDN(e.Leader)},
	}
	switch e.Action {
	case fleetv1.ActionMemberLeave:
		out = append(out, EnvVar{fleetv1.EnvLeaveReason, string(e.LeaveReason)})
	case fleetv1.ActionMemberJoin:
		out = append(out, EnvVar{fleetv1.EnvJoinReason, string(e.JoinReason)})
	case fleetv1.ActionSwitchover:
		out = append(out, EnvVar{fleetv1.EnvCandidateName, e.Candidate}, EnvVar{fleetv1.EnvCandidateFQDN, e.FQDN(e.Candidate)})
	case fleetv1.ActionRolloutComplete:
		out = append(out, EnvVar{fleetv1.EnvRevision, e.Revision})
	}
	return out
}

// ForPod returns the Env of action about pod p of a placement with spec
// actions pa: namespace, service, members (without those pa says leave,
// unless the action is their own leave) and leader from pa; the ordinal
// from p's label apps.kubernetes.io/pod-index (or its name's suffix).
func ForPod(action fleetv1.ActionName, pa *fleetv1.PlacementActions, p *v1.Pod, clusterDomain string) Env {
	e := Env{Action: action, Namespace: p.Namespace, ServiceName: pa.ServiceName, ClusterDomain: clusterDomain,
		Instance: p.Name, Ordinal: Ordinal(p), Leader: pa.Leader}
	e.Members = Members(pa)
	return e
}

// Members returns pa's members without the instances pa says leave.
func Members(pa *fleetv1.PlacementActions) []string {
	if len(pa.Leave) == 0 {
		return pa.Members
	}
	leaving := map[int32]bool{}
	for _, l := range pa.Leave {
		leaving[l.Ordinal] = true
	}
	out := make([]string, 0, len(pa.Members))
	for _, m := range pa.Members {
		if o, ok := ordinalOfName(m); ok && leaving[o] && strings.HasPrefix(m, pa.FleetSet+"-") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Ordinal returns p's ordinal: its label apps.kubernetes.io/pod-index, or
// the number ending its name; -1 when neither is one.
func Ordinal(p *v1.Pod) int32 {
	if s, ok := p.Labels["apps.kubernetes.io/pod-index"]; ok {
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			return int32(n)
		}
	}
	if n, ok := ordinalOfName(p.Name); ok {
		return n
	}
	return -1
}

// ordinalOfName is the number after the last "-" of a pod name.
func ordinalOfName(name string) (int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	return int32(n), err == nil && n >= 0
}
