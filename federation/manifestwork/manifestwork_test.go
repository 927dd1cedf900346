package manifestwork

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// fleetSetWrapper builds FleetSets for tests.
type fleetSetWrapper struct{ fleetv1.FleetSet }

func makeFleetSet(ns, name string) *fleetSetWrapper {
	return &fleetSetWrapper{fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: fleetv1.FleetSetSpec{
			Replicas: 9,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
			},
			Topology: fleetv1.FleetTopology{OrdinalBlockSize: 1000},
		},
	}}
}

func (w *fleetSetWrapper) subset(name, cluster string, replicas *intstr.IntOrString, domains ...string) *fleetSetWrapper {
	s := fleetv1.Subset{Name: name, Cluster: cluster, Replicas: replicas}
	for _, d := range domains {
		s.Domains = append(s.Domains, fleetv1.DomainShare{Name: d})
	}
	w.Spec.Topology.Subsets = append(w.Spec.Topology.Subsets, s)
	return w
}

func (w *fleetSetWrapper) serviceName(n string) *fleetSetWrapper { w.Spec.ServiceName = n; return w }
func (w *fleetSetWrapper) topologyKey(k string) *fleetSetWrapper {
	w.Spec.Topology.TopologyKey = k
	return w
}
func (w *fleetSetWrapper) claim(name string) *fleetSetWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	})
	return w
}
func (w *fleetSetWrapper) obj() *fleetv1.FleetSet { return &w.FleetSet }

var (
	east = Subset{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 1000, Replicas: 5, Partition: 2,
		Domains: []plan.Domain{{Name: "zone-a", Share: nil, Replicas: 2}, {Name: "zone-b", Share: nil, Replicas: 2}, {Name: "zone-c", Share: nil, Replicas: 1}}}
	west = Subset{Name: "west", Cluster: "west", OrdinalStart: 1000, BlockSize: 1000, Replicas: 4,
		Domains: []plan.Domain{{Name: "zone-c", Share: ptr.To(intstr.FromString("20%")), Replicas: 1}, {Name: "zone-a", Share: ptr.To(intstr.FromInt32(2)), Replicas: 2}, {Name: "zone-b", Share: nil, Replicas: 1}}}
)

func TestWorkName(t *testing.T) {
	long := strings.Repeat("n", 260)
	cases := []struct {
		name, ns, fs, want string
	}{
		{name: "short", ns: "db", fs: "mydb", want: "db.mydb"},
		{name: "exactly 253", ns: "a", fs: strings.Repeat("x", 251), want: "a." + strings.Repeat("x", 251)},
		{name: "too long: cut with hash", ns: "ns", fs: long, want: ("ns." + long)[:242]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := WorkName(tc.ns, tc.fs)
			if len(got) > 253 {
				t.Errorf("WorkName() is %d characters, want ≤ 253", len(got))
			}
			if tc.name == "too long: cut with hash" {
				// The hash is deterministic; check the shape rather than pinning the digest twice.
				if !strings.HasPrefix(got, tc.want+"-") || len(got) != 253 {
					t.Errorf("WorkName() = %q, want the first 242 characters, '-' and 10 hex digits", got)
				}
				if got == WorkName(tc.ns, long[:259]) {
					t.Errorf("WorkName() of different long names collide")
				}
				return
			}
			if got != tc.want {
				t.Errorf("WorkName() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStatefulSet(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).claim("data").obj()
	fs.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	cases := []struct {
		name string
		sp   Subset
		want func() *appsv1.StatefulSet
	}{
		{
			name: "subset east, start 0, partition 2",
			sp:   east,
			want: func() *appsv1.StatefulSet {
				return wantStatefulSet("east", 0, 5, 2)
			},
		},
		{
			name: "subset west, start 1000, no partition: the partition stays an offset, 0",
			sp:   west,
			want: func() *appsv1.StatefulSet {
				return wantStatefulSet("west", 1000, 4, 0)
			},
		}, {
			// whenScaled Delete would delete every claim of a subset
			// drained to 0 to move or fail back: the only copy of its data.
			name: "subset east draining: replicas 0, claims retained on scale-down and deletion",
			sp:   func() Subset { d := east; d.Replicas, d.Partition, d.Draining = 0, 0, true; return d }(),
			want: func() *appsv1.StatefulSet {
				sts := wantStatefulSet("east", 0, 0, 0)
				sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
				return sts
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StatefulSet(fs, tc.sp)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want(), got); diff != "" {
				t.Errorf("StatefulSet() (-want,+got):\n%s", diff)
			}
		})
	}
	t.Run("nil selector", func(t *testing.T) {
		bad := fs.DeepCopy()
		bad.Spec.Selector = nil
		if _, err := StatefulSet(bad, east); err == nil || !strings.Contains(err.Error(), "spec.selector") {
			t.Errorf("StatefulSet() error = %v, want one naming spec.selector", err)
		}
	})
}

func wantStatefulSet(subset string, start, replicas, partition int32) *appsv1.StatefulSet {
	name := "mydb-" + subset
	l := map[string]string{fleetv1.LabelSet: "mydb", fleetv1.LabelSubset: subset, fleetv1.LabelPlacement: name}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", Labels: l},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb", fleetv1.LabelSet: "mydb", fleetv1.LabelSubset: subset}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "mydb", fleetv1.LabelSet: "mydb", fleetv1.LabelSubset: subset, fleetv1.LabelPlacement: name}},
				Spec: corev1.PodSpec{
					SchedulerName: fleetv1.SchedulerName,
					Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
			ServiceName:         "mydb",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition)},
			},
			VolumeClaimTemplates:                 []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType},
			Ordinals:                             &appsv1.StatefulSetOrdinals{Start: start},
		},
	}
}

