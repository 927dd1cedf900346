//go:build integration

package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	_ "k8s.io/component-base/logs/json/register" // the harness's -logging-format=json
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	fwkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/fleetset/fleetset/internal/testing/controlplane"
	"github.com/fleetset/fleetset/plugins"
	"github.com/fleetset/fleetset/plugins/ordinalspread"
	"github.com/fleetset/fleetset/plugins/subsetplacement"
)

// configFile holds the workloads (upstream's test cases and ours).

// topic names the harness's output files: <benchmark>_benchmark_<topic>_<time>.json.
const topic = "fleetset"

// defaultNodes is the node count the workloads are written for (their
// names start with "5000Nodes_"); BENCH_NODES overrides it.
const defaultNodes = 5000

// subsetPlacementCRD is the CRD the fleetset plugins need before they start.
var subsetPlacementCRD = filepath.Join(controlplane.RepoRoot(), "manifests", "crds", "fleetset.io_subsetplacements.yaml")

func TestMain(m *testing.M) {
	// The harness's flags (-perf-scheduling-label-filter, -data-items-dir,
	// -v, ...) and logging.
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctrllog.SetLogger(klog.Background())
	os.Exit(m.Run())
}

// BenchmarkPerfScheduling runs the workloads of performance-config.yaml with
// kube-scheduler's harness (RunBenchmarkPerfScheduling), the fleetset
// plugins in its out-of-tree registry, then prints the SchedulingThroughput
// of each workload that ran, the ratios of the pairs that ran, and the
// fleetset plugins' execution times, as lines starting with "BENCH".
//
// Select workloads with -perf-scheduling-label-filter (default
// "performance") and -bench (e.g. 'BenchmarkPerfScheduling/SchedulingBasic');
// BENCH_NODES sets the node count of the 5000Nodes_* workloads. The
// harness's JSON data items go to -data-items-dir (a temporary folder when
// unset). Run with -benchtime=1ns: each workload once.
func BenchmarkPerfScheduling(b *testing.B) {
	nodes := defaultNodes
	if v := os.Getenv("BENCH_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_NODES=%q: want a positive integer", v)
		}
		nodes = n
	}
	cfg, err := withNodes(configFile, nodes, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	dir := flag.Lookup("data-items-dir").Value.String()
	if dir == "" {
		dir = b.TempDir()
		if err := flag.Set("data-items-dir", dir); err != nil {
			b.Fatal(err)
		}
	}
	start, loadBefore := time.Now(), loadAverage()
	perf.RunBenchmarkPerfScheduling(b, cfg, topic, benchRegistry())
	if b.Failed() {
		return
	}
	// The machine's load beside the figures: the harness's own processes
	// load it too (a run alone on 2 cores reads about 2-3).
	fmt.Printf("BENCH load before: %s; after: %s; %.0f s\n", loadBefore, loadAverage(), time.Since(start).Seconds())
	file, err := newestDataItems(dir, b.Name()+"_benchmark_"+topic+"_", start)
	if err != nil {
		b.Fatal(err)
	}
	items, err := readDataItems(file)
	if err != nil {
		b.Fatal(err)
	}
	text, _ := report(items, b.Name()+"/", nodes, file)
	fmt.Print(text)
}

// ratioLine is one ratio a report printed: its key (what and workload) and
// the average and p50 ratios.
type ratioLine struct {
	key      string
	avg, p50 float64
}

// ratioRuns collects the ratios of several runs of BenchmarkPerfScheduling
// (make bench-scheduler BENCH_COUNT=N runs it N times, one process each,
// every selected workload once per run, so the two sides of a ratio ran
// minutes apart at most, in every run), read back from their data items
// files (TestPrintDataItems).
type ratioRuns struct {
	keys  []string
	byKey map[string][]ratioLine
	nRuns int
}

