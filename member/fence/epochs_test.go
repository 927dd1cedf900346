package fence

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func epochPlacement(identity string, epoch int64) *fleetv1.SubsetPlacement {
	return &fleetv1.SubsetPlacement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-east", Labels: map[string]string{fleetv1.LabelOwnerUID: identity}},
		Spec:       fleetv1.SubsetPlacementSpec{Fencing: &fleetv1.PlacementFencing{Epoch: epoch}},
	}
}

// TestEpochsNeverAcceptLower (issue 48): epochs are fencing tokens. Once a
// member has run a placement at epoch 2, the record survives the component
// (a new process loads it from the member cluster) and the placement, and
// a delivery at a lower epoch is held by the Guard, whatever the member's
// state; the same epoch or a higher one runs, a lower one never lowers the
// record, and another FleetSet of the same name (another owner identity)
// is not held.
func TestEpochsNeverAcceptLower(t *testing.T) {
	cs := fake.NewSimpleClientset()
	first := &Epochs{Client: cs}
	if err := first.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := first.Record(t.Context(), []*fleetv1.SubsetPlacement{epochPlacement("uid-1", 2)}); err != nil {
		t.Fatal(err)
	}
	if err := first.Record(t.Context(), []*fleetv1.SubsetPlacement{epochPlacement("uid-1", 1)}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps(fleetv1.ResyncLeaseNamespace).Get(t.Context(), EpochsConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["db.db-east.uid-1"]; got != "2" {
		t.Fatalf("record %v, want db.db-east.uid-1=2", cm.Data)
	}
	// A new process of the member component.
	e := &Epochs{Client: cs}
	if err := e.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := &Guard{Epochs: e}
	for _, tc := range []struct {
		sp   *fleetv1.SubsetPlacement
		want bool
	}{
		{epochPlacement("uid-1", 1), false},
		{epochPlacement("uid-1", 0), false},
		{epochPlacement("uid-1", 2), true},
		{epochPlacement("uid-1", 3), true},
		{epochPlacement("uid-2", 0), true},
	} {
		ok, why := g.Allows(tc.sp)
		if ok != tc.want {
			t.Errorf("Allows(identity %s, epoch %d) = %v (%s), want %v", tc.sp.Labels[fleetv1.LabelOwnerUID], tc.sp.Spec.Fencing.Epoch, ok, why, tc.want)
		}
		if !ok && !strings.Contains(why, "below epoch 2 this member has run it at") {
			t.Errorf("refusal %q does not name the recorded epoch", why)
		}
	}
	if r := e.Report(); r != `{"db.db-east.uid-1":2}` {
		t.Errorf("Report = %s", r)
	}
	if ok, _ := (&Guard{}).Allows(epochPlacement("uid-1", 0)); !ok {
		t.Error("a Guard without a record holds")
	}
}
