package manifestwork

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/envelope"
)

// FieldManager is the server-side-apply field manager the work agent uses
// for the hub's manifests (OCM requires the "work-agent" prefix).
const FieldManager = "work-agent-fleetset-hub"

// Subset is one subset as Works renders it: plan.For's division and
// ordinal block (FromPlan) and what the hub adds to deliver it.
type Subset struct {
	// Name of the subset; Cluster the ManagedCluster it is delivered to.
	Name, Cluster string
	// OrdinalStart and BlockSize are its ordinal block.
	OrdinalStart, BlockSize int32
	// Replicas and Partition are its StatefulSet's replicas and partition.
	Replicas, Partition int32
	// Domains in spec order (none: spread over the cluster's nodes);
	// NodeSelector its spec.topology.subsets[].nodeSelector.
	Domains      []plan.Domain
	NodeSelector *corev1.NodeSelector

	// Revision is the subset revision, stamped on the StatefulSet as
	// v1alpha1.AnnotationRevision; empty: no annotation.
	Revision string
	// Epoch is the subset's fencing epoch, for the fleet view; Fencing its
	// SubsetPlacement spec.fencing (failover policy Relocate).
	Epoch   int64
	Fencing *fleetv1.PlacementFencing
	// Template and Claims are the subset's templates after its overrides;
	// nil: the fleet's spec.template and spec.volumeClaimTemplates.
	Template *corev1.PodTemplateSpec
	Claims   []corev1.PersistentVolumeClaim
	// Dependencies are the ConfigMaps and Secrets delivered with it, sorted
	// by kind and name; DependenciesHash is their DependenciesHash.
	Dependencies     []runtime.Object
	DependenciesHash string
	// Roles (by pod name) and Leaders are its member's last role report,
	// for the fleet view.
	Roles   map[string]string
	Leaders []string
	// Update is its member's instruction in a role-ordered rollout
	// (SubsetPlacement spec.update); nil outside one.
	Update *fleetv1.PlacementUpdate
	// Draining is true while the subset leaves this cluster (a move or a
	// failback, at replicas 0): its claims are retained whatever the
	// FleetSet's persistentVolumeClaimRetentionPolicy says.
	Draining bool

	// Leave, Origin, Candidates, RolloutComplete and Switchover are the
	// hub's lifecycle-action instructions to its member (SubsetPlacement
	// spec.actions), rendered only when the FleetSet has lifecycle actions.
	Leave           []fleetv1.PlacementLeave
	Origin          *fleetv1.SubsetOrigin
	Candidates      []string
	RolloutComplete string
	Switchover      *fleetv1.PlacementSwitchover
	// Members (pod names in ordinal order) and Leader are the fleet's, for
	// the actions' environment; Works fills them from the fleet view.
	Members []string
	Leader  string
	// ClaimsLeft, when set, is where the claims its instances were created
	// with stay while it runs elsewhere (FleetSet status.subsets[].claims),
	// for the fleet view.
	ClaimsLeft *fleetv1.SubsetClaims
}

// FromPlan returns p as a Subset to render, with the fleet's templates and
// no dependencies, revision, fencing, roles or update.
func FromPlan(p plan.Subset) Subset {
	return Subset{Name: p.Name, Cluster: p.Cluster, OrdinalStart: p.OrdinalStart, BlockSize: p.BlockSize,
		Replicas: p.Replicas, Partition: p.Partition, Domains: p.Domains, NodeSelector: p.NodeSelector}
}