func TestSubsetPlacement(t *testing.T) {
	cases := []struct {
		name string
		fs   *fleetv1.FleetSet
		sp   Subset
		want fleetv1.SubsetPlacementSpec
	}{
		{
			name: "east, even shares, default topology key",
			fs:   makeFleetSet("db", "mydb").subset("east", "east", nil).obj(),
			sp:   east,
			want: fleetv1.SubsetPlacementSpec{
				TopologyKey:       fleetv1.DefaultTopologyKey,
				Domains:           []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}},
				OrdinalBlockSize:  1000,
				WhenUnsatisfiable: fleetv1.DoNotSchedule,
				Cluster:           "east",
			},
		},
		{
			name: "west, shares forwarded unchanged and sorted by name, custom key, start 1000",
			fs:   makeFleetSet("db", "mydb").topologyKey("rack").subset("west", "west", nil).obj(),
			sp:   west,
			want: fleetv1.SubsetPlacementSpec{
				TopologyKey: "rack",
				Domains: []fleetv1.DomainShare{{Name: "zone-a", Replicas: ptr.To(intstr.FromInt32(2))}, {Name: "zone-b"},
					{Name: "zone-c", Replicas: ptr.To(intstr.FromString("20%"))}},
				OrdinalStart:      1000,
				OrdinalBlockSize:  1000,
				WhenUnsatisfiable: fleetv1.DoNotSchedule,
				Cluster:           "west",
			},
		},
		{
			name: "0 replicas: the same shares",
			fs:   makeFleetSet("db", "mydb").subset("east", "east", nil).obj(),
			sp:   Subset{Name: "east", Cluster: "east", Domains: []plan.Domain{{Name: "zone-a", Share: nil, Replicas: 0}, {Name: "zone-b", Share: nil, Replicas: 0}}},
			want: fleetv1.SubsetPlacementSpec{
				TopologyKey:       fleetv1.DefaultTopologyKey,
				Domains:           []fleetv1.DomainShare{{Name: "zone-a"}, {Name: "zone-b"}},
				WhenUnsatisfiable: fleetv1.DoNotSchedule,
				Cluster:           "east",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SubsetPlacement(tc.fs, tc.sp)
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("SubsetPlacement().Spec (-want,+got):\n%s", diff)
			}
			if got.Name != "mydb-"+tc.sp.Name || got.Namespace != "db" {
				t.Errorf("SubsetPlacement() is %s/%s, want db/mydb-%s", got.Namespace, got.Name, tc.sp.Name)
			}
		})
	}
}

