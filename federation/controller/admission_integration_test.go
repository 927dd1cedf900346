//go:build integration

package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// sampleFleetSet is docs/hub.md's worked example: 9 replicas, east 60% and west 40%,
// three zones each, east partition 2.
func sampleFleetSet(ns, name string) *fleetv1.FleetSet {
	abc := []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}
	return &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.FleetSetSpec{
			Replicas: 9,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
			Topology: fleetv1.FleetTopology{Subsets: []fleetv1.Subset{
				{Name: "east", Cluster: "east", Replicas: ptr.To(intstr.FromString("60%")), Domains: abc},
				{Name: "west", Cluster: "west", Replicas: ptr.To(intstr.FromString("40%")), Domains: append([]fleetv1.DomainShare(nil), abc...)},
			}},
			UpdateStrategy: fleetv1.FleetSetUpdateStrategy{Type: fleetv1.ManualUpdateStrategyType, ManualUpdate: &fleetv1.ManualUpdate{Partitions: map[string]int32{"east": 2}}},
		},
	}
}

// rolling switches fs to the RollingUpdate strategy and returns its
// parameters.
func rolling(fs *fleetv1.FleetSet) *fleetv1.RollingUpdateFleetSet {
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{Type: fleetv1.RollingUpdateStrategyType, RollingUpdate: &fleetv1.RollingUpdateFleetSet{}}
	return fs.Spec.UpdateStrategy.RollingUpdate
}

