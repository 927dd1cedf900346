package wiring

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestNotOwned(t *testing.T) {
	labels := func(set, uid string) map[string]string {
		l := map[string]string{}
		if set != "" {
			l[fleetv1.LabelSet] = set
		}
		if uid != "" {
			l[fleetv1.LabelOwnerUID] = uid
		}
		return l
	}
	cases := []struct {
		name     string
		sts, sp  map[string]string
		owned    bool
		mentions string
	}{
		{"same set and UID", labels("db", "u1"), labels("db", "u1"), true, ""},
		{"same set, neither has a UID", labels("db", ""), labels("db", ""), true, ""},
		{"other UID", labels("db", "u2"), labels("db", "u1"), false, fleetv1.LabelOwnerUID},
		// The case claims and updater used to answer differently: claims
		// called it owned and would expand and replace a StatefulSet the
		// hub never labelled.
		{"only the placement has a UID", labels("db", ""), labels("db", "u1"), false, fleetv1.LabelOwnerUID},
		{"only the StatefulSet has a UID", labels("db", "u1"), labels("db", ""), false, fleetv1.LabelOwnerUID},
		{"other set", labels("web", "u1"), labels("db", "u1"), false, fleetv1.LabelSet},
		{"StatefulSet without set", labels("", "u1"), labels("db", "u1"), false, "the StatefulSet has no label"},
		{"placement without set", labels("db", "u1"), labels("", "u1"), false, "the placement has no label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Labels: tc.sts}}
			sp := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Labels: tc.sp}}
			why := NotOwned(sp, sts)
			if (why == "") != tc.owned {
				t.Fatalf("NotOwned = %q, want owned=%v", why, tc.owned)
			}
			if !strings.Contains(why, tc.mentions) {
				t.Errorf("NotOwned = %q, want it to name %q", why, tc.mentions)
			}
		})
	}
}
