package envelope

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestOwner: Owner reads back what OwnerLabels writes, and nothing from a
// work missing either owner label.
func TestOwner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   types.NamespacedName
		wantOK bool
	}{
		{"owner labels", OwnerLabels("db", "mydb"), types.NamespacedName{Namespace: "db", Name: "mydb"}, true},
		{"no labels", nil, types.NamespacedName{}, false},
		{"namespace only", map[string]string{fleetv1.LabelOwnerNamespace: "db"}, types.NamespacedName{}, false},
		{"name only", map[string]string{fleetv1.LabelOwnerName: "mydb"}, types.NamespacedName{}, false},
		{"resync work", map[string]string{fleetv1.LabelManagedBy: fleetv1.ManagedByHub, fleetv1.LabelResync: "true"}, types.NamespacedName{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Owner(&metav1.ObjectMeta{Labels: tc.labels})
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Owner = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