// Works renders one ManifestWork per cluster named in subsets (every subset
// of fs, in spec order), sorted by cluster. It errors when spec.selector is
// invalid or an object cannot be encoded. records (nil: none) are the fleet
// DNS records each work carries for the other clusters' instances; for a
// fleet over v1alpha1.MaxInlineFleetDNSInstances (Records.Split) they are
// rendered instead as fleet DNS works (FleetDNSWorks), after each cluster's
// work, so that every work stays within OCM's manifest limit.
func Works(fs *fleetv1.FleetSet, subsets []Subset, records *Records) ([]*workv1.ManifestWork, error) {
	var clusters []string
	byCluster := map[string][]Subset{}
	view, err := FleetView(fs, subsets)
	if err != nil {
		return nil, err
	}
	if fs.Spec.LifecycleActions != nil {
		subsets = withMembers(fs, subsets)
	}
	for _, sp := range subsets {
		if _, ok := byCluster[sp.Cluster]; !ok {
			clusters = append(clusters, sp.Cluster)
		}
		byCluster[sp.Cluster] = append(byCluster[sp.Cluster], sp)
	}
	sort.Strings(clusters)
	// The objects every work carries alike, encoded once (their bytes are
	// shared, read-only, by the works). The namespace is not one: the tenant
	// work creates it (TenantWork), and this work's executor may not.
	sharedObjs := []runtime.Object{Service(fs), view}
	if fs.Spec.ExportsMultiClusterService() {
		sharedObjs = append(sharedObjs, ServiceExport(fs))
	}
	for _, rs := range RoleServices(fs) {
		sharedObjs = append(sharedObjs, rs)
	}
	shared, err := envelope.Encode(sharedObjs)
	if err != nil {
		return nil, err
	}
	works := make([]*workv1.ManifestWork, 0, len(clusters))
	for _, c := range clusters {
		inline, parts := records.split(fs, c)
		w, err := work(fs, c, byCluster[c], view.Name, shared, inline)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c, err)
		}
		works = append(works, w)
		dns, err := fleetDNSWorks(fs, c, parts)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c, err)
		}
		works = append(works, dns...)
	}
	return works, nil
}

// IsFleetDNSWork reports whether w is a fleet DNS work (label
// v1alpha1.LabelWorkPart), not the ManifestWork of a cluster's subsets.
func IsFleetDNSWork(w metav1.Object) bool {
	return w.GetLabels()[fleetv1.LabelWorkPart] == fleetv1.WorkPartFleetDNS
}

