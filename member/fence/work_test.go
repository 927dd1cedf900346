package fence

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func workWith(t *testing.T, epoch int64, fencing bool) *workv1.ManifestWork {
	t.Helper()
	sp := &fleetv1.SubsetPlacement{TypeMeta: metav1.TypeMeta{APIVersion: fleetv1.GroupVersion.String(), Kind: "SubsetPlacement"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-east"}}
	if fencing {
		sp.Spec.Fencing = &fleetv1.PlacementFencing{Epoch: epoch}
	}
	raw, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"db-east"}}`)
	return &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
		{RawExtension: runtime.RawExtension{Raw: cm}}, {RawExtension: runtime.RawExtension{Raw: raw}}}}}}
}

// TestWorkHolds: the hub's work confirms a fenced placement only when it
// holds it, with fencing, at the fenced epoch or above, and is not being
// deleted (a work the hub deleted while the member was cut off still holds
// the old manifests until the work agent returns).
func TestWorkHolds(t *testing.T) {
	deleting := workWith(t, 0, true)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	garbled := workWith(t, 1, true)
	garbled.Spec.Workload.Manifests = append([]workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte("not json")}}}, garbled.Spec.Workload.Manifests...)
	tests := []struct {
		name  string
		w     *workv1.ManifestWork
		epoch int64
		want  bool
	}{
		{"same epoch", workWith(t, 1, true), 1, true},
		{"higher epoch: a new grant", workWith(t, 2, true), 1, true},
		{"lower epoch: stale", workWith(t, 0, true), 1, false},
		{"without fencing", workWith(t, 1, false), 1, false},
		{"being deleted", deleting, 0, false},
		{"after a manifest that does not decode", garbled, 1, true},
		{"another placement only", &workv1.ManifestWork{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkHolds(tt.w, "ns", "db-east", tt.epoch); got != tt.want {
				t.Errorf("WorkHolds = %v, want %v", got, tt.want)
			}
		})
	}
}
