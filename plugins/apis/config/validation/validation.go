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
