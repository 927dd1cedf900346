package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Config is the fleet under test as the environment gives it.
type Config struct {
	HubKubeconfig string
	// Members and Spare map a member's name to its kubeconfig, in order.
	Members, Spare []NamedPath
	Zones          []string
	// Provider is local, kind or none.
	Provider string
	// Timeout is the default wait; ActionTimeout bounds one provider action.
	Timeout, ActionTimeout time.Duration
	Image                  string
}

// NamedPath is one name=path item of a list.
type NamedPath struct{ Name, Path string }

// FromEnv reads the Config; it needs the hub and at least two members.
func FromEnv() (Config, error) {
	c := Config{
		HubKubeconfig: os.Getenv("FLEETSET_HUB_KUBECONFIG"),
		Zones:         strings.Split(EnvString("FLEETSET_E2E_ZONES", "zone-a,zone-b,zone-c"), ","),
		Provider:      EnvString("FLEETSET_E2E_PROVIDER", "none"),
		Timeout:       EnvDuration("FLEETSET_E2E_TIMEOUT", 3*time.Minute),
		ActionTimeout: EnvDuration("FLEETSET_E2E_HOOK_TIMEOUT", 2*time.Minute),
		Image:         EnvString("FLEETSET_E2E_IMAGE", "registry.k8s.io/pause:3.10"),
	}
	members := os.Getenv("FLEETSET_MEMBER_KUBECONFIGS")
	if c.HubKubeconfig == "" || members == "" {
		return c, fmt.Errorf("set FLEETSET_HUB_KUBECONFIG and FLEETSET_MEMBER_KUBECONFIGS (name=path,name=path); `make e2e` does it for the local fleet")
	}
	var err error
	if c.Members, err = parseNamedPaths("FLEETSET_MEMBER_KUBECONFIGS", members); err != nil {
		return c, err
	}
	if len(c.Members) < 2 {
		return c, fmt.Errorf("FLEETSET_MEMBER_KUBECONFIGS: at least two members needed, got %d", len(c.Members))
	}
	if spare := os.Getenv("FLEETSET_E2E_SPARE_MEMBERS"); spare != "" {
		if c.Spare, err = parseNamedPaths("FLEETSET_E2E_SPARE_MEMBERS", spare); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseNamedPaths parses name=path,... (the value of env).
func parseNamedPaths(env, value string) ([]NamedPath, error) {
	var out []NamedPath
	for _, kv := range strings.Split(value, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("%s: %q is not name=path", env, kv)
		}
		out = append(out, NamedPath{Name: name, Path: path})
	}
	return out, nil
}

// EnvString returns the variable key, or def when it is unset or empty.
func EnvString(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// EnvDuration returns the variable key as a duration, or def when it is
// unset or no duration.
func EnvDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

// RepoRoot is REPO_ROOT, else the repository this package was built from.
func RepoRoot() string {
	if r := os.Getenv("REPO_ROOT"); r != "" {
		return r
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}
