//go:build integration

package metawrite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/fleetset/fleetset/federation/metawrite"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// answers records the bodies of the apiserver's answers to writes.
type answers struct {
	next http.RoundTripper
	mu   sync.Mutex
	// bodies are the answers to POST and PUT requests, in order.
	bodies [][]byte
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil || (req.Method != http.MethodPost && req.Method != http.MethodPut) {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	a.mu.Lock()
	a.bodies = append(a.bodies, b)
	a.mu.Unlock()
	return resp, nil
}

// last returns the kind and size of the last answer.
func (a *answers) last(t *testing.T) (string, int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.bodies) == 0 {
		t.Fatal("no answer recorded")
	}
	b := a.bodies[len(a.bodies)-1]
	var tm metav1.TypeMeta
	if err := json.Unmarshal(b, &tm); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return tm.Kind, len(b)
}

// TestWriter runs Writer against a real kube-apiserver with the
// ManifestWork CRD: creates, updates and status updates are answered with a
// PartialObjectMetadata, the object gets the stored metadata (the same a
// read returns) and keeps what was sent, and the apiserver's errors come
// through as they do with controller-runtime's client.
func TestWriter(t *testing.T) {
	crds, err := controlplane.OCMCRDs()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(crds...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, workv1.Install} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(cp.Config)
	rec := &answers{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := metawrite.New(cfg, hc, scheme, mapper)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "east"}}); err != nil {
		t.Fatal(err)
	}

	cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "big"},
		Data: map[string]string{"payload": strings.Repeat("x", 8000)}}
	raw, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "db.big", Labels: map[string]string{"fleetset.io/owner-name": "big"}},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
	sent := work.Spec.DeepCopy()

	stored := &workv1.ManifestWork{}
	// written checks one write of work: the apiserver answered with a
	// PartialObjectMetadata smaller than the manifest, and work now has the
	// stored metadata (without managedFields) and status.
	written := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if kind, size := rec.last(t); kind != "PartialObjectMetadata" || size >= len(raw) {
			t.Errorf("answer to the %s: a %s of %d bytes, want a PartialObjectMetadata smaller than the %d-byte manifest", what, kind, size, len(raw))
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(work), stored); err != nil {
			t.Fatal(err)
		}
		if work.ResourceVersion == "" || work.ResourceVersion != stored.ResourceVersion || work.UID != stored.UID || work.Generation != stored.Generation ||
			!work.CreationTimestamp.Equal(&stored.CreationTimestamp) || work.Labels["fleetset.io/owner-name"] != "big" {
			t.Errorf("%s: metadata %+v, want the stored %+v", what, work.ObjectMeta, stored.ObjectMeta)
		}
		if work.ManagedFields != nil {
			t.Errorf("%s: managedFields %v, want none", what, work.ManagedFields)
		}
		if apimeta.IsStatusConditionTrue(stored.Status.Conditions, "Tested") != apimeta.IsStatusConditionTrue(work.Status.Conditions, "Tested") {
			t.Errorf("%s: status %v, want the stored %v", what, work.Status.Conditions, stored.Status.Conditions)
		}
	}

	written("create", w.Create(ctx, work))
	if string(work.Spec.Workload.Manifests[0].Raw) != string(sent.Workload.Manifests[0].Raw) {
		t.Errorf("create: the spec changed to %s", work.Spec.Workload.Manifests[0].Raw)
	}

	// Creating it again: AlreadyExists.
	again := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "db.big"}}
	if err := w.Create(ctx, again); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}

	// Status, then a spec update: the status sent along is kept.
	apimeta.SetStatusCondition(&work.Status.Conditions, metav1.Condition{Type: "Tested", Status: metav1.ConditionTrue, Reason: "Test", Message: "set by test"})
	written("status update", w.UpdateStatus(ctx, work))
	stale := work.DeepCopy()
	work.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	written("update", w.Update(ctx, work))
	if work.Generation != 2 || stored.Spec.DeleteOption == nil || stored.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan {
		t.Errorf("update: generation %d, stored deleteOption %+v; want 2, Orphan", work.Generation, stored.Spec.DeleteOption)
	}

	// An update from a stale read: Conflict.
	stale.Labels["other"] = "x"
	if err := w.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("update from a stale read: %v, want a Conflict", err)
	}
	// Invalid: the apiserver's validation errors come through.
	bad := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "Not_A_Name"}}
	if err := w.Create(ctx, bad); !apierrors.IsInvalid(err) {
		t.Errorf("create with an invalid name: %v, want Invalid", err)
	}
	// An unstructured object: refused before any request.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workv1.SchemeGroupVersion.WithKind("ManifestWork"))
	u.SetNamespace("east")
	u.SetName("db.unstructured")
	before := len(rec.bodies)
	if err := w.Create(ctx, u); err == nil || len(rec.bodies) != before {
		t.Errorf("create of an unstructured object: %v after %d requests, want an error and none", err, len(rec.bodies)-before)
	}
	// A kind the scheme does not know.
	if err := w.Create(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
		t.Error("create of a kind outside the scheme: no error")
	}
}
