package chaos

import (
	"time"
)

// History is what a chaos run recorded: its schedule, the faults and
// operations as executed, and the one-second samples. The checkers read
// nothing else.
type History struct {
	Seed     uint64        `json:"seed"`
	Start    time.Time     `json:"start"`
	Schedule Schedule      `json:"schedule"`
	Faults   []FaultRecord `json:"faults"`
	Ops      []OpRecord    `json:"ops"`
	Samples  []Sample      `json:"samples"`
	// FleetSets are the run's FleetSets as created (namespace/name →
	// settings the checkers need that status does not carry).
	FleetSets []FleetSetInfo `json:"fleetSets"`
}

// FleetSetInfo is one FleetSet of the run.
type FleetSetInfo struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Claims are the names of its volume claim templates; a claim of
	// instance <fleetset>-<subset>-<ordinal> is <claim>-<fleetset>-<subset>-<ordinal>.
	Claims []string `json:"claims,omitempty"`
}

// FaultRecord is one fault as executed: when it was injected and when it
// was undone (zero while still active at the end of the history).
type FaultRecord struct {
	Fault
	Injected time.Time `json:"injected"`
	Healed   time.Time `json:"healed"`
	Error    string    `json:"error,omitempty"`
}

// activeAt reports whether the fault was in effect at t.
func (f FaultRecord) activeAt(t time.Time) bool {
	if f.Injected.IsZero() || t.Before(f.Injected) {
		return false
	}
	return f.Healed.IsZero() || !t.After(f.Healed)
}

// OpRecord is one operation as executed.
type OpRecord struct {
	Op
	Done  time.Time `json:"done"`
	Error string    `json:"error,omitempty"`
}

// Sample is one observation of the fleet, taken at T (the members and the
// hub read concurrently).
type Sample struct {
	T time.Time `json:"t"`
	// Members by cluster name; a member that could not be read has Err set.
	Members map[string]MemberObs `json:"members"`
	// Hub is nil when the hub could not be read (its apiserver stopped).
	Hub *HubObs `json:"hub,omitempty"`
}

// MemberObs is what one member cluster held of the run's namespaces.
type MemberObs struct {
	Err        string         `json:"err,omitempty"`
	Pods       []PodObs       `json:"pods,omitempty"`
	PVCs       []PVCObs       `json:"pvcs,omitempty"`
	Placements []PlacementObs `json:"placements,omitempty"`
	// StatefulSets are the FleetSets' StatefulSets (one per subset the
	// member runs).
	StatefulSets []StatefulSetObs `json:"statefulSets,omitempty"`
}

// StatefulSetObs is one StatefulSet of a FleetSet in a member: how many
// instances the member is told to run (spec.replicas, from
// spec.ordinals.start on).
type StatefulSetObs struct {
	Namespace string `json:"ns"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
}

// PodObs is one pod of a FleetSet in a member.
type PodObs struct {
	Namespace string `json:"ns"`
	Name      string `json:"name"`
	Set       string `json:"set"`
	Subset    string `json:"subset"`
	Ordinal   int32  `json:"ordinal"`
	UID       string `json:"uid"`
	Node      string `json:"node,omitempty"`
	// NodeZone is the topology label of the pod's node; Domain the pod's
	// fleetset.io/domain label.
	NodeZone string `json:"nodeZone,omitempty"`
	Domain   string `json:"domain,omitempty"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready,omitempty"`
	Deleting bool   `json:"deleting,omitempty"`
}

// Running: the pod is Running, terminating or not (a pod being deleted may
// still run), as the e2e sampler counts it.
func (p PodObs) Running() bool { return p.Phase == "Running" }

// Available: Running, Ready and not being deleted.
func (p PodObs) Available() bool { return p.Running() && p.Ready && !p.Deleting }

// PVCObs is one PersistentVolumeClaim in a member.
type PVCObs struct {
	Namespace string `json:"ns"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Deleting  bool   `json:"deleting,omitempty"`
}

// PlacementObs is one SubsetPlacement in a member: what the scheduler pins
// the subset's ordinals by.
type PlacementObs struct {
	Namespace    string        `json:"ns"`
	Name         string        `json:"name"`
	Set          string        `json:"set"`
	Subset       string        `json:"subset"`
	OrdinalStart int32         `json:"ordinalStart"`
	Domains      []DomainShare `json:"domains,omitempty"`
	// Epoch is spec.fencing.epoch; FencedEpoch the member's fence record
	// (annotation fleetset.io/fenced-epoch), nil when not fenced.
	Epoch       int64  `json:"epoch,omitempty"`
	FencedEpoch *int64 `json:"fencedEpoch,omitempty"`
}

// DomainShare is a domain and its share as the placement states it: an
// int ("3"), a percent ("50%"), or empty for an even share.
type DomainShare struct {
	Name     string `json:"name"`
	Replicas string `json:"replicas,omitempty"`
}

// HubObs is what the hub held: the run's FleetSets and the ManagedClusters'
// availability.
type HubObs struct {
	FleetSets []FleetSetObs   `json:"fleetSets"`
	Available map[string]bool `json:"available,omitempty"`
}

// FleetSetObs is one FleetSet on the hub.
type FleetSetObs struct {
	Namespace          string `json:"ns"`
	Name               string `json:"name"`
	Deleted            bool   `json:"deleted,omitempty"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	Replicas           int32  `json:"replicas"`
	ReadyReplicas      int32  `json:"readyReplicas"`
	UpdatedReplicas    int32  `json:"updatedReplicas"`
	UpdateRevision     string `json:"updateRevision,omitempty"`
	CurrentRevision    string `json:"currentRevision,omitempty"`
	// MaxUnavailable is the rolling update's maxUnavailable resolved
	// against spec.replicas (rounded down, at least 1).
	MaxUnavailable int32 `json:"maxUnavailable"`
	Paused         bool  `json:"paused,omitempty"`
	// Relocate: failover policy Relocate; FailbackAutomatic: failback
	// Automatic.
	Relocate          bool        `json:"relocate,omitempty"`
	FailbackAutomatic bool        `json:"failbackAutomatic,omitempty"`
	Subsets           []SubsetObs `json:"subsets"`
}

// SubsetObs is one subset: its home (spec) and where status says it is.
type SubsetObs struct {
	Name         string         `json:"name"`
	Home         string         `json:"home"`
	Cluster      string         `json:"cluster"`
	Failover     string         `json:"failover,omitempty"`
	OrdinalStart int32          `json:"ordinalStart"`
	Replicas     int32          `json:"replicas"`
	Domains      map[string]int `json:"domains,omitempty"`
	// Epoch is status.subsets[].epoch, the fencing token of its grant.
	Epoch int64 `json:"epoch,omitempty"`
}

func (fs FleetSetObs) key() string { return fs.Namespace + "/" + fs.Name }

// rollingOut: a new revision is not yet on every instance.
func (fs FleetSetObs) rollingOut() bool {
	return fs.UpdateRevision != "" && (fs.UpdateRevision != fs.CurrentRevision || fs.UpdatedReplicas < fs.Replicas)
}