// add records one run's ratios and, from the second run on, returns a
// "BENCH median of N runs" line per ratio: the median average ratio and
// the median p50 ratio, with each run's values (in run order).
func (r *ratioRuns) add(ratios []ratioLine) string {
	if r.byKey == nil {
		r.byKey = map[string][]ratioLine{}
	}
	r.nRuns++
	for _, l := range ratios {
		if _, ok := r.byKey[l.key]; !ok {
			r.keys = append(r.keys, l.key)
		}
		r.byKey[l.key] = append(r.byKey[l.key], l)
	}
	if r.nRuns < 2 {
		return ""
	}
	var sb strings.Builder
	for _, k := range r.keys {
		ls := r.byKey[k]
		avgs, p50s := make([]float64, len(ls)), make([]float64, len(ls))
		for i, l := range ls {
			avgs[i], p50s[i] = l.avg, l.p50
		}
		fmt.Fprintf(&sb, "BENCH median of %d runs: ratio %s: average %.3f (%s), p50 %.3f (%s)\n",
			len(ls), k, median(avgs), joinRatios(avgs), median(p50s), joinRatios(p50s))
	}
	return sb.String()
}

// median returns the median of vs (the mean of the two middle values for
// an even count; 0 for none). It does not modify vs.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// joinRatios formats vs as "0.880 0.823 0.701".
func joinRatios(vs []float64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strings.Join(out, " ")
}

// loadAverage returns the 1- and 5-minute load averages of /proc/loadavg as
// "load1=x load5=y", or "load unknown" where it cannot be read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return "load unknown"
	}
	return "load1=" + f[0] + " load5=" + f[1]
}

// TestPrintDataItems prints the BENCH lines of earlier runs' data items
// files, named by BENCH_DATA_ITEMS (separated by spaces; BENCH_NODES: their
// node count): one file's report, or for several (in run order) only each
// ratio's median over them (make bench-scheduler BENCH_COUNT=N). It skips
// without BENCH_DATA_ITEMS.
func TestPrintDataItems(t *testing.T) {
	files := strings.Fields(os.Getenv("BENCH_DATA_ITEMS"))
	if len(files) == 0 {
		t.Skip("set BENCH_DATA_ITEMS to data items files of BenchmarkPerfScheduling")
	}
	nodes := defaultNodes
	if n, err := strconv.Atoi(os.Getenv("BENCH_NODES")); err == nil {
		nodes = n
	}
	var runs ratioRuns
	medians := ""
	for _, file := range files {
		items, err := readDataItems(file)
		if err != nil {
			t.Fatal(err)
		}
		text, ratios := report(items, "BenchmarkPerfScheduling/", nodes, file)
		if len(files) == 1 {
			fmt.Print(text)
		}
		medians = runs.add(ratios)
	}
	fmt.Print(medians)
}

// withNodes returns configFile itself when nodes is defaultNodes, else a
// copy written into dir whose "5000Nodes_*" workloads have initNodes set to
// nodes and the name prefix to "<nodes>Nodes_". Relative paths in the copy
// still resolve: the harness reads them from the working directory.
func withNodes(configFile string, nodes int, dir string) (string, error) {
	if nodes == defaultNodes {
		return configFile, nil
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		return "", err
	}
	var cases []map[string]any
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return "", fmt.Errorf("%s: %w", configFile, err)
	}
	prefix := fmt.Sprintf("%dNodes_", defaultNodes)
	for _, tc := range cases {
		workloads, _ := tc["workloads"].([]any)
		for _, w := range workloads {
			w, _ := w.(map[string]any)
			name, _ := w["name"].(string)
			params, _ := w["params"].(map[string]any)
			if !strings.HasPrefix(name, prefix) || params == nil {
				continue
			}
			w["name"] = fmt.Sprintf("%dNodes_", nodes) + strings.TrimPrefix(name, prefix)
			params["initNodes"] = nodes
		}
	}
	out, err := yaml.Marshal(cases)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, configFile)
	return path, os.WriteFile(path, out, 0o644)
}

