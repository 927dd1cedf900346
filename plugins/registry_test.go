package plugins_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/fleetset/fleetset/plugins"
	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/apis/config/validation"
	"github.com/fleetset/fleetset/plugins/ordinalspread"
	"github.com/fleetset/fleetset/plugins/subsetplacement"
)

// ordinalSpreadArgs loads a KubeSchedulerConfiguration through kube-scheduler's
// own loader (decode, default, convert) and returns the OrdinalSpread args of
// its first profile.
func ordinalSpreadArgs(t *testing.T, file string) *config.OrdinalSpreadArgs {
	t.Helper()
	_ = plugins.Registry(nil) // registers the args types
	cfg, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == ordinalspread.Name {
			return pc.Args.(*config.OrdinalSpreadArgs)
		}
	}
	t.Fatalf("no %s args in %s", ordinalspread.Name, file)
	return nil
}

func TestShippedSchedulerConfig(t *testing.T) {
	file := filepath.Join("..", "manifests", "scheduler", "config.yaml")
	cfg, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "fleetset-scheduler" {
		t.Fatalf("profiles = %+v, want one named fleetset-scheduler", cfg.Profiles)
	}
	p := cfg.Profiles[0].Plugins
	has := func(set schedconfig.PluginSet, name string) bool {
		for _, pl := range set.Enabled {
			if pl.Name == name {
				return true
			}
		}
		return false
	}
	for ext, set := range map[string]schedconfig.PluginSet{"preFilter": p.PreFilter, "filter": p.Filter, "preBind": p.PreBind} {
		if !has(set, subsetplacement.Name) {
			t.Errorf("%s does not enable %s", ext, subsetplacement.Name)
		}
	}
	for ext, set := range map[string]schedconfig.PluginSet{"preScore": p.PreScore, "score": p.Score} {
		if !has(set, ordinalspread.Name) {
			t.Errorf("%s does not enable %s", ext, ordinalspread.Name)
		}
	}
	// SubsetPlacement binds first; DefaultBinder binds what it skips.
	var binders []string
	for _, pl := range p.Bind.Enabled {
		binders = append(binders, pl.Name)
	}
	if !slices.Equal(binders, []string{subsetplacement.Name, "DefaultBinder"}) {
		t.Errorf("bind plugins = %v, want [%s DefaultBinder]", binders, subsetplacement.Name)
	}
	if !has(p.MultiPoint, "NodeResourcesFit") {
		t.Error("the default plugins are not kept (NodeResourcesFit missing from multiPoint)")
	}
	if diff := cmp.Diff(&config.OrdinalSpreadArgs{DomainWeight: 60}, ordinalSpreadArgs(t, file), cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "TypeMeta" }, cmp.Ignore())); diff != "" {
		t.Errorf("args (-want,+got):\n%s", diff)
	}
}

func TestOrdinalSpreadArgsDefaultAndValidation(t *testing.T) {
	dir := t.TempDir()
	write := func(name, args string) string {
		f := filepath.Join(dir, name)
		body := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: x\n  pluginConfig:\n  - name: OrdinalSpread\n    args: " + args + "\n"
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if got := ordinalSpreadArgs(t, write("default.yaml", "{}")).DomainWeight; got != 60 {
		t.Errorf("defaulted domainWeight = %d, want 60", got)
	}
	bad := ordinalSpreadArgs(t, write("bad.yaml", "{domainWeight: 150}"))
	err := validation.ValidateOrdinalSpreadArgs(nil, bad)
	if err == nil || err.Error() != "domainWeight: Invalid value: 150: must be between 0 and 100" {
		t.Errorf("validation error = %v", err)
	}
}

// subsetPlacementArgs returns SubsetPlacement's args in the first profile of
// the config file, defaulted by kube-scheduler's config loading.
func subsetPlacementArgs(t *testing.T, file string) *config.SubsetPlacementArgs {
	t.Helper()
	cfg, err := options.LoadConfigFromFile(klog.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == subsetplacement.Name {
			return pc.Args.(*config.SubsetPlacementArgs)
		}
	}
	t.Fatalf("no %s args in %s", subsetplacement.Name, file)
	return nil
}

// TestSubsetPlacementArgsDefaultAndValidation: localityMetadata defaults to
// LabelsAndAnnotations, the shipped config says so, and another value is
// refused naming the field and the supported values.
func TestSubsetPlacementArgsDefaultAndValidation(t *testing.T) {
	if got := subsetPlacementArgs(t, filepath.Join("..", "manifests", "scheduler", "config.yaml")).LocalityMetadata; got != config.LocalityLabelsAndAnnotations {
		t.Errorf("shipped localityMetadata = %q, want %q", got, config.LocalityLabelsAndAnnotations)
	}
	dir := t.TempDir()
	write := func(name, args string) string {
		f := filepath.Join(dir, name)
		body := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: x\n  pluginConfig:\n  - name: SubsetPlacement\n    args: " + args + "\n"
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if got := subsetPlacementArgs(t, write("default.yaml", "{}")).LocalityMetadata; got != config.LocalityLabelsAndAnnotations {
		t.Errorf("defaulted localityMetadata = %q, want %q", got, config.LocalityLabelsAndAnnotations)
	}
	if err := validation.ValidateSubsetPlacementArgs(nil, subsetPlacementArgs(t, write("annotations.yaml", "{localityMetadata: Annotations}"))); err != nil {
		t.Errorf("localityMetadata Annotations: %v", err)
	}
	err := validation.ValidateSubsetPlacementArgs(nil, subsetPlacementArgs(t, write("bad.yaml", "{localityMetadata: Labels}")))
	if err == nil || err.Error() != `localityMetadata: Unsupported value: "Labels": supported values: "LabelsAndAnnotations", "Annotations"` {
		t.Errorf("validation error = %v", err)
	}
}
