package monitoring

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// The packages that register fleetset's metrics: fleetset-hub's
	// (controller-runtime's registry) and fleetset-scheduler's member
	// component (component-base's legacy registry).
	_ "github.com/fleetset/fleetset/federation/controller"
	_ "github.com/fleetset/fleetset/federation/heartbeat"
	_ "github.com/fleetset/fleetset/member/claims"
	_ "github.com/fleetset/fleetset/member/contact"
	_ "github.com/fleetset/fleetset/member/endpoints"
	_ "github.com/fleetset/fleetset/member/fence"
	_ "github.com/fleetset/fleetset/member/roles"
	_ "github.com/fleetset/fleetset/member/updater"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml from rules/fleetset.rules.yaml")

const (
	rulesFile          = "rules/fleetset.rules.yaml"
	prometheusRuleFile = "prometheusrule.yaml"
	runbooks           = "../../docs/operations.md"
)

// Rule is one alerting rule of a Prometheus rule file.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is one rule group.
type Group struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []Group `json:"groups"`
}

// readRules returns the groups of rules/fleetset.rules.yaml.
func readRules(t *testing.T) RuleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f RuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return f
}

// prometheusRules renders f as PrometheusRules (monitoring.coreos.com/v1),
// one per group: group fleetset-hub belongs on the hub's Prometheus, group
// fleetset-member on each member's.
func prometheusRules(f RuleFile) ([]byte, error) {
	var out bytes.Buffer
	out.WriteString("# Generated from rules/fleetset.rules.yaml by `go test ./manifests/monitoring/ -update`: edit that file.\n")
	out.WriteString("# Group fleetset-hub goes to the hub's Prometheus, group fleetset-member to each member's.\n")
	for i, g := range f.Groups {
		obj := map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "PrometheusRule",
			"metadata": map[string]any{
				"name":      g.Name,
				"namespace": "fleetset-system",
				"labels":    map[string]string{"app.kubernetes.io/name": "fleetset", "app.kubernetes.io/component": "alerts"},
			},
			"spec": map[string]any{"groups": []Group{g}},
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// TestPrometheusRuleMatchesRulesFile: prometheusrule.yaml carries exactly
// the groups of the rule file promtool tests.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	want, err := prometheusRules(readRules(t))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from %s: run go test ./manifests/monitoring/ -update", prometheusRuleFile, rulesFile)
	}
}

var (
	// stripped are the parts of an expression that name no metric: string
	// literals, label matchers, ranges and offsets, and label lists.
	stripped = []*regexp.Regexp{
		regexp.MustCompile(`"(?:[^"\\]|\\.)*"`),
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\[[^\]]*\]`),
		regexp.MustCompile(`\boffset\s+\w+`),
		regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	}
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true}
)

// metricNames returns the metric names expr selects: its identifiers that
// are neither functions, aggregations nor keywords.
func metricNames(expr string) []string {
	for _, re := range stripped {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, m := range identifier.FindAllStringSubmatch(expr, -1) {
		name := m[0]
		if m[1] != "" || keywords[name] {
			continue // a function or aggregation call, or a keyword
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`sum by (reason) (increase(a_total{reason!~"x|y"}[15m]) > 0 or (a_total unless b offset 15m)) and ignoring (state) c{state="s"} == 1`)
	if want := []string{"a_total", "a_total", "b", "c"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("metricNames = %v, want %v", got, want)
	}
}

// registered reports whether name is a metric registered in reg: a new
// gauge of that name is refused as a duplicate.
func registered(reg prometheus.Registerer, name string) bool {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe of TestRulesUseRegisteredMetrics"})
	err := reg.Register(g)
	if err == nil {
		reg.Unregister(g)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	return errors.As(err, &already) || strings.Contains(err.Error(), "previously registered descriptor with the same fully-qualified name")
}

// TestRulesUseRegisteredMetrics: every metric an alert reads is registered
// by fleetset-hub (controller-runtime's registry, leader election
// included) or fleetset-scheduler's member component (the legacy
// registry), so renaming a metric breaks this test.
func TestRulesUseRegisteredMetrics(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			names := metricNames(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric found in %q", r.Alert, r.Expr)
			}
			for _, n := range names {
				if !registered(crmetrics.Registry, n) && !registered(legacyregistry.Registerer(), n) {
					t.Errorf("%s: metric %s is registered by neither fleetset-hub nor fleetset-scheduler", r.Alert, n)
				}
				seen[n] = true
			}
		}
	}
	var all []string
	for n := range seen {
		all = append(all, n)
	}
	sort.Strings(all)
	t.Logf("metrics the alerts read: %s", strings.Join(all, ", "))
}

// anchor returns GitHub's anchor of a markdown heading's text.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestRunbooks: every alert has a severity, a summary, a description and
// a runbook_url docs/operations.md#alert-<name>, and that page has the
// heading "Alert: <name>".
func TestRunbooks(t *testing.T) {
	doc, err := os.ReadFile(runbooks)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[anchor(strings.TrimSpace(strings.TrimLeft(h, "#")))] = true
		}
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[k] == "" {
					t.Errorf("%s: no annotation %s", r.Alert, k)
				}
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
			}
			want := "alert-" + strings.ToLower(r.Alert)
			if u := r.Annotations["runbook_url"]; u != "docs/operations.md#"+want {
				t.Errorf("%s: runbook_url %q, want docs/operations.md#%s", r.Alert, u, want)
			}
			if !anchors[want] {
				t.Errorf("%s: docs/operations.md has no heading \"Alert: %s\"", r.Alert, r.Alert)
			}
		}
	}
}

// TestDashboardUsesRegisteredMetrics: dashboards/fleetset.json is a
// Grafana dashboard whose every query reads registered metrics.
func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	b, err := os.ReadFile("dashboards/fleetset.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := yaml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without uid or panels")
	}
	queries := 0
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			for _, n := range metricNames(strings.NewReplacer("$namespace", "x", "$fleetset", "x").Replace(tg.Expr)) {
				if !registered(crmetrics.Registry, n) && !registered(legacyregistry.Registerer(), n) {
					t.Errorf("panel %q: metric %s is registered by neither fleetset-hub nor fleetset-scheduler", p.Title, n)
				}
			}
		}
	}
	t.Logf("%d panels, %d queries", len(d.Panels), queries)
}

// TestRegisteredProbe: the probe tells a registered name from another.
func TestRegisteredProbe(t *testing.T) {
	if !registered(crmetrics.Registry, "fleetset_hub_members_lost") || !registered(legacyregistry.Registerer(), "fleetset_member_state") {
		t.Fatal("registered metrics not found")
	}
	if registered(crmetrics.Registry, "fleetset_no_such_metric") || registered(legacyregistry.Registerer(), "fleetset_no_such_metric") {
		t.Fatal("an unregistered metric was found")
	}
}
