package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"text/template"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/plugins/internal/plugintest"
)

// TestOrdinalWorkloadsFitTheirPlacement checks performance-config.yaml
// against its templates without running the harness: every createPods of
// a workload whose pod template names a SubsetPlacement creates pods whose
// ordinals (the harness's .Index, 0 … count-1) lie inside that
// placement's ordinal block. A pod outside the block stays Pending, and
// the harness then waits for it until its 30-minute per-test timeout
// (2026-11-27: bench-1000 … bench-4999 with the default block of 1000).
// A pod template that sets fleetset.io/domain must give every ordinal the
// domain the scheduler's seat sequence gives it, else PreBind would patch
// it and the workload would not measure what it claims (no label PATCH).
func TestOrdinalWorkloadsFitTheirPlacement(t *testing.T) {
	type op struct {
		Opcode          string `json:"opcode"`
		CountParam      string `json:"countParam"`
		Count           int    `json:"count"`
		PodTemplatePath string `json:"podTemplatePath"`
		TemplatePath    string `json:"templatePath"`
	}
	type workload struct {
		Name   string         `json:"name"`
		Params map[string]int `json:"params"`
	}
	type testCase struct {
		Name             string     `json:"name"`
		WorkloadTemplate []op       `json:"workloadTemplate"`
		Workloads        []workload `json:"workloads"`
	}
	data, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatalf("%s: %v", configFile, err)
	}
	type podTemplate struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	checked := 0
	for _, tc := range cases {
		// The placements the test case creates, by name.
		placements := map[string]*fleetv1.SubsetPlacement{}
		for _, o := range tc.WorkloadTemplate {
			if o.Opcode != "createAny" || o.TemplatePath == "" {
				continue
			}
			sp := &fleetv1.SubsetPlacement{}
			if err := readYAML(o.TemplatePath, sp); err != nil {
				t.Fatalf("%s: %v", tc.Name, err)
			}
			if sp.Kind == "SubsetPlacement" {
				placements[sp.Name] = sp
			}
		}
		for _, o := range tc.WorkloadTemplate {
			if o.Opcode != "createPods" || o.PodTemplatePath == "" {
				continue
			}
			var pod podTemplate
			if err := readYAML(o.PodTemplatePath, &pod); err != nil {
				t.Fatalf("%s: %v", tc.Name, err)
			}
			name, managed := pod.Metadata.Labels[fleetv1.LabelPlacement]
			if !managed {
				continue
			}
			sp, ok := placements[name]
			if !ok {
				t.Errorf("%s: pods of %s name SubsetPlacement %q, which the test case does not create", tc.Name, o.PodTemplatePath, name)
				continue
			}
			start, block := int(sp.Spec.OrdinalStart), int(sp.Spec.OrdinalBlockSizeOrDefault())
			for _, w := range tc.Workloads {
				count := o.Count
				if o.CountParam != "" {
					count = w.Params[o.CountParam[1:]] // "$measurePods" → measurePods
				}
				checked++
				if count > 0 && (start > 0 || count > start+block) {
					t.Errorf("%s/%s: %d pods of %s have ordinals 0…%d, outside SubsetPlacement %s's block [%d, %d): they would stay Pending",
						tc.Name, w.Name, count, o.PodTemplatePath, count-1, name, start, start+block)
				}
				if _, labelled := pod.Metadata.Labels[fleetv1.LabelDomain]; labelled {
					checkDomainLabels(t, tc.Name+"/"+w.Name, o.PodTemplatePath, sp, count)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatalf("%s: no workload creates pods of a SubsetPlacement: nothing checked", configFile)
	}
}

// checkDomainLabels renders the pod template at path for .Index 0 … count-1
// as the harness does (text/template with its functions div and mod) and
// fails the test for every pod whose fleetset.io/domain is not the domain
// SubsetPlacement sp's seat sequence gives its ordinal (at most 5 reported).
func checkDomainLabels(t *testing.T, workload, path string, sp *fleetv1.SubsetPlacement, count int) {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.New(path).Funcs(template.FuncMap{
		"div": func(a, b int) int { return a / b },
		"mod": func(a, b int) int { return a % b },
	}).Parse(string(content))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sp = sp.DeepCopy()
	if sp.Namespace == "" {
		sp.Namespace = "fleetset" // the harness creates it in the op's namespace
	}
	t.Run(workload, func(t *testing.T) {
		r := plugintest.Resolver(t, sp)
		wrong := 0
		for i := 0; i < count && wrong < 5; i++ {
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, map[string]any{"Index": i}); err != nil {
				t.Fatalf("%s, .Index %d: %v", path, i, err)
			}
			pod := &v1.Pod{}
			if err := yaml.UnmarshalStrict(buf.Bytes(), pod); err != nil {
				t.Fatalf("%s, .Index %d: %v", path, i, err)
			}
			pod.Namespace = sp.Namespace
			target, err := r.Resolve(context.Background(), pod)
			if err != nil {
				t.Fatalf("%s, .Index %d: %v", path, i, err)
			}
			if got := pod.Labels[fleetv1.LabelDomain]; got != target.Domain {
				wrong++
				t.Errorf("%s: pod %s (ordinal %d) carries %s=%s, but the seat sequence of SubsetPlacement %s gives it %s: PreBind would patch it",
					path, pod.Name, target.Ordinal, fleetv1.LabelDomain, got, sp.Name, target.Domain)
			}
		}
	})
}

// configFile holds the workloads, relative to this folder (the tests' working
// directory).
const configFile = "performance-config.yaml"

// readYAML decodes the YAML file at path (relative to this folder) into out.
func readYAML(path string, out any) error {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

// TestAnnotationsConfigIsTheShippedOne: config-annotations.yaml, the
// scheduler config of OrdinalPlacement_SubsetPlacementAnnotations, is the
// shipped manifests/scheduler/config.yaml but for SubsetPlacement's
// localityMetadata, so the workload measures the shipped profile with that
// one arg changed. To regenerate it:
//
//	sed 's/localityMetadata: LabelsAndAnnotations/localityMetadata: Annotations/' manifests/scheduler/config.yaml > plugins/bench/config-annotations.yaml
func TestAnnotationsConfigIsTheShippedOne(t *testing.T) {
	shipped, err := os.ReadFile(filepath.Join("..", "..", "manifests", "scheduler", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const from, to = "localityMetadata: LabelsAndAnnotations", "localityMetadata: Annotations"
	if bytes.Count(shipped, []byte(from)) != 1 {
		t.Fatalf("the shipped config must set %q once", from)
	}
	got, err := os.ReadFile("config-annotations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Replace(shipped, []byte(from), []byte(to), 1); !bytes.Equal(got, want) {
		t.Errorf("config-annotations.yaml is not the shipped config with %q; regenerate it (see this test's comment)", to)
	}
}
