package ordinaltarget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func pod(placement, index string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "db-" + index,
		Labels: map[string]string{fleetv1.LabelPlacement: placement, fleetv1.LabelPodIndex: index}}}
}

// TestResolveErrors checks that errors describing the objects are
// *UserError (so the plugins report the pod unresolvable) and errors of the
// API, such as Forbidden, are not (so they are retried).
func TestResolveErrors(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = fleetv1.AddToScheme(scheme)
	bad := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "bad"},
		Spec: fleetv1.SubsetPlacementSpec{Domains: []fleetv1.DomainShare{
			{Name: "zone-a", Replicas: ptr.To(intstr.FromString("70%"))}, {Name: "zone-b", Replicas: ptr.To(intstr.FromString("40%"))}}}}
	good := &fleetv1.SubsetPlacement{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "good"},
		Spec: fleetv1.SubsetPlacementSpec{OrdinalStart: 10, Domains: []fleetv1.DomainShare{{Name: "zone-b"}, {Name: "zone-a"}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(bad, good).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "forbidden" {
				return apierrors.NewForbidden(schema.GroupResource{Group: "fleetset.io", Resource: "subsetplacements"}, key.Name, errors.New("RBAC"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	r := NewResolver(c, nil)
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		userErr  bool
		contains string
	}{
		{"invalid placement", pod("bad", "0"), true, "spec.domains: percentages sum to 110%"},
		{"ordinal below ordinalStart", pod("good", "3"), true, "ordinal 3 is outside SubsetPlacement db/good's ordinal block [10, 1010)"},
		{"ordinal past the block", pod("good", "1010"), true, "ordinal 1010 is outside SubsetPlacement db/good's ordinal block [10, 1010)"},
		{"ordinal far past the block", pod("good", "999999999"), true, "ordinal 999999999 is outside"},
		{"garbled ordinal", pod("good", "x"), true, "is not a non-negative integer"},
		{"forbidden read", pod("forbidden", "0"), false, "forbidden"},
		{"missing placement", pod("missing", "0"), false, "not found"},
	} {
		_, err := r.Resolve(context.Background(), tc.pod)
		var ue *UserError
		if err == nil || errors.As(err, &ue) != tc.userErr || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: Resolve error = %v (UserError %v), want UserError %v containing %q", tc.name, err, errors.As(err, &ue), tc.userErr, tc.contains)
		}
	}
	tgt, err := r.Resolve(context.Background(), pod("good", "10"))
	if err != nil || tgt.Domain != "zone-a" || !tgt.Strict {
		t.Errorf("Resolve(ordinal 10 of [zone-b zone-a]) = %+v, %v; want zone-a (domains by name), strict", tgt, err)
	}
}

// TestForConfigSurfacesSyncFailure: a scheduler whose informer cannot sync
// gets an error from ForConfig (and so fails to start) instead of a
// Resolver that never sees a placement.
func TestForConfigSurfacesSyncFailure(t *testing.T) {
	defer func(d time.Duration) { SyncTimeout = d }(SyncTimeout)
	SyncTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, err := ForConfig(ctx, &rest.Config{Host: "http://127.0.0.1:1"})
	if err == nil {
		t.Fatal("ForConfig against an unreachable apiserver succeeded, want an error")
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("ForConfig took %s to fail", time.Since(start))
	}
	t.Logf("error: %v", err)
}
