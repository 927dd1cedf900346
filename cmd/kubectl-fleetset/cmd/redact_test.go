package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// TestReportRedactsSecrets: a FleetSet whose template uses a Secret
// (dependencies Auto: the hub's ManifestWork carries a copy of it, as
// manifestwork.Dependency renders it, with kubectl apply's annotation
// holding its data again) and whose work's events and conditions quote the
// value: no byte of the archive, gunzipped, holds the value in clear or in
// base64; the Secret's keys and the redaction's size stay; the command
// says what it redacted.
func TestReportRedactsSecrets(t *testing.T) {
	const value = "s3cr3t-hunter2-value"
	const applyValue = "another-secret-in-apply"
	fs := delivered9()
	fs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "db", Env: []corev1.EnvVar{{Name: "PW",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-pw"}, Key: "password"}}}}}}
	hubSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-pw"},
		Data: map[string][]byte{"password": []byte(value)}}
	dep, err := manifestwork.Dependency(fs, hubSecret)
	if err != nil {
		t.Fatal(err)
	}
	applied, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "stringData": map[string]string{"token": applyValue}})
	dep.(*corev1.Secret).Annotations = map[string]string{AnnotationLastApplied: string(applied)}
	dep.(*corev1.Secret).StringData = map[string]string{"token": applyValue}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "default-mydb",
			Labels: map[string]string{fleetv1.LabelOwnerNamespace: "default", fleetv1.LabelOwnerName: "mydb"}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: dep}}}}},
		Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed",
			Message: "Secret default/db-pw: data[password] " + value + " rejected", LastTransitionTime: metav1.Now()}}},
	}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "default-mydb.1"},
		InvolvedObject: corev1.ObjectReference{Name: "default-mydb", Namespace: "east"},
		Message:        "applied with " + base64.StdEncoding.EncodeToString([]byte(value))}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{fleetv1.AddToScheme, clusterv1.Install, workv1.Install, corev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	hub := fake.NewClientBuilder().WithScheme(s).WithObjects(fs, managedCluster("east"), managedCluster("west"), work, event).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string {
			if u, ok := o.(*unstructured.Unstructured); ok {
				n, _, _ := unstructured.NestedString(u.Object, "involvedObject", "name")
				return []string{n}
			}
			return []string{o.(*corev1.Event).InvolvedObject.Name}
		}).
		WithStatusSubresource(work).Build()
	if err := hub.Status().Update(context.Background(), work); err != nil {
		t.Fatal(err)
	}
	o, out := verb(hub, "mydb", "")
	file := filepath.Join(t.TempDir(), "r.tar.gz")
	r := &ReportOptions{VerbOptions: o, OutputFile: file, MemberClients: map[string]client.Client{}}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	files := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		whole.Write(b)
		files[strings.TrimPrefix(h.Name, "fleetset-report-default-mydb/")] = string(b)
	}
	works := files["hub/manifestworks.yaml"]
	if !strings.Contains(works, "kind: Secret") || !strings.Contains(works, "password: 'REDACTED: 20 bytes, hmac-sha256 ") {
		t.Errorf("hub/manifestworks.yaml lacks the redacted Secret (its key and size):\n%s", works)
	}
	if !strings.Contains(files["hub/work-events.yaml"], "applied with REDACTED") {
		t.Errorf("hub/work-events.yaml: the event is not there, redacted:\n%s\nerrors.txt:\n%s", files["hub/work-events.yaml"], files["errors.txt"])
	}
	for _, leak := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)), applyValue, base64.StdEncoding.EncodeToString([]byte(applyValue))} {
		if i := strings.Index(whole.String(), leak); i >= 0 {
			t.Errorf("the archive holds Secret value %q: ...%s...", leak, whole.String()[max(0, i-300):min(whole.Len(), i+100)])
		}
	}
	wantOutput(t, out.String(), "Secret values are redacted (3 value(s), in 1 Secret(s)", "it holds no Secret value")
}
