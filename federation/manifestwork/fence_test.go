package manifestwork

import (
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestEnforceableFence: the fence a member may enforce is its work's
// current one and, until the agent reports that spec Applied, the longest
// an earlier spec delivered (issue 48: a grace raised, applied, then
// lowered during a cut).
func TestEnforceableFence(t *testing.T) {
	fs := makeFleetSet("db", "mydb").serviceName("peers").
		subset("east", "east", ptr.To(intstr.FromInt32(5))).obj()
	fs.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
	render := func(grace int64, fencing bool) *workv1.ManifestWork {
		s := east
		if fencing {
			s.Fencing = &fleetv1.PlacementFencing{GraceSeconds: int32(grace)}
		}
		ws, err := Works(fs, []Subset{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ws[0]
	}
	applied := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		w.Generation = 3
		apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: 3})
		return w
	}
	if got := EnforceableFence(nil); got != -1 {
		t.Errorf("no work: %d, want -1", got)
	}
	if got := EnforceableFence(render(0, false)); got != -1 {
		t.Errorf("no fencing: %d, want -1", got)
	}
	if got := SpecFence(render(60, true)); got != 80 {
		t.Errorf("SpecFence, grace 60 + termination 20: %d, want 80", got)
	}
	lowered := render(0, true)
	lowered.Annotations[fleetv1.AnnotationDeliveredFenceSeconds] = "80"
	if got := EnforceableFence(lowered); got != 80 {
		t.Errorf("grace lowered to 0, not yet applied, 80 delivered before: %d, want 80", got)
	}
	if got := EnforceableFence(applied(lowered)); got != 20 {
		t.Errorf("grace lowered to 0 and applied: %d, want 20 (the current spec only)", got)
	}
	for _, bad := range []string{"junk", "-5", "99999999"} {
		w := render(0, true)
		w.Annotations[fleetv1.AnnotationDeliveredFenceSeconds] = bad
		if got := EnforceableFence(w); got != 20 {
			t.Errorf("annotation %q: %d, want 20 (not read)", bad, got)
		}
	}
}
