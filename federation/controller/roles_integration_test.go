//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// reportRoles writes, as the work agent would, the role summary of subset's
// SubsetPlacement into the work of cluster (replacing its other manifest
// reports).
func reportRoles(t *testing.T, cluster, ns, name, subset, roles, leaders string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: manifestwork.WorkName(ns, name)}, w); err != nil {
			return err
		}
		str := func(n, v string) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: n, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
		}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta: workv1.ManifestResourceMeta{Group: fleetv1.GroupVersion.Group, Version: "v1alpha1", Kind: "SubsetPlacement", Resource: "subsetplacements",
				Name: manifestwork.StatefulSetName(name, subset), Namespace: ns},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				str(manifestwork.FeedbackRoles, roles), str(manifestwork.FeedbackLeaders, leaders),
				{Name: manifestwork.FeedbackRolesGeneration, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
			}},
			Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "applied", LastTransitionTime: metav1.Now()}},
		}}
		return k8sClient.Status().Update(context.Background(), w)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRoles: a FleetSet with roles delivers them (and the probe) in each
// SubsetPlacement with a feedback rule for the member's role summary, and
// a role Service per cluster selecting the role. The fed-back summaries give
// status.leader and the fleet view's roles; two leaders are MultipleLeaders
// naming both and their clusters; none is NoLeader.
func TestRoles(t *testing.T) {
	ctx := context.Background()
	createCluster(t, "ro-east", true)
	createCluster(t, "ro-west", true)
	createNamespace(t, "roles")
	startHub(t, time.Minute)
	fs := sampleFleetSet("roles", "db")
	fs.Spec.Replicas = 4
	fs.Spec.Topology.Subsets[0].Cluster, fs.Spec.Topology.Subsets[1].Cluster = "ro-east", "ro-west"
	fs.Spec.Topology.Subsets[0].Replicas, fs.Spec.Topology.Subsets[1].Replicas = nil, nil
	fs.Spec.UpdateStrategy = fleetv1.FleetSetUpdateStrategy{}
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true, UpdatePriority: 2}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly, UpdatePriority: 1}}
	fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 8008}}
	fs.Spec.RoleServices = []fleetv1.RoleService{
		{Name: "db-rw", Role: "primary", Ports: []corev1.ServicePort{{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432)}}},
		{Name: "db-ro", AccessMode: fleetv1.AccessReadOnly, Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}},
	}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "works in both clusters", func() (bool, error) { return len(works(t, "roles", "db")) == 2, nil })
	for cluster, w := range works(t, "roles", "db") {
		var rw, ro corev1.Service
		manifest(t, w, "Service", "db-rw", &rw)
		manifest(t, w, "Service", "db-ro", &ro)
		if rw.Spec.Selector[fleetv1.LabelRole] != "primary" || rw.Spec.Selector[fleetv1.LabelSet] != "db" || ro.Spec.Selector[fleetv1.LabelAccessMode] != "ReadOnly" {
			t.Errorf("%s: role Services select %v and %v", cluster, rw.Spec.Selector, ro.Spec.Selector)
		}
		var sp fleetv1.SubsetPlacement
		subset := strings.TrimPrefix(cluster, "ro-")
		manifest(t, w, "SubsetPlacement", "db-"+subset, &sp)
		if sp.Spec.Roles == nil || len(sp.Spec.Roles.Roles) != 2 || sp.Spec.Roles.Probe == nil || sp.Spec.Roles.Probe.HTTPGet.Port != 8008 {
			t.Errorf("%s: SubsetPlacement roles %+v", cluster, sp.Spec.Roles)
		}
		found := false
		for _, c := range w.Spec.ManifestConfigs {
			if c.ResourceIdentifier.Resource == "subsetplacements" && len(c.FeedbackRules) == 1 && len(c.FeedbackRules[0].JsonPaths) == 3 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no role feedback rule on the SubsetPlacement", cluster)
		}
	}

	// One leader, in west.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=replica,db-east-1=replica", "")
	reportRoles(t, "ro-west", "roles", "db", "west", "db-west-1000=primary,db-west-1001=replica", "db-west-1000")
	eventually(t, 20*time.Second, "status.leader db-west-1000 in ro-west", func() (bool, error) {
		l := getFleetSet(t, "roles", "db").Status.Leader
		return l != nil && *l == fleetv1.LeaderStatus{Name: "db-west-1000", Subset: "west", Cluster: "ro-west"}, nil
	})
	eventually(t, 20*time.Second, "the fleet view lists the roles and the leader", func() (bool, error) {
		var view corev1.ConfigMap
		manifest(t, works(t, "roles", "db")["ro-east"], "ConfigMap", "db-fleet", &view)
		js := view.Data[fleetv1.FleetViewKey]
		return strings.Contains(js, `"name":"db-west-1000","ordinal":1000,"subset":"west","cluster":"ro-west"`) && strings.Contains(js, `"role":"primary"`) &&
			strings.Contains(js, `"leaders":[{"name":"db-west-1000","subset":"west","cluster":"ro-west"}]`), nil
	})

	// Split brain: a second leader in east.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=primary,db-east-1=replica", "db-east-0")
	eventually(t, 20*time.Second, "Degraded MultipleLeaders naming both", func() (bool, error) {
		got := getFleetSet(t, "roles", "db")
		c := condition(got, fleetv1.ConditionDegraded)
		return got.Status.Leader == nil && c.Reason == fleetv1.ReasonMultipleLeaders &&
			strings.Contains(c.Message, "db-east-0 in cluster ro-east") && strings.Contains(c.Message, "db-west-1000 in cluster ro-west"), nil
	})
	if !hasEvent(t, "roles", "db", fleetv1.ReasonMultipleLeaders) {
		t.Errorf("no %s event", fleetv1.ReasonMultipleLeaders)
	}

	// No leader at all.
	reportRoles(t, "ro-east", "roles", "db", "east", "db-east-0=replica,db-east-1=replica", "")
	reportRoles(t, "ro-west", "roles", "db", "west", "db-west-1000=replica,db-west-1001=replica", "")
	eventually(t, 20*time.Second, "Degraded NoLeader", func() (bool, error) {
		return condition(getFleetSet(t, "roles", "db"), fleetv1.ConditionDegraded).Reason == fleetv1.ReasonNoLeader, nil
	})
}

