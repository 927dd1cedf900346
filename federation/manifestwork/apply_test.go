package manifestwork

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// TestApplyTo: one write at most — a create for no existing work, none for
// an UpToDate one, an update that keeps others' labels otherwise — and a
// stale existing work fails with a conflict instead of overwriting.
func TestApplyTo(t *testing.T) {
	s := runtime.NewScheme()
	if err := workv1.Install(s); err != nil {
		t.Fatal(err)
	}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, o, opts...)
		},
	}).Build()
	ctx := context.Background()
	hashes := map[string]string{}
	desired := func(tag string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "db.mydb", Labels: OwnerLabels("db", "mydb")},
			Spec: workv1.ManifestWorkSpec{DeleteOption: orphanNamespace(tag), Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","namespace":"db"}}`)}}}}},
		}
		if err := stampHash(w); err != nil {
			t.Fatal(err)
		}
		hashes[tag] = w.Annotations[fleetv1.AnnotationSpecHash]
		return w
	}

	op, created, err := ApplyTo(ctx, c, nil, desired("a"))
	if err != nil || op != controllerutil.OperationResultCreated || writes != 1 {
		t.Fatalf("create: %v, %v, %d writes; want created, 1 write", op, err, writes)
	}
	created.Labels["other"] = "kept"
	if err := c.Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	writes = 0
	if op, got, err := ApplyTo(ctx, c, created, desired("a")); err != nil || op != controllerutil.OperationResultNone || writes != 0 || got != created {
		t.Fatalf("up to date: %v, %v, %d writes; want unchanged, no write, existing returned", op, err, writes)
	}
	op, updated, err := ApplyTo(ctx, c, created, desired("b"))
	if err != nil || op != controllerutil.OperationResultUpdated || writes != 1 {
		t.Fatalf("update: %v, %v, %d writes; want updated, 1 write", op, err, writes)
	}
	if updated.Labels["other"] != "kept" || updated.Annotations[fleetv1.AnnotationSpecHash] != hashes["b"] || created.Annotations[fleetv1.AnnotationSpecHash] != hashes["a"] {
		t.Errorf("updated labels %v, annotations %v; existing annotations %v: want others' labels kept, hash b, existing untouched",
			updated.Labels, updated.Annotations, created.Annotations)
	}
	if _, _, err := ApplyTo(ctx, c, created, desired("c")); !apierrors.IsConflict(err) {
		t.Errorf("update from a stale read: %v, want a conflict", err)
	}
	// A work without manifests (the hub's cached copy) is never written:
	// the agent would delete everything the work delivered.
	writes = 0
	empty := desired("d")
	empty.Spec.Workload.Manifests = nil
	stripped := StripForCache(desired("e"))
	for name, apply := range map[string]func() error{
		"ApplyTo":          func() error { _, _, err := ApplyTo(ctx, c, updated, empty); return err },
		"Update":           func() error { _, _, err := Update(ctx, c, updated, empty); return err },
		"create":           func() error { _, _, err := ApplyTo(ctx, c, nil, empty); return err },
		"a cached copy":    func() error { _, _, err := ApplyTo(ctx, c, updated, stripped); return err },
		"a cached, Update": func() error { _, _, err := Update(ctx, c, updated, stripped); return err },
	} {
		if err := apply(); err == nil || !strings.Contains(err.Error(), "a cached copy") {
			t.Errorf("%s of a work without manifests: %v, want refused", name, err)
		}
	}
	if writes != 0 {
		t.Errorf("works without manifests: %d writes, want none", writes)
	}
}
