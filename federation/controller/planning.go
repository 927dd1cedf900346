package controller

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// planSubsets plans the FleetSet (package plan: the division and the
// ordinal blocks, keeping the starts the FleetSet recorded) and records the
// plan's problems. It returns the subsets' plans in spec order, or false
// when the spec cannot be planned: that is an InvalidSpec problem, and the
// ManifestWorks and the ordinal record are left as they are.
func planSubsets(st *state) ([]plan.Subset, bool) {
	planned, findings, err := plan.For(st.fs, previousStarts(st.fs, st.existingWorks))
	if err != nil {
		st.invalidSpec(err)
		return nil, false
	}
	for _, f := range findings {
		st.report(planProblem(f))
	}
	return planned, true
}

// previousStarts returns the recorded ordinal starts: those of the
// ManifestWorks, overridden by status.subsets (the primary record).
func previousStarts(fs *fleetv1.FleetSet, works map[types.NamespacedName]*workv1.ManifestWork) map[string]int32 {
	out := map[string]int32{}
	keys := make([]types.NamespacedName, 0, len(works))
	for k := range works {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		for s, v := range manifestwork.OrdinalStarts(works[k]) {
			out[s] = v
		}
	}
	for _, s := range fs.Status.Subsets {
		out[s.Name] = s.OrdinalStart
	}
	return out
}
