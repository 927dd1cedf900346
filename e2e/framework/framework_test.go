package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("FLEETSET_HUB_KUBECONFIG", "/k/hub")
	t.Setenv("FLEETSET_MEMBER_KUBECONFIGS", "east=/k/east, west=/k/west")
	t.Setenv("FLEETSET_E2E_SPARE_MEMBERS", "north=/k/north")
	t.Setenv("FLEETSET_E2E_TIMEOUT", "6m")
	t.Setenv("FLEETSET_E2E_HOOK_TIMEOUT", "bad")
	t.Setenv("FLEETSET_E2E_PROVIDER", "local")
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{HubKubeconfig: "/k/hub", Members: []NamedPath{{"east", "/k/east"}, {"west", "/k/west"}},
		Spare: []NamedPath{{"north", "/k/north"}}, Zones: []string{"zone-a", "zone-b", "zone-c"}, Provider: "local",
		Timeout: 6 * time.Minute, ActionTimeout: 2 * time.Minute, Image: "registry.k8s.io/pause:3.10"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("FromEnv = %+v, want %+v", c, want)
	}
	for env, v := range map[string]string{"FLEETSET_MEMBER_KUBECONFIGS": "east=/k/east", "FLEETSET_E2E_SPARE_MEMBERS": "north"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, v)
			if _, err := FromEnv(); err == nil {
				t.Errorf("%s=%s: no error", env, v)
			}
		})
	}
}

func TestNewProvider(t *testing.T) {
	for name, want := range map[string]string{"": "none", "none": "none", "local": "local", "kind": "kind"} {
		p, err := NewProvider(name)
		if err != nil || p.Name() != want {
			t.Errorf("NewProvider(%q) = %v, %v; want %s", name, p, err, want)
		}
	}
	if _, err := NewProvider("gke"); err == nil {
		t.Error("unknown provider: no error")
	}
}

func TestSupports(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"hub/run/kube-apiserver.sh", "east/run/hub-link.sh", "east/run/registration-agent.sh"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLocal(dir, "/repo")
	for _, c := range []struct {
		op            Op
		cluster, proc string
		want          bool
	}{
		{OpStop, "hub", "kube-apiserver", true}, {OpStop, "east", "", true}, {OpCut, "east", "", true},
		{OpCut, "hub", "", false}, {OpKill, "east", "fleetset-scheduler", false}, {OpRestart, "west", "fleetset-scheduler", false},
	} {
		if got := l.Supports(c.op, c.cluster, c.proc); got != c.want {
			t.Errorf("Supports(%s, %s, %s) = %v, want %v", c.op, c.cluster, c.proc, got, c.want)
		}
	}
	k := NewKind(KindFromEnv())
	for _, c := range []struct {
		op            Op
		cluster, proc string
		want          bool
	}{
		{OpStop, "east", "", true}, {OpStart, "east", "work-agent", true}, {OpStop, "hub", "fleetset-hub", true},
		{OpStop, "hub", "kube-apiserver", false}, {OpStart, "hub", "fleetset-hub", true},
		{OpRestart, "hub", "fleetset-hub", true}, {OpRestart, "east", "kube-system/coredns", true}, {OpCut, "east", "", true}, {OpCut, "hub", "", false},
		{OpKill, "hub", "fleetset-hub", false},
	} {
		if got := k.Supports(c.op, c.cluster, c.proc); got != c.want {
			t.Errorf("kind: Supports(%s, %s, %s) = %v, want %v", c.op, c.cluster, c.proc, got, c.want)
		}
	}
	if l.Agent != "/repo/e2e/fleet/agent.sh" {
		t.Errorf("agent %s", l.Agent)
	}
}

// recorder records what it is asked to do.
type recorder struct {
	None
	calls []string
}

