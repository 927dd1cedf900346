package manifestwork

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestDeliveredObjectsCarryTheOwnerIdentity: every object a FleetSet's
// work delivers (but the namespace) is labelled fleetset.io/owner-uid with
// the FleetSet's owner identity: its annotation fleetset.io/identity when
// it carries one (a FleetSet restored from a backup, with a new UID), else
// its UID; and every one carries fleetset.io/set, the other half of what
// the never-adopt policy compares.
func TestDeliveredObjectsCarryTheOwnerIdentity(t *testing.T) {
	for _, tc := range []struct {
		name        string
		uid         string
		annotations map[string]string
		want        string
	}{
		{name: "first life: the UID", uid: "uid-1", want: "uid-1"},
		{name: "restored: the recorded identity, not the new UID", uid: "uid-2",
			annotations: map[string]string{fleetv1.AnnotationIdentity: "uid-1"}, want: "uid-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := makeFleetSet("db", "mydb").serviceName("peers").
				subset("east", "east", ptr.To(intstr.FromInt32(5))).obj()
			fs.UID = typesUID(tc.uid)
			fs.Annotations = tc.annotations
			works, err := Works(fs, []Subset{east}, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, w := range works {
				for _, m := range w.Spec.Workload.Manifests {
					var u struct {
						Kind     string `json:"kind"`
						Metadata struct {
							Name   string            `json:"name"`
							Labels map[string]string `json:"labels"`
						} `json:"metadata"`
					}
					if err := json.Unmarshal(m.Raw, &u); err != nil {
						t.Fatal(err)
					}
					if u.Kind == "Namespace" {
						continue
					}
					n++
					if got := u.Metadata.Labels[fleetv1.LabelOwnerUID]; got != tc.want {
						t.Errorf("%s/%s: label %s = %q, want %q", u.Kind, u.Metadata.Name, fleetv1.LabelOwnerUID, got, tc.want)
					}
					if got := u.Metadata.Labels[fleetv1.LabelSet]; got != "mydb" {
						t.Errorf("%s/%s: label %s = %q, want mydb", u.Kind, u.Metadata.Name, fleetv1.LabelSet, got)
					}
				}
			}
			if n < 4 {
				t.Fatalf("checked %d delivered objects, want the Service, fleet view, SubsetPlacement and StatefulSet at least", n)
			}
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
