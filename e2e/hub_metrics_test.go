//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hubMetricsURL returns the local fleet's fleetset-hub /metrics URL, from
// its port plan (FLEET_DIR/ports), or skips the test on another fleet.
func hubMetricsURL(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLEET_DIR")
	if theFleet.cfg.Provider != "local" || dir == "" {
		t.Skip("needs the local fleet (FLEETSET_E2E_PROVIDER=local, FLEET_DIR): the hub's metrics port")
	}
	f, err := os.Open(filepath.Join(dir, "ports"))
	if err != nil {
		t.Skipf("no port plan: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "hub" {
			continue
		}
		for _, kv := range fields[1:] {
			if port, ok := strings.CutPrefix(kv, "hub-metrics="); ok {
				return "http://127.0.0.1:" + port + "/metrics"
			}
		}
	}
	t.Skip("no hub-metrics port in the port plan")
	return ""
}

// metricLines returns the exposition lines of url that start with prefix.
func metricLines(ctx context.Context, url, prefix string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out, nil
}

// TestHubFleetSetMetrics: a FleetSet in a namespace bound to no cluster set
// is Degraded ClusterNotBound, and the hub's gauge says so for that
// FleetSet (rollout not blocked); once the namespace is bound the Degraded
// series is gone; once the FleetSet is deleted, its blocked series too.
func TestHubFleetSetMetrics(t *testing.T) {
	f := theFleet
	url := hubMetricsURL(t)
	ns := f.newUnboundNamespace(t, "e2e-metrics")
	f.createFleetSet(t, f.newFleetSet(ns, "db", 2))
	labels := fmt.Sprintf(`{fleetset="db",namespace=%q`, ns)
	degraded := "fleetset_hub_fleetset_degraded" + labels + `,reason="ClusterNotBound"} 1`
	blocked := "fleetset_hub_rollout_blocked" + labels + "} 0"
	has := func(what string, want ...string) {
		eventually(t, waitTimeout, what, func(ctx context.Context) (bool, string, error) {
			lines, err := metricLines(ctx, url, "fleetset_hub_")
			if err != nil {
				return false, "", err
			}
			var mine []string
			for _, l := range lines {
				gauge := strings.HasPrefix(l, "fleetset_hub_fleetset_degraded{") || strings.HasPrefix(l, "fleetset_hub_rollout_blocked{")
				if gauge && strings.Contains(l, fmt.Sprintf("namespace=%q", ns)) {
					mine = append(mine, l)
				}
			}
			got := strings.Join(mine, "\n")
			for _, w := range want {
				if !strings.Contains(got, w) {
					return false, got, nil
				}
			}
			return len(mine) == len(want), got, nil
		})
	}
	has("Degraded ClusterNotBound and rollout not blocked in the hub's metrics", degraded, blocked)
	f.bindClusterSet(t, ns, "global")
	has("no Degraded series once bound", blocked)
	if err := f.hub.Delete(t.Context(), f.newFleetSet(ns, "db", 2)); err != nil {
		t.Fatal(err)
	}
	has("no series once the FleetSet is deleted")
}
