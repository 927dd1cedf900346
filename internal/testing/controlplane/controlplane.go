// Package controlplane starts a real etcd + kube-apiserver for integration
// tests, with controller-runtime's envtest, from the binaries the Makefile
// puts in bin/ (kube-apiserver built from the pinned k8s.io/kubernetes module,
// etcd built from the module pinned in e2e/tools/etcd). Both listen on
// 127.0.0.1 only.
package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot returns the repository's top folder, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// BinDir returns where the control-plane binaries are: $KUBEBUILDER_ASSETS,
// else <repo>/bin.
func BinDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin")
}

// OCMCRDs returns the paths of the ManagedCluster, ManifestWork, Placement,
// PlacementDecision, ManagedClusterAddOn, ClusterManagementAddOn,
// ManagedClusterSet and ManagedClusterSetBinding CRDs of
// the open-cluster-management.io/api module in the module cache, for Start.
// The error says when `go list` cannot locate the module.
func OCMCRDs() ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "open-cluster-management.io/api")
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating open-cluster-management.io/api: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	return []string{
		filepath.Join(dir, "cluster", "v1", "0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml"),
		filepath.Join(dir, "work", "v1", "0000_00_work.open-cluster-management.io_manifestworks.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta2", "0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta2", "0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta1", "0000_02_clusters.open-cluster-management.io_placements.crd.yaml"),
		filepath.Join(dir, "cluster", "v1beta1", "0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml"),
		filepath.Join(dir, "addon", "v1alpha1", "0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml"),
		filepath.Join(dir, "addon", "v1alpha1", "0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml"),
	}, nil
}

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	// Config is an admin rest.Config for the apiserver.
	Config *rest.Config
}

// Start starts etcd and kube-apiserver and installs the CRDs found in the
// given folders or files (relative to the repository root when relative).
// The error says which binary is missing and how to build it.
func Start(crdPaths ...string) (*Env, error) {
	bin := BinDir()
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make test-binaries` (or set KUBEBUILDER_ASSETS): %w", b, bin, err)
		}
	}
	var paths []string
	for _, p := range crdPaths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(RepoRoot(), p)
		}
		paths = append(paths, p)
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
		// envtest's default, 10 s, is too short on a loaded 2-core machine.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: time.Minute},
	}
	api := te.ControlPlane.GetAPIServer()
	api.Configure().
		Set("bind-address", "127.0.0.1").
		Set("advertise-address", "127.0.0.1").
		// Our own tests create pods without a ServiceAccount token.
		Append("disable-admission-plugins", "ServiceAccount")
	cfg, err := te.Start()
	if err != nil {
		// Start may fail after etcd and kube-apiserver are up (e.g. a CRD is
		// refused): stop them so no process outlives the test.
		_ = te.Stop()
		return nil, fmt.Errorf("starting envtest control plane: %w", err)
	}
	return &Env{Environment: te, Config: cfg}, nil
}