// fleetDNSWorks renders cluster's fleet DNS works from parts (by work
// index, Records.split), sorted by index: work k, named
// v1alpha1.FleetDNSWorkName, holds parts[k] and nothing else, labelled
// v1alpha1.LabelWorkPart; the namespace and the Service are the cluster's
// ManifestWork's. Deleting it deletes its EndpointSlices, unless
// deletionPolicy Retain orphans it as it does the cluster's work.
func fleetDNSWorks(fs *fleetv1.FleetSet, cluster string, parts map[int][]*discoveryv1.EndpointSlice) ([]*workv1.ManifestWork, error) {
	ks := make([]int, 0, len(parts))
	for k := range parts {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	out := make([]*workv1.ManifestWork, 0, len(ks))
	for _, k := range ks {
		objs := make([]runtime.Object, 0, len(parts[k]))
		configs := make([]workv1.ManifestConfigOption, 0, len(parts[k]))
		for _, es := range parts[k] {
			objs = append(objs, es)
			configs = append(configs, applyConfig("discovery.k8s.io", "endpointslices", fs.Namespace, es.Name))
		}
		manifests, err := envelope.Encode(objs)
		if err != nil {
			return nil, err
		}
		labels := envelope.OwnerLabels(fs.Namespace, fs.Name)
		labels[fleetv1.LabelWorkPart] = fleetv1.WorkPartFleetDNS
		w := &workv1.ManifestWork{
			TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        fleetv1.FleetDNSWorkName(fs.Namespace, fs.Name, k),
				Namespace:   cluster,
				Labels:      labels,
				Annotations: map[string]string{fleetv1.AnnotationDeletionPolicy: string(fs.Spec.DeletionPolicyOrDefault())},
			},
			Spec: workv1.ManifestWorkSpec{
				Workload:        workv1.ManifestsTemplate{Manifests: manifests},
				ManifestConfigs: configs,
				// The namespace's own executor, as the FleetSet's work.
				Executor: Executor(fs.Namespace),
			},
		}
		if err := stampHash(w); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// work renders the ManifestWork of one cluster: shared (the encoded
// Service and fleet view ConfigMap viewName, the same in every cluster), then each subset's SubsetPlacement and StatefulSet, then the
// ConfigMaps and Secrets delivered with them, then each subset's
// PodDisruptionBudget (spec.disruptionBudget), then dns, the fleet DNS
// EndpointSlices of the other clusters' instances (Records.Slices).
func work(fs *fleetv1.FleetSet, cluster string, subsets []Subset, viewName string, shared []workv1.Manifest, dns []*discoveryv1.EndpointSlice) (*workv1.ManifestWork, error) {
	var objs []runtime.Object
	configs := []workv1.ManifestConfigOption{
		applyConfig("", "services", fs.Namespace, envelope.ServiceName(fs)),
		applyConfig("", "configmaps", fs.Namespace, viewName),
	}
	if fs.Spec.ExportsMultiClusterService() {
		configs = append(configs, applyConfig(MCSGroup, "serviceexports", fs.Namespace, envelope.ServiceName(fs)))
	}
	for _, rs := range fs.Spec.RoleServices {
		configs = append(configs, applyConfig("", "services", fs.Namespace, rs.Name))
	}
	var starts []string
	for _, sp := range subsets {
		sts, err := StatefulSet(fs, sp)
		if err != nil {
			return nil, err
		}
		objs = append(objs, SubsetPlacement(fs, sp), sts)
		configs = append(configs,
			placementConfig(fs, sts.Name),
			statefulSetConfig(fs.Namespace, sts.Name),
		)
		starts = append(starts, sp.Name+"="+strconv.Itoa(int(sp.OrdinalStart)))
	}
	// The ConfigMaps and Secrets the cluster's subsets reference, once each
	// (subsets of one cluster share the namespace).
	delivered := map[string]bool{}
	for _, sp := range subsets {
		for _, d := range sp.Dependencies {
			kind := d.GetObjectKind().GroupVersionKind().Kind
			name := d.(metav1.Object).GetName()
			if delivered[kind+"/"+name] {
				continue
			}
			delivered[kind+"/"+name] = true
			objs = append(objs, d)
			configs = append(configs, applyConfig("", dependencyResource(kind), fs.Namespace, name))
		}
	}
	pdbs, err := PodDisruptionBudgets(fs, subsets)
	if err != nil {
		return nil, err
	}
	for _, p := range pdbs {
		objs = append(objs, p)
		configs = append(configs, pdbConfig(fs.Namespace, p.Name))
	}
	for _, es := range dns {
		objs = append(objs, es)
		configs = append(configs, applyConfig("discovery.k8s.io", "endpointslices", fs.Namespace, es.Name))
	}
	own, err := envelope.Encode(objs)
	if err != nil {
		return nil, err
	}
	manifests := append(slices.Clip(shared), own...)
	w := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkName(fs.Namespace, fs.Name),
			Namespace: cluster,
			Labels:    envelope.OwnerLabels(fs.Namespace, fs.Name),
			Annotations: map[string]string{fleetv1.AnnotationOrdinalStarts: strings.Join(starts, ","),
				fleetv1.AnnotationDeletionPolicy:   string(fs.Spec.DeletionPolicyOrDefault()),
				fleetv1.AnnotationPodSecurityLevel: string(fs.Spec.PodSecurityLevelOrDefault())},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:        workv1.ManifestsTemplate{Manifests: manifests},
			ManifestConfigs: configs,
			// The work agent applies only what the namespace's executor may
			// write: the delivered kinds, in this namespace only.
			Executor: Executor(fs.Namespace),
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
}

// Pod Security Admission's namespace labels (KEP-2579).
const (
	LabelPodSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	LabelPodSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
)

// createOnlyConfig creates one resource when it does not exist and never
// changes it after: the work agent's CreateOnly strategy. For the tenant's
// namespace (TenantWork), whose labels (Pod Security among them) belong to the member's
// administrators once it exists.
func createOnlyConfig(group, resource, namespace, name string) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: namespace, Name: name},
		UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly},
	}
}

// applyConfig is server-side apply with force for one resource.
func applyConfig(group, resource, namespace, name string) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: namespace, Name: name},
		UpdateStrategy: &workv1.UpdateStrategy{
			Type:            workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager},
		},
	}
}