func TestWorks(t *testing.T) {
	fs := makeFleetSet("db", "mydb").serviceName("peers").
		subset("east", "east", ptr.To(intstr.FromString("60%")), "zone-a", "zone-b", "zone-c").
		subset("west", "west", ptr.To(intstr.FromString("40%")), "zone-a", "zone-b", "zone-c").obj()
	east2 := Subset{Name: "east2", Cluster: "east", OrdinalStart: 2000, BlockSize: 1000, Replicas: 1}
	cases := []struct {
		name string
		plan []Subset
		// want: per work, cluster and the kind/name of its manifests in order.
		want map[string][]string
		// starts: per work, the ordinal-starts annotation.
		starts map[string]string
	}{
		{
			name: "east, west: one work each",
			plan: []Subset{east, west},
			want: map[string][]string{
				"east": {"Service/peers", "ConfigMap/mydb-fleet", "SubsetPlacement/mydb-east", "StatefulSet/mydb-east"},
				"west": {"Service/peers", "ConfigMap/mydb-fleet", "SubsetPlacement/mydb-west", "StatefulSet/mydb-west"},
			},
			starts: map[string]string{"east": "east=0", "west": "west=1000"},
		},
		{
			name: "east, west, east2 on cluster east: two subsets in one work",
			plan: []Subset{east, west, east2},
			want: map[string][]string{
				"east": {"Service/peers", "ConfigMap/mydb-fleet", "SubsetPlacement/mydb-east", "StatefulSet/mydb-east", "SubsetPlacement/mydb-east2", "StatefulSet/mydb-east2"},
				"west": {"Service/peers", "ConfigMap/mydb-fleet", "SubsetPlacement/mydb-west", "StatefulSet/mydb-west"},
			},
			starts: map[string]string{"east": "east=0,east2=2000", "west": "west=1000"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			works, err := Works(fs, tc.plan, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			starts := map[string]string{}
			for _, w := range works {
				if w.Name != "db.mydb" {
					t.Errorf("work name = %q, want db.mydb", w.Name)
				}
				if diff := cmp.Diff(OwnerLabels("db", "mydb"), w.Labels); diff != "" {
					t.Errorf("work %s labels (-want,+got):\n%s", w.Namespace, diff)
				}
				for _, m := range w.Spec.Workload.Manifests {
					var u struct {
						Kind     string `json:"kind"`
						Metadata struct {
							Name              string  `json:"name"`
							CreationTimestamp *string `json:"creationTimestamp"`
						} `json:"metadata"`
						Status any `json:"status"`
					}
					if err := json.Unmarshal(m.Raw, &u); err != nil {
						t.Fatal(err)
					}
					if u.Status != nil || u.Metadata.CreationTimestamp != nil {
						t.Errorf("manifest %s/%s carries status or creationTimestamp: %s", u.Kind, u.Metadata.Name, m.Raw)
					}
					got[w.Namespace] = append(got[w.Namespace], u.Kind+"/"+u.Metadata.Name)
				}
				if e := w.Spec.Executor; e == nil || e.Subject.ServiceAccount == nil ||
					e.Subject.ServiceAccount.Namespace != "fleetset-system" || e.Subject.ServiceAccount.Name != "fleetset-executor-db" {
					t.Errorf("work %s: executor %+v, want the namespace's ServiceAccount fleetset-system/fleetset-executor-db", w.Namespace, e)
				}
				if w.Spec.DeleteOption != nil {
					t.Errorf("work %s: deleteOption %+v, want none (it carries no namespace to orphan)", w.Namespace, w.Spec.DeleteOption)
				}
				if len(w.Spec.ManifestConfigs) != len(w.Spec.Workload.Manifests) {
					t.Errorf("work %s: %d manifestConfigs for %d manifests", w.Namespace, len(w.Spec.ManifestConfigs), len(w.Spec.Workload.Manifests))
				}
				for _, c := range w.Spec.ManifestConfigs {
					if c.ResourceIdentifier.Resource == "namespaces" {
						// The tenant work creates it: the executor may not.
						t.Errorf("work %s: configures namespace %s", w.Namespace, c.ResourceIdentifier.Name)
					}
					if c.UpdateStrategy == nil || c.UpdateStrategy.Type != workv1.UpdateStrategyTypeServerSideApply || !c.UpdateStrategy.ServerSideApply.Force {
						t.Errorf("work %s: %s/%s not applied with forced server-side apply", w.Namespace, c.ResourceIdentifier.Resource, c.ResourceIdentifier.Name)
					}
					if c.ResourceIdentifier.Resource == "statefulsets" && len(c.FeedbackRules) != 1 {
						t.Errorf("work %s: StatefulSet %s asks for no statusFeedback", w.Namespace, c.ResourceIdentifier.Name)
					}
				}
				starts[w.Namespace] = w.Annotations[fleetv1.AnnotationOrdinalStarts]
				if OrdinalStarts(w) == nil {
					t.Errorf("OrdinalStarts() = nil")
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("works' manifests (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.starts, starts); diff != "" {
				t.Errorf("ordinal-starts annotations (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWorksDeterministicHash(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	a, err := Works(fs, []Subset{east, west}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Works(fs.DeepCopy(), []Subset{east, west}, nil)
	for i := range a {
		if !UpToDate(a[i], b[i]) {
			t.Errorf("work %s: two renderings of the same FleetSet differ", a[i].Namespace)
		}
	}
	scaled := west
	scaled.Replicas = 5
	c, _ := Works(fs, []Subset{east, scaled}, nil)
	// The fleet view changes in every cluster when one subset scales.
	for i := range a {
		if UpToDate(a[i], c[i]) {
			t.Errorf("work %s: scaling west did not change the rendering", a[i].Namespace)
		}
	}
}

func TestResyncWorkLeaseRoundTrip(t *testing.T) {
	t0 := metav1.NewMicroTime(time.Date(2025, 1, 2, 3, 4, 5, 123456000, time.UTC))
	t1 := metav1.NewMicroTime(t0.Add(20 * time.Second))
	in := Lease{HolderIdentity: "hub-1", DurationSeconds: 60, AcquireTime: t0, RenewTime: t1}
	w, err := ResyncWork("east", in, map[string][]string{"east": {"http://127.0.0.1:1"}, "west": {"http://127.0.0.1:2"}, "north": {"http://127.0.0.1:4", "http://127.0.0.1:3"}})
	if err != nil {
		t.Fatal(err)
	}
	var peers corev1.ConfigMap
	if err := json.Unmarshal(w.Spec.Workload.Manifests[2].Raw, &peers); err != nil {
		t.Fatal(err)
	}
	if peers.Namespace != fleetv1.ResyncLeaseNamespace || peers.Name != fleetv1.PeersConfigMapName {
		t.Errorf("peers ConfigMap is %s/%s, want %s/%s", peers.Namespace, peers.Name, fleetv1.ResyncLeaseNamespace, fleetv1.PeersConfigMapName)
	}
	if want := `{"north":"http://127.0.0.1:3","west":"http://127.0.0.1:2"}`; peers.Data[fleetv1.PeersKey] != want {
		t.Errorf("peers of east = %s, want %s (every other member, sorted)", peers.Data[fleetv1.PeersKey], want)
	}
	if want := `{"north":["http://127.0.0.1:3","http://127.0.0.1:4"],"west":["http://127.0.0.1:2"]}`; peers.Data[fleetv1.PeersAllKey] != want {
		t.Errorf("all peers of east = %s, want %s (every replica of every other member, sorted)", peers.Data[fleetv1.PeersAllKey], want)
	}
	if w.Namespace != "east" || w.Name != fleetv1.ResyncWorkName {
		t.Errorf("ResyncWork() is %s/%s, want east/%s", w.Namespace, w.Name, fleetv1.ResyncWorkName)
	}
	got, err := LeaseOf(w)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("LeaseOf(ResyncWork()) (-want,+got):\n%s", diff)
	}
	var lease coordinationv1.Lease
	if err := json.Unmarshal(w.Spec.Workload.Manifests[1].Raw, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Namespace != fleetv1.ResyncLeaseNamespace || lease.Name != fleetv1.ResyncLeaseName {
		t.Errorf("Lease is %s/%s, want %s/%s", lease.Namespace, lease.Name, fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName)
	}
	for _, c := range w.Spec.ManifestConfigs {
		if c.UpdateStrategy.Type != workv1.UpdateStrategyTypeServerSideApply || !c.UpdateStrategy.ServerSideApply.Force {
			t.Errorf("%s not applied with forced server-side apply", c.ResourceIdentifier.Resource)
		}
	}
	t.Run("no lease", func(t *testing.T) {
		bad := w.DeepCopy()
		bad.Spec.Workload.Manifests = bad.Spec.Workload.Manifests[:1]
		if _, err := LeaseOf(bad); err == nil {
			t.Error("LeaseOf() of a work without Lease: want error")
		}
	})
}

func TestFeedback(t *testing.T) {
	i := func(n int64) workv1.FieldValue { return workv1.FieldValue{Type: workv1.Integer, Integer: &n} }
	s := func(v string) workv1.FieldValue { return workv1.FieldValue{Type: workv1.String, String: &v} }
	cases := []struct {
		name      string
		manifests []workv1.ManifestCondition
		want      map[string]StatefulSetFeedback
	}{
		{
			name: "StatefulSet with every value",
			manifests: []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: "mydb-east"},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					{Name: FeedbackReplicas, Value: i(5)}, {Name: FeedbackReadyReplicas, Value: i(4)},
					{Name: FeedbackUpdatedReplicas, Value: i(3)}, {Name: FeedbackAvailableReplicas, Value: i(2)},
					{Name: FeedbackCurrentRevision, Value: s("r1")}, {Name: FeedbackUpdateRevision, Value: s("r2")},
				}},
			}},
			want: map[string]StatefulSetFeedback{"mydb-east": {Replicas: 5, ReadyReplicas: 4, UpdatedReplicas: 3, AvailableReplicas: 2, CurrentRevision: "r1", UpdateRevision: "r2"}},
		},
		{
			name: "wrong types and other kinds ignored",
			manifests: []workv1.ManifestCondition{
				{
					ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: "mydb-east"},
					StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: FeedbackReplicas, Value: s("five")}, {Name: FeedbackReadyReplicas, Value: i(1)}}},
				},
				{
					ResourceMeta:    workv1.ManifestResourceMeta{Kind: "ConfigMap", Name: "mydb-fleet"},
					StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: FeedbackReplicas, Value: i(9)}}},
				},
			},
			want: map[string]StatefulSetFeedback{"mydb-east": {ReadyReplicas: 1}},
		},
		{
			name:      "StatefulSet without values: absent",
			manifests: []workv1.ManifestCondition{{ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Kind: "StatefulSet", Name: "mydb-east"}}},
			want:      map[string]StatefulSetFeedback{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &workv1.ManifestWork{Status: workv1.ManifestWorkStatus{ResourceStatus: workv1.ManifestResourceStatus{Manifests: tc.manifests}}}
			if diff := cmp.Diff(tc.want, Feedback(w)); diff != "" {
				t.Errorf("Feedback() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOrdinalStarts(t *testing.T) {
	cases := map[string]map[string]int32{
		"east=0,west=1000": {"east": 0, "west": 1000},
		"":                 {},
		"east=x,=5,west":   {},
		"east=-1,a=2":      {"a": 2},
	}
	for in, want := range cases {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{fleetv1.AnnotationOrdinalStarts: in}}}
		if diff := cmp.Diff(want, OrdinalStarts(w)); diff != "" {
			t.Errorf("OrdinalStarts(%q) (-want,+got):\n%s", in, diff)
		}
	}
}
