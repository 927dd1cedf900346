package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/fleetset/fleetset/plugins/apis/config"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: "v1"}

var (
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	// AddToScheme registers the v1 args types, their defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &OrdinalSpreadArgs{})
	return nil
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	scheme.AddTypeDefaultingFunc(&OrdinalSpreadArgs{}, func(obj interface{}) {
		SetDefaults_OrdinalSpreadArgs(obj.(*OrdinalSpreadArgs))
	})
	return nil
}

func addConversionFuncs(scheme *runtime.Scheme) error {
	if err := scheme.AddConversionFunc((*OrdinalSpreadArgs)(nil), (*config.OrdinalSpreadArgs)(nil), func(a, b interface{}, _ conversion.Scope) error {
		in, out := a.(*OrdinalSpreadArgs), b.(*config.OrdinalSpreadArgs)
		if in.DomainWeight != nil {
			out.DomainWeight = *in.DomainWeight
		}
		return nil
	}); err != nil {
		return err
	}
	return scheme.AddConversionFunc((*config.OrdinalSpreadArgs)(nil), (*OrdinalSpreadArgs)(nil), func(a, b interface{}, _ conversion.Scope) error {
		in, out := a.(*config.OrdinalSpreadArgs), b.(*OrdinalSpreadArgs)
		w := in.DomainWeight
		out.DomainWeight = &w
		return nil
	})
}

func init() {
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs, addConversionFuncs)
}
