package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// StartControllerManager runs the real bin/kube-controller-manager (BinDir)
// against cfg's apiserver, as cfg's user, with only controllers (e.g.
// "statefulset-controller", "garbage-collector-controller"), on loopback
// with no serving port; its kubeconfig and log go to dir. stop interrupts
// it (killed after 10 s) and, when FLEETSET_TEST_KCM_LOG is set, prints its
// log to stderr. The error says how to get the binary when it is missing.
func StartControllerManager(cfg *rest.Config, dir string, controllers ...string) (stop func(), err error) {
	return StartControllerManagerWithFlags(cfg, dir, nil, controllers...)
}

// StartControllerManagerWithFlags is StartControllerManager with flags
// added to kube-controller-manager's command line (e.g.
// "--endpointslice-updates-batch-period=3s").
func StartControllerManagerWithFlags(cfg *rest.Config, dir string, flags []string, controllers ...string) (stop func(), err error) {
	bin := filepath.Join(BinDir(), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kube-controller-manager not in %s (make test-binaries, or set KUBEBUILDER_ASSETS): %w", BinDir(), err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["a"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "a"}
	kc.CurrentContext = "c"
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0"}
	if len(controllers) > 0 {
		args = append(args, "--controllers", strings.Join(controllers, ","))
	}
	args = append(args, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	return func() {
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
		if os.Getenv("FLEETSET_TEST_KCM_LOG") != "" {
			b, _ := os.ReadFile(logPath)
			fmt.Fprintf(os.Stderr, "--- kube-controller-manager log:\n%s\n", b)
		}
	}, nil
}

// ApplyManifest creates with c every object of the multi-document YAML file
// at path (documents split on "\n---\n"), leaving existing ones as they
// are. The error names the file.
func ApplyManifest(ctx context.Context, c client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: creating %s %s: %w", path, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}