// benchRegistry returns the fleetset plugins' registry (plugins.Registry)
// with each factory first installing the SubsetPlacement CRD into the
// harness's apiserver, once per apiserver. The plugins wait, when the
// scheduler builds them, for their SubsetPlacement informer to sync, which
// needs the CRD; the harness builds the scheduler right after starting the
// apiserver, before any workload op (createAny) or WithPrepareFn hook runs,
// so the CRD cannot come from the workload. Profiles without the fleetset
// plugins never call these factories and get no CRD.
func benchRegistry() fwkruntime.Registry {
	var mu sync.Mutex
	installed := map[*rest.Config]bool{}
	ensureCRD := func(cfg *rest.Config) error {
		mu.Lock()
		defer mu.Unlock()
		if installed[cfg] {
			return nil
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{subsetPlacementCRD}, ErrorIfPathMissing: true}); err != nil {
			return fmt.Errorf("installing %s: %w", subsetPlacementCRD, err)
		}
		installed[cfg] = true
		return nil
	}
	reg := fwkruntime.Registry{}
	for name, factory := range plugins.Registry(nil) {
		reg[name] = func(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
			if h.KubeConfig() == nil {
				return nil, fmt.Errorf("%s needs the scheduler's kubeconfig", name)
			}
			if err := ensureCRD(h.KubeConfig()); err != nil {
				return nil, err
			}
			return factory(ctx, args, h)
		}
	}
	return reg
}

// newestDataItems returns the newest file in dir named prefix* and ending
// in .json, modified at or after since.
func newestDataItems(dir, prefix string, since time.Time) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, prefix+"*.json"))
	if err != nil {
		return "", err
	}
	var newest string
	var newestTime time.Time
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil || fi.ModTime().Before(since.Truncate(time.Second)) {
			continue
		}
		if newest == "" || fi.ModTime().After(newestTime) {
			newest, newestTime = m, fi.ModTime()
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no data items file %s*.json in %s written by this run", prefix, dir)
	}
	return newest, nil
}

// readDataItems decodes the harness's JSON data items file.
func readDataItems(file string) ([]perf.DataItem, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var items perf.DataItems
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return items.DataItems, nil
}

// throughput is one workload's SchedulingThroughput, in pods/s.
type throughput struct {
	avg, p50, p90, p99 float64
}

// comparison is a ratio the report prints when both workloads ran: the
// test case num over the test case den, for each workload name they share.
type comparison struct {
	what     string
	num, den string
}

var comparisons = []comparison{
	{"unmanaged pods: fleetset profile / default profile", "SchedulingBasic_FleetsetProfile", "SchedulingBasic"},
	{"unmanaged pods: fleetset profile / default profile", "TopologySpreading_FleetsetProfile", "TopologySpreading"},
	{"ordinal placement: SubsetPlacement (fleetset) / PodTopologySpread (default)", "OrdinalPlacement_SubsetPlacement", "OrdinalPlacement_PodTopologySpread"},
	{"ordinal placement: with the label PATCH / pods created labelled (no PATCH)", "OrdinalPlacement_SubsetPlacement", "OrdinalPlacement_SubsetPlacementLabelled"},
	{"ordinal placement: localityMetadata Annotations (fleetset) / PodTopologySpread (default)", "OrdinalPlacement_SubsetPlacementAnnotations", "OrdinalPlacement_PodTopologySpread"},
	{"ordinal placement: localityMetadata Annotations / LabelsAndAnnotations (the label PATCH)", "OrdinalPlacement_SubsetPlacementAnnotations", "OrdinalPlacement_SubsetPlacement"},
}

// unconstrained compares the placed pods with upstream's unconstrained pods
// for every pair of their workloads at the same node count: with the label
// PATCH at PreBind (what a cluster runs) and without it (pods created
// already labelled, or localityMetadata Annotations). Only a pair of the
// same workload name compares like with like: SchedulingBasic measures
// 10,000 pods, and from about the 5000th on the harness has created them
// all, so its throughput rises (docs/benchmarks.md); a "vs" pair of
// different pod counts is context only.
var unconstrained = []comparison{
	{"ordinal placement (fleetset) / SchedulingBasic (default, no constraint)", "OrdinalPlacement_SubsetPlacement", "SchedulingBasic"},
	{"ordinal placement without the label PATCH (pods created labelled) / SchedulingBasic", "OrdinalPlacement_SubsetPlacementLabelled", "SchedulingBasic"},
	{"ordinal placement, localityMetadata Annotations (no PATCH) / SchedulingBasic", "OrdinalPlacement_SubsetPlacementAnnotations", "SchedulingBasic"},
}

