package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIdentity: the owner identity is the annotation fleetset.io/identity
// when present, else the UID; a value that cannot be a label value, or an
// empty one, is an error naming the annotation.
func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
		err         string
	}{
		{name: "no annotation: the UID", want: "uid-2"},
		{name: "restored: the annotation", annotations: map[string]string{AnnotationIdentity: "uid-1"}, want: "uid-1"},
		{name: "empty", annotations: map[string]string{AnnotationIdentity: ""}, err: "metadata.annotations[fleetset.io/identity]: must not be empty"},
		{name: "not a label value", annotations: map[string]string{AnnotationIdentity: "a/b"}, want: "a/b",
			err: `metadata.annotations[fleetset.io/identity]: "a/b" is not a valid label value`},
		{name: "too long", annotations: map[string]string{AnnotationIdentity: strings.Repeat("a", 64)}, want: strings.Repeat("a", 64),
			err: "is not a valid label value: must be no more than 63 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &FleetSet{ObjectMeta: metav1.ObjectMeta{UID: "uid-2", Annotations: tc.annotations}}
			if got := fs.Identity(); tc.err == "" && got != tc.want {
				t.Errorf("Identity() = %q, want %q", got, tc.want)
			}
			err := fs.ValidateIdentity()
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("ValidateIdentity() = %v, want %q", err, tc.err)
			}
		})
	}
}
