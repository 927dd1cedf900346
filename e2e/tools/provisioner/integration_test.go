//go:build integration

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// TestProvisionResizeDelete runs the provisioner against a real etcd,
// kube-apiserver and kube-controller-manager (whose PV controller binds and
// releases the volumes) from bin/ (KUBEBUILDER_ASSETS, else <repo>/bin):
// a claim of the default class with a selected node is bound to a PV pinned
// to that node's zone, growing its request 1Gi→2Gi raises the PV's capacity
// and the claim's status.capacity, and deleting the claim deletes the PV.
func TestProvisionResizeDelete(t *testing.T) {
	cfg := startControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	stopped := make(chan error, 1)
	go func() {
		stopped <- run(ctx, options{name: DefaultName, workers: 2, config: cfg, healthAddr: "127.0.0.1:0"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("provisioner: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("provisioner did not stop in 30s")
		}
	})

	// The class of the local fleet, from its manifest.
	f, err := os.Open("storageclass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sc storagev1.StorageClass
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&sc); err != nil {
		t.Fatal(err)
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, &sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "east-zone-b-1", Labels: map[string]string{
		corev1.LabelTopologyZone: "zone-b", corev1.LabelHostname: "east-zone-b-1"}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// No storageClassName: the default class. The selected node is what
	// kube-scheduler's VolumeBinding plugin sets for a WaitForFirstConsumer
	// claim of a pod it places.
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-db-0",
			Annotations: map[string]string{"volume.kubernetes.io/selected-node": node.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	t0 := time.Now()
	claim, err = client.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "fleetset-local" {
		t.Fatalf("claim's class %v, want the default fleetset-local", claim.Spec.StorageClassName)
	}
	claims := client.CoreV1().PersistentVolumeClaims("default")
	eventually(t, "the claim Bound", func() (bool, string) {
		c, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		claim = c
		return c.Status.Phase == corev1.ClaimBound, string(c.Status.Phase)
	})
	t.Logf("claim Bound to %s after %v", claim.Spec.VolumeName, time.Since(t0).Round(time.Millisecond))
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	wantMatch := []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}
	if len(terms) != 1 || fmt.Sprint(terms[0].MatchExpressions) != fmt.Sprint(wantMatch) {
		t.Errorf("PV node affinity %+v, want %+v", terms, wantMatch)
	}
	if hp := pv.Spec.HostPath; hp == nil || hp.Path != "/var/lib/fleetset-local/"+pv.Name {
		t.Errorf("PV hostPath %+v", hp)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != "fleetset-local" ||
		pv.Annotations["pv.kubernetes.io/provisioned-by"] != DefaultName {
		t.Errorf("PV reclaim %s, class %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName, pv.Annotations)
	}
	if got := claim.Status.Capacity[corev1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("claim capacity %s, want 1Gi", got.String())
	}

	// Expansion 1Gi → 2Gi.
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	t1 := time.Now()
	if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PV and claim at 2Gi", func() (bool, string) {
		v, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pv, claim = v, c
		pvCap, claimCap := v.Spec.Capacity[corev1.ResourceStorage], c.Status.Capacity[corev1.ResourceStorage]
		return pvCap.String() == "2Gi" && claimCap.String() == "2Gi" && len(c.Status.Conditions) == 0,
			fmt.Sprintf("PV %s, claim %s, conditions %v", pvCap.String(), claimCap.String(), c.Status.Conditions)
	})
	t.Logf("resized after %v", time.Since(t1).Round(time.Millisecond))
	if claim.Annotations[AnnResizer] != DefaultName || claim.Status.AllocatedResourceStatuses != nil {
		t.Errorf("claim annotations %v, allocatedResourceStatuses %v", claim.Annotations, claim.Status.AllocatedResourceStatuses)
	}
	if q := claim.Status.AllocatedResources[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("claim allocatedResources %v, want 2Gi", claim.Status.AllocatedResources)
	}
	// Shrinking is refused by the apiserver.
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Gi")
	if _, err := claims.Update(ctx, claim, metav1.UpdateOptions{}); err == nil {
		t.Errorf("shrinking the claim to 1Gi was accepted")
	}

	// Deleting the claim deletes the PV (reclaim policy Delete).
	t2 := time.Now()
	if err := claims.Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the PV deleted", func() (bool, string) {
		v, err := client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, string(v.Status.Phase)
	})
	t.Logf("PV deleted %v after the claim", time.Since(t2).Round(time.Millisecond))
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

// startControlPlane starts etcd, kube-apiserver and kube-controller-manager
// (only the PV binder and the PV/PVC protection controllers) on 127.0.0.1,
// stopped at the end of the test; it returns an admin config.
func startControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", "..", "bin"))
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s not in %s (make test-binaries bin/kube-controller-manager, or set KUBEBUILDER_ASSETS): %v", b, bin, err)
		}
	}
	dir := t.TempDir()
	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	start(t, dir, "etcd", filepath.Join(bin, "etcd"), "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:"+etcdPort, "--advertise-client-urls", "http://127.0.0.1:"+etcdPort,
		"--listen-peer-urls", "http://127.0.0.1:"+peerPort, "--initial-advertise-peer-urls", "http://127.0.0.1:"+peerPort,
		"--initial-cluster", "default=http://127.0.0.1:"+peerPort, "--log-level", "warn")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	write(t, dir, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	write(t, dir, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	write(t, dir, "tokens.csv", []byte(token+",admin,admin,system:masters\n"))
	certDir := filepath.Join(dir, "pki")
	start(t, dir, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), "--etcd-servers", "http://127.0.0.1:"+etcdPort,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", apiPort, "--cert-dir", certDir,
		"--token-auth-file", filepath.Join(dir, "tokens.csv"), "--authorization-mode", "RBAC",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"), "--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none")

	// The apiserver writes its self-signed serving certificate (and its CA)
	// into --cert-dir.
	ca := filepath.Join(certDir, "apiserver.crt")
	eventually(t, "the apiserver's certificate", func() (bool, string) {
		_, err := os.Stat(ca)
		return err == nil, fmt.Sprint(err)
	})
	cfg := &rest.Config{Host: "https://127.0.0.1:" + apiPort, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: ca}}
	client := kubernetes.NewForConfigOrDie(cfg)
	eventually(t, "the apiserver ready", func() (bool, string) {
		b, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil, string(b) + fmt.Sprint(err)
	})
	write(t, dir, "kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: admin}}]
current-context: c
`, cfg.Host, ca, token)))
	start(t, dir, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig", filepath.Join(dir, "kubeconfig"), "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--controllers", "persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller")
	klog.Background().Info("control plane up", "apiserver", cfg.Host)
	return cfg
}

// start runs a binary with its output in dir/<name>.log (printed if the
// test fails), and stops it at cleanup.
func start(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("--- %s log (tail):\n%s", name, b)
			}
		}
	})
}

func write(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