func TestAdmission(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "admission")
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	cases := []struct {
		name   string
		mutate func(fs *fleetv1.FleetSet)
		// field must appear in the apiserver's message, and so must msg.
		field, msg string
	}{
		{"subset name not a DNS label", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Name = "East_1" },
			"spec.topology.subsets[0].name", "DNS label"},
		{"duplicate subset names", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].Name = "east" },
			"spec.topology.subsets[1]", "Duplicate value"},
		{"empty cluster", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Cluster = "" },
			"spec.topology.subsets[0].cluster", ""},
		{"percent over 100%", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Replicas = pct("101%") },
			"spec.topology.subsets[0].replicas", "percent between 0% and 100%"},
		{"malformed percent", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Replicas = pct("sixty") },
			"spec.topology.subsets[0].replicas", "percent between 0% and 100%"},
		{"fractional percent", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Replicas = pct("33.3%") },
			"spec.topology.subsets[0].replicas", "percent"},
		{"subset percents sum over 100%", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].Replicas = pct("50%") },
			"spec.topology", "explicit percents must not sum over 100%"},
		{"subset ints sum over replicas", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = num(5), num(5)
		}, "spec", "explicit integer replicas must not sum over spec.replicas"},
		{"minReplicas over maxReplicas", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].MinReplicas, fs.Spec.Topology.Subsets[0].MaxReplicas = ptr.To[int32](4), ptr.To[int32](3)
		}, "spec.topology.subsets[0]", "minReplicas must not exceed maxReplicas"},
		{"partition names an unknown subset", func(fs *fleetv1.FleetSet) {
			fs.Spec.UpdateStrategy.ManualUpdate.Partitions["north"] = 1
		}, "spec", "updateStrategy.manualUpdate.partitions"},
		{"negative replicas", func(fs *fleetv1.FleetSet) { fs.Spec.Replicas = -1 },
			"spec.replicas", "greater than or equal to 0"},
		{"negative subset replicas", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Replicas = num(-2) },
			"spec.topology.subsets[0].replicas", "non-negative"},
		{"negative minReplicas", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].MinReplicas = ptr.To[int32](-1) },
			"spec.topology.subsets[1].minReplicas", ""},
		{"negative maxReplicas", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[1].MaxReplicas = ptr.To[int32](-1) },
			"spec.topology.subsets[1].maxReplicas", ""},
		{"negative partition", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.ManualUpdate.Partitions["east"] = -1 },
			"spec.updateStrategy.manualUpdate", "partitions must be non-negative"},
		{"duplicate domains", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Domains[2].Name = "zone-a" },
			"spec.topology.subsets[0].domains[2]", "Duplicate value"},
		{"domain percents sum over 100%", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Domains[0].Replicas, fs.Spec.Topology.Subsets[0].Domains[1].Replicas = pct("70%"), pct("40%")
		}, "spec.topology.subsets[0]", "domains: explicit percents must not sum over 100%"},
		{"domain percent malformed", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Domains[0].Replicas = pct("%50") },
			"spec.topology.subsets[0].domains[0].replicas", "percent"},
		{"domain name not a label value", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].Domains[0].Name = "zone a" },
			"spec.topology.subsets[0].domains[0].name", "label value"},
		{"no subsets", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets = nil },
			"spec.topology", "set exactly one of subsets and placementRef"},
		{"both subsets and placementRef", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "p"}
		}, "spec.topology", "set exactly one of subsets and placementRef"},
		{"placementRef share of 101%", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets, fs.Spec.UpdateStrategy = nil, fleetv1.FleetSetUpdateStrategy{}
			fs.Spec.Topology.PlacementRef = &fleetv1.PlacementRef{Name: "p", Shares: []fleetv1.ClusterShare{{Cluster: "east", Replicas: intstr.FromString("101%")}}}
		}, "spec.topology.placementRef.shares[0].replicas", "percent between 0% and 100%"},
		{"ordinal block size 0", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.OrdinalBlockSize = -5 },
			"spec.topology.ordinalBlockSize", ""},
		{"topology key not a label key", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.TopologyKey = "zone key" },
			"spec.topology.topologyKey", "qualified label key"},
		{"unknown update strategy", func(fs *fleetv1.FleetSet) { fs.Spec.UpdateStrategy.Type = "Rolling" },
			"spec.updateStrategy.type", "Unsupported value"},
		{"no selector", func(fs *fleetv1.FleetSet) { fs.Spec.Selector = nil },
			"spec.selector", "Required value"},
		{"name too long", func(fs *fleetv1.FleetSet) { fs.Name = strings.Repeat("a", 41) },
			"", "metadata.name must be a DNS label of at most 40 characters"},
		{"fleetset and subset names too long for a StatefulSet", func(fs *fleetv1.FleetSet) {
			fs.Name = strings.Repeat("a", 30)
			fs.Spec.Topology.Subsets[0].Name = strings.Repeat("e", 25)
		}, "", "spec.topology.subsets[].name: <fleetset>-<subset> must be at most 52 characters"},
		{"rollingUpdate with type Manual", func(fs *fleetv1.FleetSet) {
			fs.Spec.UpdateStrategy.RollingUpdate = &fleetv1.RollingUpdateFleetSet{}
		}, "spec.updateStrategy", "rollingUpdate: only with type RollingUpdate"},
		{"maxUnavailable 0", func(fs *fleetv1.FleetSet) { rolling(fs).MaxUnavailable = num(0) },
			"spec.updateStrategy.rollingUpdate.maxUnavailable", "integer ≥ 1 or a percent"},
		{"maxUnavailable 0%", func(fs *fleetv1.FleetSet) { rolling(fs).MaxUnavailable = pct("0%") },
			"spec.updateStrategy.rollingUpdate.maxUnavailable", "integer ≥ 1 or a percent"},
		{"subsetOrder names an unknown subset", func(fs *fleetv1.FleetSet) { rolling(fs).SubsetOrder = []string{"west", "south"} },
			"", "subsetOrder: every entry must name a subset"},
		{"maxConcurrentSubsets 0", func(fs *fleetv1.FleetSet) { rolling(fs).MaxConcurrentSubsets = ptr.To[int32](0) },
			"spec.updateStrategy.rollingUpdate.maxConcurrentSubsets", "greater than or equal to 1"},
		{"negative rollout partition", func(fs *fleetv1.FleetSet) { rolling(fs).Partition = -1 },
			"spec.updateStrategy.rollingUpdate.partition", "greater than or equal to 0"},
		{"unknown podManagementPolicy", func(fs *fleetv1.FleetSet) { fs.Spec.PodManagementPolicy = "Serial" },
			"spec.podManagementPolicy", "Unsupported value"},
		{"unknown failover policy", func(fs *fleetv1.FleetSet) { fs.Spec.Failover = &fleetv1.Failover{Policy: "Move"} },
			"spec.failover.policy", "Unsupported value"},
		{"negative tolerationSeconds", func(fs *fleetv1.FleetSet) {
			fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](-1)}
		}, "spec.failover.tolerationSeconds", "greater than or equal to 0"},
		{"unknown failback", func(fs *fleetv1.FleetSet) { fs.Spec.Failover = &fleetv1.Failover{Failback: "Sometimes"} },
			"spec.failover.failback", "Unsupported value"},
		{"Relocate with PVCs deleted with the StatefulSet", func(fs *fleetv1.FleetSet) {
			fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate}
			fs.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		}, "", "failover.policy Relocate needs persistentVolumeClaimRetentionPolicy.whenDeleted Retain"},
		{"empty fallback cluster", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.Subsets[0].FallbackClusters = []string{""} },
			"spec.topology.subsets[0].fallbackClusters[0]", "at least 1 chars long"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sampleFleetSet("admission", "bad")
			fs.Name = "bad-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			tc.mutate(fs)
			err := k8sClient.Create(ctx, fs)
			if err == nil {
				_ = k8sClient.Delete(ctx, fs)
				t.Fatalf("Create() accepted a FleetSet with %s", tc.name)
			}
			for _, want := range []string{tc.field, tc.msg} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Create() error = %q, want it to contain %q", err, want)
				}
			}
		})
	}
	if len(cases) < 15 {
		t.Fatalf("only %d bad specs", len(cases))
	}

	// The valid variants are accepted: the sample, subsets without domains
	// (the domain rule must not need them), ints, min/max.
	valid := []func(fs *fleetv1.FleetSet){
		func(fs *fleetv1.FleetSet) {},
		func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Domains, fs.Spec.Topology.Subsets[1].Domains = nil, nil
		},
		func(fs *fleetv1.FleetSet) {
			ru := rolling(fs)
			ru.MaxUnavailable, ru.SubsetOrder, ru.MaxConcurrentSubsets, ru.Partition = pct("25%"), []string{"west"}, ptr.To[int32](2), 8
			fs.Spec.PodManagementPolicy, fs.Spec.MinReadySeconds, fs.Spec.RevisionHistoryLimit = "OrderedReady", 5, ptr.To[int32](3)
			fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate, TolerationSeconds: ptr.To[int32](20), Failback: fleetv1.FailbackAutomatic, FenceGraceSeconds: 5}
			fs.Spec.Topology.Subsets[0].FallbackClusters = []string{"west", "spare"}
		},
		func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = num(5), nil
			fs.Spec.Topology.Subsets[1].MinReplicas, fs.Spec.Topology.Subsets[1].MaxReplicas = ptr.To[int32](1), ptr.To[int32](4)
			fs.Spec.Topology.Subsets[0].Domains[0].Replicas = pct("50%")
		},
	}
	for i, mutate := range valid {
		fs := sampleFleetSet("admission", "good-"+string(rune('a'+i)))
		mutate(fs)
		if err := k8sClient.Create(ctx, fs); err != nil {
			t.Errorf("valid variant %d refused: %v", i, err)
		}
	}

	// selector and ordinalBlockSize are immutable.
	fs := &fleetv1.FleetSet{}
	if err := k8sClient.Get(ctx, clientKey("admission", "good-a"), fs); err != nil {
		t.Fatal(err)
	}
	if fs.Spec.Topology.OrdinalBlockSize != fleetv1.DefaultOrdinalBlockSize || fs.Spec.Topology.TopologyKey != fleetv1.DefaultTopologyKey {
		t.Errorf("defaults: ordinalBlockSize %d, topologyKey %q; want %d, %q", fs.Spec.Topology.OrdinalBlockSize, fs.Spec.Topology.TopologyKey, fleetv1.DefaultOrdinalBlockSize, fleetv1.DefaultTopologyKey)
	}
	for _, tc := range []struct {
		field  string
		mutate func(fs *fleetv1.FleetSet)
	}{
		{"spec.selector", func(fs *fleetv1.FleetSet) { fs.Spec.Selector.MatchLabels["tier"] = "db" }},
		{"spec.topology.ordinalBlockSize", func(fs *fleetv1.FleetSet) { fs.Spec.Topology.OrdinalBlockSize = 10 }},
		{"podManagementPolicy", func(fs *fleetv1.FleetSet) { fs.Spec.PodManagementPolicy = "OrderedReady" }},
	} {
		upd := fs.DeepCopy()
		tc.mutate(upd)
		err := k8sClient.Update(ctx, upd)
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("Update() changing %s: error = %v, want one naming %s as immutable", tc.field, err, tc.field)
		}
	}
	// Scaling and changing partitions stay allowed.
	upd := fs.DeepCopy()
	upd.Spec.Replicas = 15
	upd.Spec.UpdateStrategy.ManualUpdate.Partitions["west"] = 1
	if err := k8sClient.Update(ctx, upd); err != nil {
		t.Errorf("Update() scaling to 15: %v", err)
	}
}