func statefulSetConfig(namespace, name string) workv1.ManifestConfigOption {
	c := applyConfig("apps", "statefulsets", namespace, name)
	c.FeedbackRules = []workv1.FeedbackRule{{
		Type: workv1.JSONPathsType,
		JsonPaths: []workv1.JsonPath{
			{Name: FeedbackReplicas, Path: ".status.replicas"},
			{Name: FeedbackReadyReplicas, Path: ".status.readyReplicas"},
			{Name: FeedbackUpdatedReplicas, Path: ".status.updatedReplicas"},
			{Name: FeedbackAvailableReplicas, Path: ".status.availableReplicas"},
			{Name: FeedbackCurrentRevision, Path: ".status.currentRevision"},
			{Name: FeedbackUpdateRevision, Path: ".status.updateRevision"},
			{Name: FeedbackFleetRevision, Path: `.metadata.annotations.fleetset\.io/revision`},
			{Name: FeedbackGeneration, Path: ".metadata.generation"},
			{Name: FeedbackObservedGeneration, Path: ".status.observedGeneration"},
		},
	}}
	return c
}

// StatefulSet renders the StatefulSet <fleetset>-<subset>: fs's template
// scheduled by fleetset-scheduler, selecting spec.selector plus the set and
// subset labels, ordinals.start the subset's OrdinalStart, partition as
// planned (counted from ordinals.start), and Parallel pod management so one
// full domain does not block the others. It errors when spec.selector is nil.
func StatefulSet(fs *fleetv1.FleetSet, sp Subset) (*appsv1.StatefulSet, error) {
	if fs.Spec.Selector == nil {
		return nil, fmt.Errorf("spec.selector: required")
	}
	name := envelope.StatefulSetName(fs.Name, sp.Name)
	labels := map[string]string{
		fleetv1.LabelSet:       fs.Name,
		fleetv1.LabelSubset:    sp.Name,
		fleetv1.LabelPlacement: name,
	}
	sel, err := subsetSelector(fs, sp.Name)
	if err != nil {
		return nil, err
	}

	tmpl, claims := subsetTemplates(fs, sp)
	tmpl.Labels = k8slabels.Merge(tmpl.Labels, labels)
	tmpl.Spec.SchedulerName = fleetv1.SchedulerName
	tmpl.Spec.ReadinessGates = readinessGates(fs, tmpl.Spec.ReadinessGates)
	if sp.DependenciesHash != "" {
		// A changed ConfigMap or Secret replaces the pods (no annotation,
		// and so no restart on upgrade, without dependencies).
		tmpl.Annotations = k8slabels.Merge(tmpl.Annotations, map[string]string{fleetv1.AnnotationDependencies: sp.DependenciesHash})
	}
	var annotations map[string]string
	if sp.Revision != "" {
		annotations = map[string]string{fleetv1.AnnotationRevision: sp.Revision}
	}
	sts := &appsv1.StatefulSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   fs.Namespace,
			Labels:      ownedBy(fs, labels),
			Annotations: annotations,
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(sp.Replicas),
			Selector:                             sel,
			Template:                             *tmpl,
			ServiceName:                          envelope.ServiceName(fs),
			PodManagementPolicy:                  fs.Spec.PodManagementPolicyOrDefault(),
			MinReadySeconds:                      fs.Spec.MinReadySeconds,
			RevisionHistoryLimit:                 fs.Spec.RevisionHistoryLimit,
			UpdateStrategy:                       updateStrategy(fs, sp),
			VolumeClaimTemplates:                 claims,
			PersistentVolumeClaimRetentionPolicy: retention(fs.Spec.PersistentVolumeClaimRetentionPolicy, sp.Draining),
			Ordinals:                             &appsv1.StatefulSetOrdinals{Start: sp.OrdinalStart},
		},
	}
	return sts, nil
}

// RoleOrdered reports whether fs rolls out role-ordered: it has roles and
// the RollingUpdate strategy. Its StatefulSets then use OnDelete, and their
// members replace pods in the hub's order, the leader last
// (v1alpha1.PlacementUpdate).
func RoleOrdered(fs *fleetv1.FleetSet) bool {
	return len(fs.Spec.Roles) > 0 && fs.Spec.UpdateStrategy.Type != fleetv1.ManualUpdateStrategyType
}

// updateStrategy is the subset's StatefulSet update strategy: OnDelete in a
// role-ordered rollout, else RollingUpdate with the subset's partition.
func updateStrategy(fs *fleetv1.FleetSet, sp Subset) appsv1.StatefulSetUpdateStrategy {
	if RoleOrdered(fs) {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}
	return appsv1.StatefulSetUpdateStrategy{
		Type:          appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(sp.Partition)},
	}
}

