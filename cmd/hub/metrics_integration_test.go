//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetset/fleetset/federation/controller"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// TestSecureMetrics runs the hub's /metrics the way manifests/hub deploys it
// (--metrics-secure) on a real kube-apiserver: the manager runs as the
// fleetset-hub ServiceAccount with only the shipped metrics_auth_role.yaml,
// and a caller without a token gets 401, one whose ServiceAccount is not
// bound to fleetset-metrics-reader gets 403, and a bound one gets the
// metrics.
func TestSecureMetrics(t *testing.T) {
	env, err := controlplane.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	admin, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The shipped RBAC of the metrics endpoint.
	f, err := os.Open(filepath.Join(controlplane.RepoRoot(), "manifests", "hub", "metrics_auth_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var u map[string]any
		if err := dec.Decode(&u); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if u == nil {
			continue
		}
		switch u["kind"] {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			mustConvert(t, u, &cr)
			mustCreate(t, admin, &cr)
		case "ClusterRoleBinding":
			var crb rbacv1.ClusterRoleBinding
			mustConvert(t, u, &crb)
			mustCreate(t, admin, &crb)
		default:
			t.Fatalf("unexpected kind %v in metrics_auth_role.yaml", u["kind"])
		}
	}
	for _, ns := range []string{"fleetset-system", "monitoring"} {
		mustCreate(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	token := func(ns, name string) string {
		mustCreate(t, admin, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s/%s: %v", ns, name, err)
		}
		return tr.Status.Token
	}
	hubToken := token("fleetset-system", "fleetset-hub")
	scraper := token("monitoring", "prometheus")
	stranger := token("monitoring", "stranger")
	mustCreate(t, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-fleetset-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleetset-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}},
	})

	addr := freeAddr(t)
	hubCfg := rest.AnonymousClientConfig(env.Config)
	hubCfg.BearerToken = hubToken
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(hubCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(addr, true, ""),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// The endpoint's certificate is self-signed (no --metrics-cert-dir).
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test of the self-signed default
	}}
	get := func(bearer string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	// Wait for the server to listen.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, _, err := get("")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("metrics endpoint %s never answered", addr)
	}

	for _, tc := range []struct {
		who    string
		bearer string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount not bound to fleetset-metrics-reader", stranger, http.StatusForbidden},
		{"a ServiceAccount bound to fleetset-metrics-reader", scraper, http.StatusOK},
	} {
		code, body, err := get(tc.bearer)
		if err != nil {
			t.Fatalf("%s: %v", tc.who, err)
		}
		if code != tc.want {
			t.Errorf("%s: HTTP %d, want %d: %.200s", tc.who, code, tc.want, body)
		}
		if code == http.StatusOK && !bytes.Contains([]byte(body), []byte("controller_runtime_")) {
			t.Errorf("%s: HTTP 200 without controller-runtime metrics: %.200s", tc.who, body)
		}
	}
}

func mustConvert(t *testing.T, u map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, into); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// freeAddr returns a 127.0.0.1 address with a port free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
}
