package manifestwork

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// Feedback names, as requested from the work agent for every StatefulSet.
const (
	FeedbackReplicas          = "replicas"
	FeedbackReadyReplicas     = "readyReplicas"
	FeedbackUpdatedReplicas   = "updatedReplicas"
	FeedbackAvailableReplicas = "availableReplicas"
	FeedbackCurrentRevision   = "currentRevision"
	FeedbackUpdateRevision    = "updateRevision"
	// FeedbackFleetRevision is the StatefulSet's fleetset.io/revision
	// annotation; FeedbackGeneration and FeedbackObservedGeneration tell
	// whether the other values are of its current spec.
	FeedbackFleetRevision      = "fleetRevision"
	FeedbackGeneration         = "generation"
	FeedbackObservedGeneration = "observedGeneration"
)

// StatefulSetFeedback is what the work agent reported of one StatefulSet.
type StatefulSetFeedback struct {
	Replicas          int32
	ReadyReplicas     int32
	UpdatedReplicas   int32
	AvailableReplicas int32
	CurrentRevision   string
	UpdateRevision    string
	// FleetRevision is the StatefulSet's fleetset.io/revision annotation.
	FleetRevision string
	// Generation and ObservedGeneration are the StatefulSet's
	// metadata.generation and status.observedGeneration.
	Generation, ObservedGeneration int64
	// Malformed says which count the work agent reported outside int32 (the
	// wire type is int64): the count fields are then not what was reported,
	// and Validate refuses the feedback.
	Malformed string
}

// Current reports whether the fed-back status is of the StatefulSet's
// current spec: observedGeneration = generation, both reported.
func (f StatefulSetFeedback) Current() bool {
	return f.Generation > 0 && f.ObservedGeneration == f.Generation
}

// Feedback returns, by StatefulSet name, the statusFeedback values the work
// agent wrote into w.status.resourceStatus.manifests[]. StatefulSets with no
// value reported are absent; values of the wrong type are ignored.
func Feedback(w *workv1.ManifestWork) map[string]StatefulSetFeedback {
	out := map[string]StatefulSetFeedback{}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind != "StatefulSet" || m.ResourceMeta.Group != "apps" || len(m.StatusFeedbacks.Values) == 0 {
			continue
		}
		var f StatefulSetFeedback
		for _, v := range m.StatusFeedbacks.Values {
			i := func(p *int32) {
				if v.Value.Integer == nil {
					return
				}
				n := *v.Value.Integer
				if n < math.MinInt32 || n > math.MaxInt32 {
					f.Malformed = fmt.Sprintf("%s %d is outside int32", v.Name, n)
					return
				}
				*p = int32(n)
			}
			s := func(p *string) {
				if v.Value.String != nil {
					*p = *v.Value.String
				}
			}
			switch v.Name {
			case FeedbackReplicas:
				i(&f.Replicas)
			case FeedbackReadyReplicas:
				i(&f.ReadyReplicas)
			case FeedbackUpdatedReplicas:
				i(&f.UpdatedReplicas)
			case FeedbackAvailableReplicas:
				i(&f.AvailableReplicas)
			case FeedbackCurrentRevision:
				s(&f.CurrentRevision)
			case FeedbackUpdateRevision:
				s(&f.UpdateRevision)
			case FeedbackFleetRevision:
				s(&f.FleetRevision)
			case FeedbackGeneration:
				if v.Value.Integer != nil {
					f.Generation = *v.Value.Integer
				}
			case FeedbackObservedGeneration:
				if v.Value.Integer != nil {
					f.ObservedGeneration = *v.Value.Integer
				}
			}
		}
		out[m.ResourceMeta.Name] = f
	}
	return out
}

