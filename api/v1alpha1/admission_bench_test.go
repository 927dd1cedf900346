package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// crdValidators loads manifests/crds/<file> and returns its structural
// schema, its OpenAPI schema validator and its CEL validator, as the
// apiserver builds them for the CRD's served version.
func crdValidators(tb testing.TB, file string) (*structuralschema.Structural, validation.SchemaValidator, *cel.Validator) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "manifests", "crds", file))
	if err != nil {
		tb.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		tb.Fatal(err)
	}
	var in apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &in, nil); err != nil {
		tb.Fatal(err)
	}
	// The conversion hoists a schema all versions share to spec.validation.
	v := in.Spec.Validation
	if v == nil {
		v = in.Spec.Versions[0].Schema
	}
	schema := v.OpenAPIV3Schema
	ss, err := structuralschema.NewStructural(schema)
	if err != nil {
		tb.Fatal(err)
	}
	sv, _, err := validation.NewSchemaValidator(schema)
	if err != nil {
		tb.Fatal(err)
	}
	cv := cel.NewValidator(ss, true, celconfig.PerCallLimit)
	if cv == nil {
		tb.Fatal("the CRD has no CEL rules")
	}
	return ss, sv, cv
}

// benchFleetSet is the hub benchmark's FleetSet shape: one subset per
// cluster, three domains each, one of them 20%.
func benchFleetSet(subsets int) map[string]any {
	fs := &fleetv1.FleetSet{}
	fs.APIVersion, fs.Kind = fleetv1.GroupVersion.String(), "FleetSet"
	fs.Name, fs.Namespace = "fs-0001", "bench"
	fs.Spec.Replicas = int32(3 * subsets)
	fs.Spec.ServiceName = "db"
	fs.Spec.Template.Labels = map[string]string{"app": "db"}
	fs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "registry.k8s.io/pause:3.10"}}
	for j := range subsets {
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, fleetv1.Subset{
			Name: fmt.Sprintf("s%02d", j), Cluster: fmt.Sprintf("c%02d", j),
			Domains: []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c", Replicas: ptr.To(intstr.FromString("20%"))}},
		})
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fs)
	if err != nil {
		panic(err)
	}
	return u
}

// BenchmarkFleetSetUpdateValidation measures what the apiserver's CRD
// validation costs per FleetSet update (the hub's status write, and any
// update of the spec) for the hub benchmark's FleetSet with 20 subsets: the OpenAPI
// schema and the CEL rules (x-kubernetes-validations), old == new, as in a
// status write.
func BenchmarkFleetSetUpdateValidation(b *testing.B) {
	ss, sv, cv := crdValidators(b, "fleetset.io_fleetsets.yaml")
	obj := benchFleetSet(20)
	old := runtime.DeepCopyJSON(obj)
	b.Run("schema", func(b *testing.B) {
		for b.Loop() {
			if errs := validation.ValidateCustomResource(nil, obj, sv); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("cel", func(b *testing.B) {
		for b.Loop() {
			if errs, _ := cv.Validate(context.Background(), field.NewPath(""), ss, obj, old, celconfig.RuntimeCELCostBudget); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
}