// subsetTemplates returns copies of sp's pod template and claim templates
// (Template and Claims), or of fs's when sp has none.
func subsetTemplates(fs *fleetv1.FleetSet, sp Subset) (*corev1.PodTemplateSpec, []corev1.PersistentVolumeClaim) {
	if sp.Template != nil {
		var claims []corev1.PersistentVolumeClaim
		for _, c := range sp.Claims {
			claims = append(claims, *c.DeepCopy())
		}
		return sp.Template.DeepCopy(), claims
	}
	tmpl, claims, _ := SubsetTemplate(fs, nil, "")
	return tmpl, claims
}

// claimStorage returns the storage request of each of claims that has one,
// for the SubsetPlacement's spec.claimStorage.
func claimStorage(claims []corev1.PersistentVolumeClaim) []fleetv1.ClaimStorage {
	var out []fleetv1.ClaimStorage
	for _, c := range claims {
		if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			out = append(out, fleetv1.ClaimStorage{Name: c.Name, Storage: q})
		}
	}
	return out
}

// Service renders the headless Service spec.serviceName that governs the
// FleetSet's StatefulSets in one cluster. It publishes not-ready addresses,
// so peers find each other while they bootstrap.
func Service(fs *fleetv1.FleetSet) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      envelope.ServiceName(fs),
			Namespace: fs.Namespace,
			Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name}),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{fleetv1.LabelSet: fs.Name},
			PublishNotReadyAddresses: true,
		},
	}
}

// SubsetPlacement renders the SubsetPlacement <fleetset>-<subset>: the
// subset's domain shares (sorted by name; not its size, so scaling never
// rewrites it), topology key, node selector and ordinal start, always
// DoNotSchedule so a re-created instance returns to its volume's domain.
func SubsetPlacement(fs *fleetv1.FleetSet, sp Subset) *fleetv1.SubsetPlacement {
	key := fleetv1.TopologyKeyOrDefault(fs.Spec.Topology.TopologyKey)
	var domains []fleetv1.DomainShare
	for _, d := range sp.Domains {
		pd := fleetv1.DomainShare{Name: d.Name}
		if d.Share != nil {
			pd.Replicas = ptr.To(*d.Share)
		}
		domains = append(domains, pd)
	}
	slices.SortFunc(domains, func(a, b fleetv1.DomainShare) int { return strings.Compare(a.Name, b.Name) })
	sel := sp.NodeSelector.DeepCopy()
	_, claims := subsetTemplates(fs, sp)
	return &fleetv1.SubsetPlacement{
		TypeMeta: metav1.TypeMeta{APIVersion: fleetv1.GroupVersion.String(), Kind: "SubsetPlacement"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      envelope.StatefulSetName(fs.Name, sp.Name),
			Namespace: fs.Namespace,
			Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name, fleetv1.LabelSubset: sp.Name}),
		},
		Spec: fleetv1.SubsetPlacementSpec{
			TopologyKey:       key,
			Domains:           domains,
			NodeSelector:      sel,
			OrdinalStart:      sp.OrdinalStart,
			OrdinalBlockSize:  sp.BlockSize,
			Fencing:           sp.Fencing.DeepCopy(),
			WhenUnsatisfiable: fleetv1.DoNotSchedule,
			ClaimStorage:      claimStorage(claims),
			Cluster:           sp.Cluster,
			Roles:             placementRoles(fs),
			Update:            sp.Update.DeepCopy(),
			Actions:           placementActions(fs, sp),
		},
	}
}

// ownedBy returns a copy of labels with LabelOwnerUID set to fs's owner
// identity (fs.Identity(): annotation fleetset.io/identity, else the UID;
// left out while fs has neither, as in a unit test): the mark the add-on's
// admission policy checks before a delivered object is written over an
// existing one.
func ownedBy(fs *fleetv1.FleetSet, labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	if id := fs.Identity(); id != "" {
		out[fleetv1.LabelOwnerUID] = id
	}
	return out
}

// retention is the claim retention policy of a subset's StatefulSet: the
// FleetSet's, or Retain on scale-down and deletion while draining, because
// a subset leaving a cluster must never delete the only copy of its data.
func retention(p *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy, draining bool) *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	if !draining || p == nil {
		return p.DeepCopy()
	}
	return &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
}