// TestAdmissionRoles: the role rules are enforced at admission.
func TestAdmissionRoles(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "roles-admission")
	port := []corev1.ServicePort{{Port: 5432}}
	for i, tc := range []struct {
		mutate func(fs *fleetv1.FleetSet)
		want   string
	}{
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "a", IsLeader: true}, {Name: "b", IsLeader: true}}
		}, "at most one role may be the leader"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 80}}
		}, "roleProbe needs roles"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
			fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "leader", Ports: port}}
		}, "roleServices[].role must name one of roles"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}}
			fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "primary", AccessMode: fleetv1.AccessReadWrite, Ports: port}}
		}, "set exactly one of role and accessMode"},
		{func(fs *fleetv1.FleetSet) {
			fs.Spec.Roles = []fleetv1.Role{{Name: "primary"}}
			fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 80, Path: "role"}}
		}, "path must start with /"},
	} {
		fs := sampleFleetSet("roles-admission", "bad")
		fs.Name = "bad-" + string(rune('a'+i))
		tc.mutate(fs)
		if err := k8sClient.Create(ctx, fs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: Create() = %v, want an error containing %q", i, err, tc.want)
		}
	}
	fs := sampleFleetSet("roles-admission", "good")
	fs.Spec.Roles = []fleetv1.Role{{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true}, {Name: "replica", AccessMode: fleetv1.AccessReadOnly}}
	fs.Spec.RoleProbe = &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 8008, Path: "/role"}, PeriodSeconds: 2}
	fs.Spec.RoleServices = []fleetv1.RoleService{{Name: "rw", Role: "primary", Ports: port}, {Name: "ro", AccessMode: fleetv1.AccessReadOnly, Ports: port}}
	if err := k8sClient.Create(ctx, fs); err != nil {
		t.Errorf("a valid FleetSet with roles refused: %v", err)
	}
}
