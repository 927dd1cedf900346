package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Identity returns fs's owner identity, the value of the label
// fleetset.io/owner-uid on every object fleetset-hub delivers for fs: the
// annotation fleetset.io/identity (AnnotationIdentity) when fs carries it,
// else fs's UID ("" when fs has neither, as in a unit test). The
// never-adopt admission policy lets a delivered object be written over an
// existing one only when both carry the same identity and the same
// fleetset.io/set, so the identity, not the UID, decides what is fs's own:
// it survives a backup and restore of the hub, which gives fs a new UID.
func (fs *FleetSet) Identity() string {
	if id, ok := fs.Annotations[AnnotationIdentity]; ok {
		return id
	}
	return string(fs.UID)
}

// ValidateIdentity returns an error naming the annotation
// fleetset.io/identity when fs carries it with a value that cannot be a
// label value (at most 63 characters, alphanumerics, '-', '_' or '.',
// beginning and ending with an alphanumeric; Kubernetes' label value rule,
// k8s.io/apimachinery validation.IsValidLabelValue), or empty; nil
// otherwise, also when fs does not carry it.
func (fs *FleetSet) ValidateIdentity() error {
	id, ok := fs.Annotations[AnnotationIdentity]
	if !ok {
		return nil
	}
	if id == "" {
		return fmt.Errorf("metadata.annotations[%s]: must not be empty (remove it to let fleetset-hub set it, or set the identity the members' objects carry in label %s)", AnnotationIdentity, LabelOwnerUID)
	}
	if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
		return fmt.Errorf("metadata.annotations[%s]: %q is not a valid label value: %s", AnnotationIdentity, id, errs[0])
	}
	return nil
}