// AppliedAtGeneration reports whether the work agent reports w Applied
// (condition Applied True) at w's current generation: the agent has applied
// the spec the hub last wrote.
func AppliedAtGeneration(w *workv1.ManifestWork) bool {
	c := apimeta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// NotApplied returns w's Applied condition when the work agent reports it
// False (it failed to apply w, e.g. a quota or an admission refusal), at
// whatever generation; nil otherwise, also when there is no report yet.
func NotApplied(w *workv1.ManifestWork) *metav1.Condition {
	c := apimeta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// OrdinalStarts returns the subset → ordinalStart record of a FleetSet's
// ManifestWork (annotation v1alpha1.AnnotationOrdinalStarts); malformed
// entries are skipped.
func OrdinalStarts(w *workv1.ManifestWork) map[string]int32 {
	out := map[string]int32{}
	for _, kv := range strings.Split(w.Annotations[fleetv1.AnnotationOrdinalStarts], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			continue
		}
		out[k] = int32(n)
	}
	return out
}

// HoldsStatefulSet reports whether w's spec delivers the StatefulSet named
// name.
func HoldsStatefulSet(w *workv1.ManifestWork, name string) bool {
	_, ok := heldStatefulSet(w, name)
	return ok
}

// HeldReplicas returns the spec.replicas of StatefulSet name as w's spec
// delivers it; false when w does not hold it or its replicas are unset.
func HeldReplicas(w *workv1.ManifestWork, name string) (int32, bool) {
	r, ok := heldStatefulSet(w, name)
	if !ok || r == nil {
		return 0, false
	}
	return *r, true
}

// heldStatefulSet returns the spec.replicas (nil: unset) of the first
// StatefulSet named name in w's spec, and whether w holds one.
func heldStatefulSet(w *workv1.ManifestWork, name string) (*int32, bool) {
	var sts struct {
		Spec struct {
			Replicas *int32 `json:"replicas"`
		} `json:"spec"`
	}
	i, err := envelope.Find(w, envelope.Key{Kind: "StatefulSet", Name: name}, &sts)
	if i < 0 || err != nil {
		return nil, false
	}
	return sts.Spec.Replicas, true
}

// Drained reports whether StatefulSet name in w runs no pod, as far as the
// hub can know: w holds it at spec.replicas 0, is Applied at its generation,
// and the feedback of its current spec says status.replicas 0 (which counts
// terminating pods too). False when w does not hold name.
func Drained(w *workv1.ManifestWork, name string) bool {
	if !AppliedAtGeneration(w) {
		return false
	}
	if replicas, held := heldStatefulSet(w, name); !held || replicas == nil || *replicas != 0 {
		return false
	}
	f, ok := Feedback(w)[name]
	return ok && f.Malformed == "" && f.Current() && f.Replicas == 0
}

// ApplyFailures returns, for each manifest of w the work agent reports not
// applied (its condition Applied False), "<Kind> <namespace>/<name>: <the
// agent's message>", in the order of w's status: the object and the reason
// (a quota, an admission refusal such as fleetset-never-adopt's) that the
// work's own Applied condition does not name.
func ApplyFailures(w *workv1.ManifestWork) []string {
	var out []string
	for _, m := range w.Status.ResourceStatus.Manifests {
		c := apimeta.FindStatusCondition(m.Conditions, workv1.ManifestApplied)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		r := m.ResourceMeta
		name := r.Name
		if r.Namespace != "" {
			name = r.Namespace + "/" + r.Name
		}
		out = append(out, fmt.Sprintf("%s %s: %s", r.Kind, name, c.Message))
	}
	return out
}

// HeldEpoch returns the fencing epoch (spec.fencing.epoch) of
// SubsetPlacement name as w's spec delivers it; false when w does not hold
// it, holds it without fencing, or it cannot be decoded.
func HeldEpoch(w *workv1.ManifestWork, name string) (int64, bool) {
	var sp struct {
		Spec struct {
			Fencing *struct {
				Epoch int64 `json:"epoch"`
			} `json:"fencing"`
		} `json:"spec"`
	}
	i, err := envelope.Find(w, envelope.Key{Kind: "SubsetPlacement", Name: name}, &sp)
	if i < 0 || err != nil || sp.Spec.Fencing == nil {
		return 0, false
	}
	return sp.Spec.Fencing.Epoch, true
}
