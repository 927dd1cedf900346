package kindconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/yaml"
)

// fakeProvider is a container-runtime CLI (the nerdctl provider's protocol)
// that answers what kind asks before it provisions nodes — info, an empty
// list of clusters, the node image as present — and refuses everything else,
// recording it. kind
// loads (strict decoding, defaulting) and validates the config before its
// first provisioning call, so reaching one proves the config valid.
const fakeProvider = `#!/bin/sh
echo "$*" >> "$FAKE_PROVIDER_LOG"
case "$1" in
  info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true}' ;;
  ps|inspect) ;;
  *) echo "fake provider: refusing $1" >&2; exit 1 ;;
esac
`

// createWithKind runs kind's cluster creation on config against the fake
// provider. It returns kind's error and whether kind got past loading and
// validating the config (it asked the provider for more than info and ps).
func createWithKind(t *testing.T, config string) (error, bool) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-nerdctl")
	if err := os.WriteFile(bin, []byte(fakeProvider), 0o755); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(dir, "calls")
	t.Setenv("FAKE_PROVIDER_LOG", logf)
	p := cluster.NewProvider(cluster.ProviderWithNerdctl(bin))
	err := p.Create("", cluster.CreateWithConfigFile(config), cluster.CreateWithKubeconfigPath(filepath.Join(dir, "kubeconfig")))
	calls, _ := os.ReadFile(logf)
	provisioned := false
	for _, c := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		if c != "" && !strings.HasPrefix(c, "info") && !strings.HasPrefix(c, "ps") && !strings.HasPrefix(c, "inspect") {
			provisioned = true
		}
	}
	return err, provisioned
}

func repoRoot() string { return filepath.Join("..", "..", "..") }

func TestKindConfigsLoadAndValidate(t *testing.T) {
	wantZones := map[string]bool{"zone-a": true, "zone-b": true, "zone-c": true}
	for _, tc := range []struct {
		file    string
		name    string
		members bool
	}{
		{file: "hub.yaml", name: "fleetset-hub"},
		{file: "member-east.yaml", name: "fleetset-east", members: true},
		{file: "member-west.yaml", name: "fleetset-west", members: true},
		{file: "member-north.yaml", name: "fleetset-north", members: true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(repoRoot(), "kind-configs", tc.file)
			err, provisioned := createWithKind(t, path)
			if !provisioned {
				t.Fatalf("kind refused %s before provisioning: %v", tc.file, err)
			}
			// Beyond kind's rules: the names and zones the fleet relies on.
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var c v1alpha4.Cluster
			if err := yaml.UnmarshalStrict(raw, &c); err != nil {
				t.Fatalf("decoding %s: %v", tc.file, err)
			}
			if c.Name != tc.name {
				t.Errorf("cluster name %q, want %q", c.Name, tc.name)
			}
			if c.Networking.APIServerAddress != "127.0.0.1" {
				t.Errorf("apiServerAddress %q, want 127.0.0.1", c.Networking.APIServerAddress)
			}
			if !tc.members {
				return
			}
			// One node per zone (the control plane is zone-a and runs
			// pods, e2e/kind/kind-up.sh; the tests that kill or freeze a
			// node keep their instances off it, e2e onKindWorkers); the
			// workers carry the label fleetset-scheduler is placed by
			// (e2e/kind/fleetset.sh).
			zones := map[string]int{}
			workers := 0
			for _, n := range c.Nodes {
				z := n.Labels["topology.kubernetes.io/zone"]
				zones[z]++
				switch n.Role {
				case v1alpha4.ControlPlaneRole:
					if z != "zone-a" {
						t.Errorf("control-plane node in zone %q, want zone-a", z)
					}
				case v1alpha4.WorkerRole:
					workers++
					if n.Labels["fleetset.io/kind-node"] != "worker" {
						t.Errorf("worker in %s without the label fleetset.io/kind-node=worker", z)
					}
				}
			}
			if workers < 2 {
				t.Errorf("%d workers: fleetset-scheduler's two replicas need two", workers)
			}
			for z := range wantZones {
				if zones[z] != 1 {
					t.Errorf("%d nodes in %s, want 1: zones %v", zones[z], z, zones)
				}
			}
			for z := range zones {
				if !wantZones[z] {
					t.Errorf("node in unexpected zone %q", z)
				}
			}
		})
	}
}

// TestKindRefusesBrokenConfigs shows the check above can fail: kind's loader
// or validation stops each of these before provisioning.
func TestKindRefusesBrokenConfigs(t *testing.T) {
	for name, config := range map[string]string{
		"unknown field":    "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n  zone: a\n",
		"unknown role":     "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: master\n",
		"no control-plane": "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: worker\n",
		"wrong apiVersion": "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha1\nnodes:\n- role: control-plane\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kind.yaml")
			if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			err, provisioned := createWithKind(t, path)
			if provisioned || err == nil {
				t.Fatalf("kind accepted a broken config (err %v)", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}
