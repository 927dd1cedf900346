package v1

// DefaultDomainWeight is OrdinalSpreadArgs.DomainWeight when unset: above 50,
// so the ordinal's domain always outranks the spread.
const DefaultDomainWeight int32 = 60

// SetDefaults_OrdinalSpreadArgs fills unset OrdinalSpreadArgs fields.
func SetDefaults_OrdinalSpreadArgs(obj *OrdinalSpreadArgs) { //nolint:revive,staticcheck // name required by the scheme convention
	if obj.DomainWeight == nil {
		w := DefaultDomainWeight
		obj.DomainWeight = &w
	}
}
