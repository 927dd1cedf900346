// Package validation validates the fleetset plugins' args.
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetset/fleetset/plugins/apis/config"
)

// ValidateOrdinalSpreadArgs returns an aggregate of every invalid field of
// args under path (nil path: top level), or nil.
func ValidateOrdinalSpreadArgs(path *field.Path, args *config.OrdinalSpreadArgs) error {
	var errs field.ErrorList
	if args.DomainWeight < 0 || args.DomainWeight > 100 {
		errs = append(errs, field.Invalid(path.Child("domainWeight"), args.DomainWeight, "must be between 0 and 100"))
	}
	return errs.ToAggregate()
}

// ValidateSubsetPlacementArgs returns an aggregate of every invalid field of
// args under path (nil path: top level), or nil.
func ValidateSubsetPlacementArgs(path *field.Path, args *config.SubsetPlacementArgs) error {
	var errs field.ErrorList
	switch args.LocalityMetadata {
	case config.LocalityLabelsAndAnnotations, config.LocalityAnnotations:
	default:
		errs = append(errs, field.NotSupported(path.Child("localityMetadata"), args.LocalityMetadata,
			[]config.LocalityMetadata{config.LocalityLabelsAndAnnotations, config.LocalityAnnotations}))
	}
	return errs.ToAggregate()
}
