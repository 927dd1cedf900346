package v1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"

	"github.com/fleetset/fleetset/plugins/apis/config"
)

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(AddToScheme(scheme))
	utilruntime.Must(config.AddToScheme(scheme))
	return scheme
}

func TestSchedulingDefaults(t *testing.T) {
	tests := []struct {
		name   string
		config runtime.Object
		expect runtime.Object
	}{
		{
			name:   "empty config OrdinalSpreadArgs",
			config: &OrdinalSpreadArgs{},
			expect: &OrdinalSpreadArgs{DomainWeight: ptr.To(DefaultDomainWeight)},
		},
		{
			name:   "set non default OrdinalSpreadArgs",
			config: &OrdinalSpreadArgs{DomainWeight: ptr.To[int32](30)},
			expect: &OrdinalSpreadArgs{DomainWeight: ptr.To[int32](30)},
		},
		{
			name:   "explicit zero OrdinalSpreadArgs is kept",
			config: &OrdinalSpreadArgs{DomainWeight: ptr.To[int32](0)},
			expect: &OrdinalSpreadArgs{DomainWeight: ptr.To[int32](0)},
		},
	}

	scheme := newScheme()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scheme.Default(tc.config)
			if diff := cmp.Diff(tc.expect, tc.config); diff != "" {
				t.Errorf("Got unexpected defaults (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestOrdinalSpreadArgsConversion(t *testing.T) {
	scheme := newScheme()

	in := &OrdinalSpreadArgs{DomainWeight: ptr.To[int32](75)}
	internal := &config.OrdinalSpreadArgs{}
	if err := scheme.Convert(in, internal, nil); err != nil {
		t.Fatalf("v1 to internal: %v", err)
	}
	if diff := cmp.Diff(&config.OrdinalSpreadArgs{DomainWeight: 75}, internal); diff != "" {
		t.Errorf("v1 to internal (-want, +got):\n%s", diff)
	}

	back := &OrdinalSpreadArgs{}
	if err := scheme.Convert(internal, back, nil); err != nil {
		t.Fatalf("internal to v1: %v", err)
	}
	if diff := cmp.Diff(in, back); diff != "" {
		t.Errorf("internal to v1 (-want, +got):\n%s", diff)
	}
}