// TestSampleFleetSet checks that manifests/samples/fleetset.yaml is accepted
// and divides as its comment says.
func TestSampleFleetSet(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "fleetset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{}
	if err := yaml.UnmarshalStrict(b, fs); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, "samples")
	fs.Namespace = "samples"
	if err := k8sClient.Create(context.Background(), fs); err != nil {
		t.Fatalf("sample refused: %v", err)
	}
	subsets, problems, err := plan.For(fs, nil)
	if err != nil || len(problems) > 0 {
		t.Fatalf("plan.For(sample) = %v, %v", problems, err)
	}
	var got []string
	for _, sp := range subsets {
		var ds []string
		for _, d := range sp.Domains {
			ds = append(ds, fmt.Sprintf("%s:%d", d.Name, d.Replicas))
		}
		got = append(got, fmt.Sprintf("%s %d@%d %v", sp.Name, sp.Replicas, sp.OrdinalStart, ds))
	}
	want := []string{"east 5@0 [zone-a:2 zone-b:2 zone-c:1]", "west 4@1000 [zone-a:2 zone-b:1 zone-c:1]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sample division (-want,+got):\n%s", diff)
	}
}

// TestAdmissionDay2 checks the day-2 rules of the FleetSet CRD: what a
// StatefulSet cannot change is refused at admission with a message saying
// what is allowed, and what can change (a claim template's storage request
// growing, the subsets' other overrides) is accepted.
func TestAdmissionDay2(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "day2")
	fs := sampleFleetSet("day2", "db")
	fs.Spec.ServiceName = "db"
	fs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	east := &fs.Spec.Topology.Subsets[0]
	east.StorageClassNames = []fleetv1.ClaimStorageClass{{Claim: "data", StorageClassName: "fast"}}
	east.ImageRegistryRewrites = []fleetv1.ImageRegistryRewrite{{From: "registry.k8s.io", To: "mirror.east.example/k8s"}}
	east.ContainerResources = []fleetv1.ContainerResources{{Name: "pause", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
	east.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	east.Patch = &runtime.RawExtension{Raw: []byte(`{"spec":{"priorityClassName":"high"}}`)}
	fs.Spec.DisruptionBudget = &fleetv1.DisruptionBudget{MaxUnavailable: intstr.FromString("20%")}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatalf("Create() with every override: %v", err)
	}
	if err := k8sClient.Get(ctx, clientKey("day2", "db"), fs); err != nil {
		t.Fatal(err)
	}
	if got := string(fs.Spec.Topology.Subsets[0].Patch.Raw); !strings.Contains(got, "priorityClassName") {
		t.Errorf("subsets[0].patch stored as %s: pruned?", got)
	}

	for _, tc := range []struct {
		name   string
		mutate func(fs *fleetv1.FleetSet)
		want   []string
	}{
		{"serviceName changed", func(fs *fleetv1.FleetSet) { fs.Spec.ServiceName = "db2" },
			[]string{"serviceName is immutable", "create a new FleetSet"}},
		{"serviceName removed", func(fs *fleetv1.FleetSet) { fs.Spec.ServiceName = "" },
			[]string{"serviceName is immutable"}},
		{"accessModes changed", func(fs *fleetv1.FleetSet) {
			fs.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
		}, []string{"volumeClaimTemplates: only a claim template's spec.resources.requests.storage may change, and only grow"}},
		{"claim template added", func(fs *fleetv1.FleetSet) {
			c := fs.Spec.VolumeClaimTemplates[0].DeepCopy()
			c.Name = "logs"
			fs.Spec.VolumeClaimTemplates = append(fs.Spec.VolumeClaimTemplates, *c)
		}, []string{"volumeClaimTemplates: only"}},
		{"storage class of a claim template changed", func(fs *fleetv1.FleetSet) {
			fs.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To("slow")
		}, []string{"volumeClaimTemplates: only"}},
		{"a subset's storageClassNames changed", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[0].StorageClassNames[0].StorageClassName = "slow"
		}, []string{"spec.topology.subsets[0]", "storageClassNames is immutable"}},
		{"a subset's storageClassNames added", func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[1].StorageClassNames = []fleetv1.ClaimStorageClass{{Claim: "data", StorageClassName: "slow"}}
		}, []string{"spec.topology.subsets[1]", "storageClassNames is immutable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upd := &fleetv1.FleetSet{}
			if err := k8sClient.Get(ctx, clientKey("day2", "db"), upd); err != nil {
				t.Fatal(err)
			}
			tc.mutate(upd)
			err := k8sClient.Update(ctx, upd)
			if err == nil {
				t.Fatalf("Update() accepted: %s", tc.name)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Update() error = %q, want it to contain %q", err, w)
				}
			}
		})
	}

	// Refused at creation: a storage class for a claim template that does
	// not exist, a patch that is not an object, a bad disruption budget.
	for i, tc := range []struct {
		mutate func(fs *fleetv1.FleetSet)
		want   string
	}{
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[1].StorageClassNames = []fleetv1.ClaimStorageClass{{Claim: "logs", StorageClassName: "slow"}}
		}, "every claim must name an entry of volumeClaimTemplates"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Topology.Subsets[1].Patch = &runtime.RawExtension{Raw: []byte(`["spec"]`)}
		},
			"spec.topology.subsets[1].patch"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.DisruptionBudget = &fleetv1.DisruptionBudget{MaxUnavailable: intstr.FromString("101%")}
		}, "maxUnavailable must be a non-negative integer or a percent"},
	} {
		bad := fs.DeepCopy()
		bad.ResourceVersion, bad.UID, bad.Name = "", "", fmt.Sprintf("bad-%d", i)
		tc.mutate(bad)
		err := k8sClient.Create(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create() case %d: error = %v, want one containing %q", i, err, tc.want)
		}
	}

	// Growing a claim template's storage request, and every other override,
	// are accepted.
	upd := &fleetv1.FleetSet{}
	if err := k8sClient.Get(ctx, clientKey("day2", "db"), upd); err != nil {
		t.Fatal(err)
	}
	upd.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	upd.Spec.Topology.Subsets[0].Patch = &runtime.RawExtension{Raw: []byte(`{"spec":{"priorityClassName":"low"}}`)}
	upd.Spec.Topology.Subsets[1].Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	if err := k8sClient.Update(ctx, upd); err != nil {
		t.Errorf("Update() growing storage to 2Gi and changing patches: %v", err)
	}
}

