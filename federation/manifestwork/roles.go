package manifestwork

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Feedback names of a SubsetPlacement's role summary (roles.go in the API),
// requested when the FleetSet has roles.
const (
	FeedbackRoles           = "roles"
	FeedbackLeaders         = "leaders"
	FeedbackUpdatedLeaders  = "updatedLeaders"
	FeedbackRolesGeneration = "rolesObservedGeneration"
)

// placementRoles returns what a SubsetPlacement carries of fs's roles; nil
// without roles.
func placementRoles(fs *fleetv1.FleetSet) *fleetv1.PlacementRoles {
	if len(fs.Spec.Roles) == 0 {
		return nil
	}
	pr := &fleetv1.PlacementRoles{Roles: append([]fleetv1.Role(nil), fs.Spec.Roles...)}
	if fs.Spec.RoleProbe != nil {
		pr.Probe = fs.Spec.RoleProbe.DeepCopy()
	}
	return pr
}

// placementConfig is the ManifestConfigOption of a SubsetPlacement: applied
// as the other objects are, and, when fs has roles, with the feedback of
// its role summary (status.roles, status.leaders, status.observedGeneration),
// and, with lifecycle actions, of status.actions.
func placementConfig(fs *fleetv1.FleetSet, name string) workv1.ManifestConfigOption {
	c := applyConfig(fleetv1.GroupVersion.Group, "subsetplacements", fs.Namespace, name)
	var paths []workv1.JsonPath
	if len(fs.Spec.Roles) > 0 {
		paths = append(paths,
			workv1.JsonPath{Name: FeedbackRoles, Path: ".status.roles"},
			workv1.JsonPath{Name: FeedbackLeaders, Path: ".status.leaders"},
			workv1.JsonPath{Name: FeedbackUpdatedLeaders, Path: ".status.updatedLeaders"},
			workv1.JsonPath{Name: FeedbackRolesGeneration, Path: ".status.observedGeneration"},
		)
	}
	if fs.Spec.LifecycleActions != nil {
		// status.actions: the lifecycle actions the hub waits for (lifecycle.go).
		paths = append(paths, actionsFeedback()...)
	}
	if len(paths) > 0 {
		c.FeedbackRules = []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: paths}}
	}
	return c
}

// RoleServices renders spec.roleServices: one Service per entry, the same in
// every member cluster, selecting the FleetSet's pods (fleetset.io/set)
// whose label fleetset.io/role (or fleetset.io/access-mode) is the entry's.
func RoleServices(fs *fleetv1.FleetSet) []*corev1.Service {
	var out []*corev1.Service
	for _, rs := range fs.Spec.RoleServices {
		sel := map[string]string{fleetv1.LabelSet: fs.Name}
		if rs.Role != "" {
			sel[fleetv1.LabelRole] = rs.Role
		} else {
			sel[fleetv1.LabelAccessMode] = string(rs.AccessMode)
		}
		out = append(out, &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      rs.Name,
				Namespace: fs.Namespace,
				Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name}),
			},
			Spec: corev1.ServiceSpec{Selector: sel, Ports: append([]corev1.ServicePort(nil), rs.Ports...)},
		})
	}
	return out
}

// RoleReport is what a member reported of one SubsetPlacement's roles.
type RoleReport struct {
	// Roles is the role of each running instance that holds one, by pod.
	Roles map[string]string
	// Leaders are the pods holding the leader role, sorted.
	Leaders []string
	// UpdatedLeaders are those of Leaders on the StatefulSet's update
	// revision.
	UpdatedLeaders []string
}

// RoleFeedback returns, by SubsetPlacement name, the role summaries the
// work agent fed back in w (placements whose member component has not
// written one yet, status.observedGeneration unset, are absent).
func RoleFeedback(w *workv1.ManifestWork) map[string]RoleReport {
	out := map[string]RoleReport{}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind != "SubsetPlacement" || len(m.StatusFeedbacks.Values) == 0 {
			continue
		}
		r := RoleReport{Roles: map[string]string{}}
		observed := false
		for _, v := range m.StatusFeedbacks.Values {
			switch {
			case v.Name == FeedbackRolesGeneration && v.Value.Integer != nil:
				observed = *v.Value.Integer > 0
			case v.Name == FeedbackRoles && v.Value.String != nil:
				for _, kv := range strings.Split(*v.Value.String, ",") {
					if pod, role, ok := strings.Cut(kv, "="); ok && pod != "" && role != "" {
						r.Roles[pod] = role
					}
				}
			case v.Name == FeedbackLeaders && v.Value.String != nil:
				r.Leaders = splitList(*v.Value.String)
			case v.Name == FeedbackUpdatedLeaders && v.Value.String != nil:
				r.UpdatedLeaders = splitList(*v.Value.String)
			}
		}
		if observed {
			sort.Strings(r.Leaders)
			out[m.ResourceMeta.Name] = r
		}
	}
	return out
}

// splitList splits a comma-joined list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
