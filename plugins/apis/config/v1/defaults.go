package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultDomainWeight is OrdinalSpreadArgs.DomainWeight when unset: above 50,
// so the ordinal's domain always outranks the spread.
const DefaultDomainWeight int32 = 60

// addDefaultingFuncs registers the generated defaulters (zz_generated.defaults.go),
// which call the SetDefaults_* functions below.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_SubsetPlacementArgs sets the defaults of SubsetPlacementArgs:
// LocalityMetadata, when unset, is LabelsAndAnnotations. defaulter-gen calls
// it from SetObjectDefaults_SubsetPlacementArgs.
func SetDefaults_SubsetPlacementArgs(obj *SubsetPlacementArgs) { //nolint:revive,staticcheck // name required by defaulter-gen
	if obj.LocalityMetadata == "" {
		obj.LocalityMetadata = LocalityLabelsAndAnnotations
	}
}

// SetDefaults_OrdinalSpreadArgs sets the defaults of OrdinalSpreadArgs:
// DomainWeight, when unset, is DefaultDomainWeight (60). defaulter-gen calls it
// from SetObjectDefaults_OrdinalSpreadArgs.
func SetDefaults_OrdinalSpreadArgs(obj *OrdinalSpreadArgs) { //nolint:revive,staticcheck // name required by defaulter-gen
	if obj.DomainWeight == nil {
		w := DefaultDomainWeight
		obj.DomainWeight = &w
	}
}