// TestSampleEtcd checks that manifests/samples/etcd.yaml (docs/etcd.md) is
// accepted, divides 2/2/1 over east, west and north (1/1/1 at three
// replicas), and runs every lifecycle action through the image's
// fleetset-etcd script.
func TestSampleEtcd(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fleetv1.FleetSet{}
	if err := yaml.UnmarshalStrict(b, fs); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, "samples-etcd")
	fs.Namespace = "samples-etcd"
	if err := k8sClient.Create(context.Background(), fs.DeepCopy()); err != nil {
		t.Fatalf("sample refused: %v", err)
	}
	for _, c := range []struct {
		replicas int32
		want     []string
	}{
		{5, []string{"east 2@0", "west 2@1000", "north 1@2000"}},
		{3, []string{"east 1@0", "west 1@1000", "north 1@2000"}},
	} {
		fs.Spec.Replicas = c.replicas
		subsets, problems, err := plan.For(fs, nil)
		if err != nil || len(problems) > 0 {
			t.Fatalf("plan.For(sample, %d) = %v, %v", c.replicas, problems, err)
		}
		var got []string
		for _, sp := range subsets {
			got = append(got, fmt.Sprintf("%s %d@%d", sp.Name, sp.Replicas, sp.OrdinalStart))
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("sample division at %d (-want,+got):\n%s", c.replicas, diff)
		}
	}
	la := fs.Spec.LifecycleActions
	if la == nil {
		t.Fatal("the sample has no lifecycleActions")
	}
	for name, a := range map[string]*fleetv1.LifecycleAction{"roleProbe": la.RoleProbe, "memberJoin": la.MemberJoin,
		"memberLeave": la.MemberLeave, "switchover": la.Switchover, "rolloutComplete": la.RolloutComplete} {
		if a == nil || a.Exec == nil || len(a.Exec.Command) != 2 || a.Exec.Command[0] != "fleetset-etcd" {
			t.Errorf("%s: %+v, want exec fleetset-etcd <action>", name, a)
		}
	}
}