func (r *recorder) rec(s ...string) error {
	r.calls = append(r.calls, strings.Join(s, " "))
	return nil
}
func (r *recorder) Stop(_ context.Context, c, p string) error   { return r.rec("stop", c, p) }
func (r *recorder) Start(_ context.Context, c, p string) error  { return r.rec("start", c, p) }
func (r *recorder) Kill(_ context.Context, c, p string) error   { return r.rec("kill", c, p) }
func (r *recorder) Pause(_ context.Context, c, p string) error  { return r.rec("pause", c, p) }
func (r *recorder) Resume(_ context.Context, c, p string) error { return r.rec("resume", c, p) }
func (r *recorder) Cut(_ context.Context, c string) error       { return r.rec("cut", c) }
func (r *recorder) Heal(_ context.Context, c string) error      { return r.rec("heal", c) }
func (r *recorder) Restart(_ context.Context, c, p, v string, a ...string) error {
	return r.rec(append([]string{"restart", c, p, v}, a...)...)
}

func TestDo(t *testing.T) {
	r := &recorder{}
	for _, a := range []Action{{Op: OpStop, Cluster: "east", Proc: "work-agent"}, {Op: OpStart, Cluster: "east"}, {Op: OpKill, Cluster: "hub", Proc: "fleetset-hub"},
		{Op: OpPause, Cluster: "hub", Proc: "x"}, {Op: OpResume, Cluster: "hub", Proc: "x"}, {Op: OpCut, Cluster: "west"}, {Op: OpHeal, Cluster: "west"},
		{Op: OpRestart, Cluster: "hub", Proc: "fleetset-hub", Args: []string{"--v=2"}}} {
		if err := Do(context.Background(), r, a); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"stop east work-agent", "start east ", "kill hub fleetset-hub", "pause hub x", "resume hub x", "cut west", "heal west", "restart hub fleetset-hub  --v=2"}
	if !reflect.DeepEqual(r.calls, want) {
		t.Errorf("calls %q, want %q", r.calls, want)
	}
	if err := Do(context.Background(), None{}, Action{Op: OpCut, Cluster: "east"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("None: %v, want ErrUnsupported", err)
	}
}

func TestNormalizedImageRef(t *testing.T) {
	for in, want := range map[string]string{
		"fleetset-e2e-echo:dev":                "docker.io/library/fleetset-e2e-echo:dev",
		"library/busybox:1":                    "docker.io/library/busybox:1",
		"registry.k8s.io/pause:3.10.1":         "registry.k8s.io/pause:3.10.1",
		"mirror.east.example/k8s/pause:3.10.1": "mirror.east.example/k8s/pause:3.10.1",
		"localhost/x:1":                        "localhost/x:1",
		"host:5000/x:1":                        "host:5000/x:1",
	} {
		if got := NormalizedImageRef(in); got != want {
			t.Errorf("NormalizedImageRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCutScript(t *testing.T) {
	s := cutScript([]string{"172.18.0.2/32", "fc00:f853:ccd:e793::e/128", "10.242.0.0/16"})
	for _, want := range []string{
		"iptables -A FLEETSET-CUT -d 172.18.0.2/32 -j DROP", "iptables -A FLEETSET-CUT -s 172.18.0.2/32 -j DROP",
		"iptables -A FLEETSET-CUT -d 10.242.0.0/16 -j DROP", "iptables -I FORWARD 1 -j FLEETSET-CUT",
		"iptables -I INPUT 1 -j FLEETSET-CUT", "iptables -I OUTPUT 1 -j FLEETSET-CUT",
		"ip6tables -A FLEETSET-CUT -d fc00:f853:ccd:e793::e/128 -j DROP", "ip6tables -I FORWARD 1 -j FLEETSET-CUT",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("cut script lacks %q:\n%s", want, s)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "member-x.yaml")
	if err := os.WriteFile(p, []byte("networking:\n  apiServerAddress: 127.0.0.1\n  podSubnet: 10.241.0.0/16\n  serviceSubnet: 10.97.0.0/16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := podSubnet(p); err != nil || s != "10.241.0.0/16" {
		t.Errorf("podSubnet = %q, %v; want 10.241.0.0/16", s, err)
	}
}
