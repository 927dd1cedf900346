package manifestwork

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestRenderedPodTemplatesAreStable guards upgrades: the pod template (and
// claim templates) the hub renders for the sample FleetSet must stay byte
// for byte what testdata/ holds. A change there changes every existing
// StatefulSet's template when a new fleetset-hub starts, which restarts
// every workload pod of every FleetSet without any spec change. If the
// change is intended, it needs a migration note; regenerate with
// `go test ./federation/manifestwork -run TestRenderedPodTemplatesAreStable -update`.
func TestRenderedPodTemplatesAreStable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "manifests", "samples", "fleetset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{}
	if err := yaml.Unmarshal(b, fs); err != nil {
		t.Fatal(err)
	}
	subsets, _, err := plan.For(fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range fromPlan(subsets) {
		sp.Revision = "any" // on the StatefulSet, never in its template
		sts, err := StatefulSet(fs, sp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(struct {
			Template any `json:"template"`
			Claims   any `json:"volumeClaimTemplates"`
		}{sts.Spec.Template, sts.Spec.VolumeClaimTemplates}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "template-"+sp.Name+".json")
		if *update {
			if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
			t.Errorf("subset %s: the rendered pod template changed; existing StatefulSets would restart every pod on upgrade (-golden,+now):\n%s", sp.Name, diff)
		}
	}
}