// upstreamThresholds are the SchedulingThroughput thresholds (Average,
// pods/s) of upstream's performance-config.yaml files at v1.34.4, for the
// test cases this file mirrors, at 5000 nodes; CI machines, not this one.
var upstreamThresholds = map[string]float64{
	"SchedulingBasic/5000Nodes_10000Pods":  270,
	"TopologySpreading/5000Nodes_5000Pods": 85,
}

// report formats the data items as BENCH lines: one per workload's
// SchedulingThroughput, one per comparison whose both sides ran, and the
// fleetset plugins' execution times (the framework samples them). prefix
// (the benchmark's name and "/") is cut from the items' names; nodes and
// file are printed in the header. It also returns the ratios it printed.
func report(items []perf.DataItem, prefix string, nodes int, file string) (string, []ratioLine) {
	tp := map[string]throughput{} // "<test case>/<workload>" → throughput
	var keys []string
	type pluginTime struct{ key, line string }
	var pluginTimes []pluginTime
	for _, it := range items {
		name := strings.TrimPrefix(it.Labels["Name"], prefix)
		if i := strings.LastIndex(name, "/"); i > 0 {
			name = name[:i] // drop the namespace
		}
		switch it.Labels["Metric"] {
		case "SchedulingThroughput":
			tp[name] = throughput{it.Data["Average"], it.Data["Perc50"], it.Data["Perc90"], it.Data["Perc99"]}
			keys = append(keys, name)
		case "scheduler_plugin_execution_duration_seconds":
			// Ours, and PodTopologySpread where it replaces ours.
			p := it.Labels["plugin"]
			if p != subsetplacement.Name && p != ordinalspread.Name &&
				(p != "PodTopologySpread" || !strings.HasPrefix(name, "OrdinalPlacement_PodTopologySpread/")) {
				continue
			}
			key := name + " " + p + " " + it.Labels["extension_point"]
			pluginTimes = append(pluginTimes, pluginTime{key, fmt.Sprintf("BENCH plugin %-60s %-23s avg %8.4f p50 %8.4f p99 %8.4f %s\n",
				name+" "+p, it.Labels["extension_point"], it.Data["Average"], it.Data["Perc50"], it.Data["Perc99"], it.Unit)})
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "BENCH scheduler_perf (k8s.io/kubernetes v1.34.4 harness), %d nodes, one run per workload; data items: %s\n", nodes, file)
	fmt.Fprintf(&sb, "BENCH %-56s %9s %9s %9s %9s  %s\n", "workload: SchedulingThroughput pods/s", "average", "p50", "p90", "p99", "upstream threshold (CI)")
	for _, k := range keys {
		t := tp[k]
		threshold := ""
		if v, ok := upstreamThresholds[strings.Replace(k, "_FleetsetProfile/", "/", 1)]; ok {
			threshold = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(&sb, "BENCH %-56s %9.1f %9.1f %9.1f %9.1f  %s\n", k, t.avg, t.p50, t.p90, t.p99, threshold)
	}
	var ratios []ratioLine
	ratio := func(c comparison, workload, denWorkload string) {
		num, ok1 := tp[c.num+"/"+workload]
		den, ok2 := tp[c.den+"/"+denWorkload]
		if !ok1 || !ok2 || den.avg == 0 || den.p50 == 0 {
			return
		}
		if denWorkload != workload {
			workload += " vs " + denWorkload
		}
		key := c.what + ", " + workload
		ratios = append(ratios, ratioLine{key: key, avg: num.avg / den.avg, p50: num.p50 / den.p50})
		fmt.Fprintf(&sb, "BENCH ratio %s: average %.3f, p50 %.3f\n", key, num.avg/den.avg, num.p50/den.p50)
	}
	for _, c := range comparisons {
		for _, k := range keys {
			if w, ok := strings.CutPrefix(k, c.num+"/"); ok {
				ratio(c, w, w)
			}
		}
	}
	nodesPrefix := fmt.Sprintf("%dNodes_", nodes)
	for _, u := range unconstrained {
		for _, k := range keys {
			w, ok := strings.CutPrefix(k, u.num+"/")
			if !ok || !strings.HasPrefix(w, nodesPrefix) {
				continue
			}
			for _, d := range keys {
				if dw, ok := strings.CutPrefix(d, u.den+"/"); ok && strings.HasPrefix(dw, nodesPrefix) {
					ratio(u, w, dw)
				}
			}
		}
	}
	sort.Slice(pluginTimes, func(i, j int) bool { return pluginTimes[i].key < pluginTimes[j].key })
	for _, p := range pluginTimes {
		sb.WriteString(p.line)
	}
	return sb.String(), ratios
}

// TestWithNodes: BENCH_NODES rewrites the node count and the name of the
// 5000Nodes_* workloads only, and the copy keeps every other field.
func TestWithNodes(t *testing.T) {
	path, err := withNodes(configFile, 300, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type testCase struct {
		Name                   string
		SchedulerConfigPath    string
		MetricsCollectorConfig map[string]any
		Workloads              []struct {
			Name   string
			Params map[string]int
		}
	}
	var cases, original []testCase
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(orig, &original); err != nil {
		t.Fatal(err)
	}
	if len(original) == 0 || len(cases) != len(original) {
		t.Fatalf("%d test cases, want the %d of %s", len(cases), len(original), configFile)
	}
	for i := range cases {
		if cases[i].Name != original[i].Name || len(cases[i].Workloads) != len(original[i].Workloads) {
			t.Errorf("case %d: %s with %d workloads, want %s with %d", i,
				cases[i].Name, len(cases[i].Workloads), original[i].Name, len(original[i].Workloads))
		}
	}
	for _, tc := range cases {
		if tc.MetricsCollectorConfig == nil {
			t.Errorf("%s: metricsCollectorConfig lost", tc.Name)
		}
		for _, w := range tc.Workloads {
			switch {
			case strings.HasPrefix(w.Name, "300Nodes_"):
				if w.Params["initNodes"] != 300 {
					t.Errorf("%s/%s: initNodes %d, want 300", tc.Name, w.Name, w.Params["initNodes"])
				}
			case strings.HasPrefix(w.Name, "5000Nodes"):
				t.Errorf("%s/%s: not rewritten", tc.Name, w.Name)
			default:
				if w.Params["initNodes"] > 6 {
					t.Errorf("%s/%s: initNodes %d changed", tc.Name, w.Name, w.Params["initNodes"])
				}
			}
		}
	}
}

// TestRatioRunsMedians: a run's ratios print nothing alone; from the second
// run on, each ratio gets the median of its runs and every run's value, in
// run order, and a ratio missing from a run counts only the runs that had it.
func TestRatioRunsMedians(t *testing.T) {
	var r ratioRuns
	if got := r.add([]ratioLine{{"a, w", 0.88, 0.85}, {"b, w", 1.5, 1.4}}); got != "" {
		t.Fatalf("one run printed %q, want nothing", got)
	}
	r.add([]ratioLine{{"a, w", 0.82, 0.94}})
	got := r.add([]ratioLine{{"a, w", 0.70, 0.88}, {"b, w", 1.7, 1.6}})
	want := "BENCH median of 3 runs: ratio a, w: average 0.820 (0.880 0.820 0.700), p50 0.880 (0.850 0.940 0.880)\n" +
		"BENCH median of 2 runs: ratio b, w: average 1.600 (1.500 1.700), p50 1.500 (1.400 1.600)\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
