package manifestwork

import (
	"encoding/json"
	"strconv"

	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// defaultTerminationGrace is the API's default terminationGracePeriodSeconds.
const defaultTerminationGrace = 30

// maxDeliveredFence bounds AnnotationDeliveredFenceSeconds (a week, as the
// hub bounds a member's reported fence): a larger value is not read.
const maxDeliveredFence = 7 * 24 * 3600

// SpecFence returns the longest fence w's spec delivers, in seconds: over
// its SubsetPlacements with spec.fencing, graceSeconds plus the
// terminationGracePeriodSeconds of the StatefulSet of the same name's pod
// template (30, the API default, when unset or when w holds no such
// StatefulSet). It returns -1 when no placement of w has fencing. Manifests
// that do not decode are skipped.
func SpecFence(w *workv1.ManifestWork) int64 {
	type head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	grace := map[string]int64{}
	term := map[string]int64{}
	for _, m := range w.Spec.Workload.Manifests {
		var h head
		if json.Unmarshal(m.Raw, &h) != nil {
			continue
		}
		switch h.Kind {
		case "SubsetPlacement":
			var sp struct {
				Spec struct {
					Fencing *struct {
						GraceSeconds int64 `json:"graceSeconds"`
					} `json:"fencing"`
				} `json:"spec"`
			}
			if json.Unmarshal(m.Raw, &sp) == nil && sp.Spec.Fencing != nil {
				grace[h.Metadata.Name] = max(0, sp.Spec.Fencing.GraceSeconds)
			}
		case "StatefulSet":
			var sts struct {
				Spec struct {
					Template struct {
						Spec struct {
							TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if json.Unmarshal(m.Raw, &sts) == nil && sts.Spec.Template.Spec.TerminationGracePeriodSeconds != nil {
				term[h.Metadata.Name] = max(0, *sts.Spec.Template.Spec.TerminationGracePeriodSeconds)
			}
		}
	}
	out := int64(-1)
	for name, g := range grace {
		t, ok := term[name]
		if !ok {
			t = defaultTerminationGrace
		}
		out = max(out, g+t)
	}
	return out
}

// DeliveredFence returns w's AnnotationDeliveredFenceSeconds, or -1 when it
// is absent or not a count of seconds up to a week.
func DeliveredFence(w *workv1.ManifestWork) int64 {
	n, err := strconv.ParseInt(w.Annotations[fleetv1.AnnotationDeliveredFenceSeconds], 10, 64)
	if err != nil || n < 0 || n > maxDeliveredFence {
		return -1
	}
	return n
}

// EnforceableFence returns the longest fence, in seconds, the member of w's
// cluster may enforce for w's placements as far as the hub wrote them: the
// fence of w's current spec, and, until the work agent reports that spec
// Applied, the longest one an earlier spec delivered
// (AnnotationDeliveredFenceSeconds). -1 when w is nil or delivers no
// fencing. It is also the AnnotationDeliveredFenceSeconds of the next spec
// the hub writes over w.
func EnforceableFence(w *workv1.ManifestWork) int64 {
	if w == nil {
		return -1
	}
	out := SpecFence(w)
	if !AppliedAtGeneration(w) {
		out = max(out, DeliveredFence(w))
	}
	return out
}
