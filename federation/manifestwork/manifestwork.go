// Package manifestwork renders what fleetset-hub delivers to member clusters
// as Open Cluster Management ManifestWorks, and reads back what the work
// agents report. It is pure: no client, no clock.
//
// One ManifestWork per (FleetSet, cluster), named WorkName in the namespace
// named after the ManagedCluster, carries, in apply order:
//   - the FleetSet's namespace (orphaned when the work is deleted, so removing
//     a FleetSet never deletes a namespace);
//   - the headless Service spec.serviceName, selecting fleetset.io/set=<fleetset>;
//   - the fleet view ConfigMap <fleetset>-fleet (v1alpha1.FleetView as JSON);
//   - per subset on that cluster, its SubsetPlacement then its StatefulSet,
//     both named <fleetset>-<subset>.
//
// Every manifest is applied with server-side apply (force), so member-side
// defaults and other field owners are left alone. The StatefulSet asks for
// statusFeedback of replicas, readyReplicas, updatedReplicas,
// availableReplicas, currentRevision and updateRevision; Feedback reads it
// back.
//
// One more ManifestWork per cluster, ResyncWork, carries the resync Lease
// (see the contract in package api/v1alpha1).
package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// FieldManager is the server-side-apply field manager the work agent uses
// for the hub's manifests (OCM requires the "work-agent" prefix).
const FieldManager = "work-agent-fleetset-hub"

// Feedback names, as requested from the work agent for every StatefulSet.
const (
	FeedbackReplicas          = "replicas"
	FeedbackReadyReplicas     = "readyReplicas"
	FeedbackUpdatedReplicas   = "updatedReplicas"
	FeedbackAvailableReplicas = "availableReplicas"
	FeedbackCurrentRevision   = "currentRevision"
	FeedbackUpdateRevision    = "updateRevision"
	// FeedbackFleetRevision is the StatefulSet's fleetset.io/revision
	// annotation; FeedbackGeneration and FeedbackObservedGeneration tell
	// whether the other values are of its current spec.
	FeedbackFleetRevision      = "fleetRevision"
	FeedbackGeneration         = "generation"
	FeedbackObservedGeneration = "observedGeneration"
)

// maxNameLength is the longest ManifestWork name (a DNS subdomain).
const maxNameLength = 253

// WorkName returns the name of the ManifestWork of FleetSet namespace/name in
// every member cluster: "<namespace>.<name>" (OCM style; namespaces hold no
// dot, so it is unique), cut to 253 characters with a hash suffix if longer.
func WorkName(namespace, name string) string {
	n := namespace + "." + name
	if len(n) <= maxNameLength {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxNameLength-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// StatefulSetName returns the name of the StatefulSet, SubsetPlacement and
// placement label of a subset: "<fleetset>-<subset>".
func StatefulSetName(fleetSet, subset string) string {
	return fleetSet + "-" + subset
}

// FleetViewName returns the name of the fleet view ConfigMap: "<fleetset>-fleet".
func FleetViewName(fleetSet string) string {
	return fleetSet + "-fleet"
}

// ServiceName returns the headless Service of a FleetSet: spec.serviceName,
// or the FleetSet's name when unset.
func ServiceName(fs *fleetv1.FleetSet) string {
	if fs.Spec.ServiceName != "" {
		return fs.Spec.ServiceName
	}
	return fs.Name
}

// OwnerLabels returns the labels that mark a ManifestWork as belonging to
// FleetSet namespace/name.
func OwnerLabels(namespace, name string) map[string]string {
	return map[string]string{
		fleetv1.LabelManagedBy:      fleetv1.ManagedByHub,
		fleetv1.LabelOwnerNamespace: namespace,
		fleetv1.LabelOwnerName:      name,
	}
}

// Works renders one ManifestWork per cluster named in subsets, sorted by
// cluster. subsets holds every subset of fs in spec order (the fleet view lists
// them all; each work carries only its cluster's subsets).
//
// It returns an error if fs.Spec.Selector is not a valid label selector or an
// object cannot be encoded.
func Works(fs *fleetv1.FleetSet, subsets []plan.Subset) ([]*workv1.ManifestWork, error) {
	var clusters []string
	byCluster := map[string][]plan.Subset{}
	for _, sp := range subsets {
		if _, ok := byCluster[sp.Cluster]; !ok {
			clusters = append(clusters, sp.Cluster)
		}
		byCluster[sp.Cluster] = append(byCluster[sp.Cluster], sp)
	}
	sort.Strings(clusters)
	view, err := FleetView(fs, subsets)
	if err != nil {
		return nil, err
	}
	works := make([]*workv1.ManifestWork, 0, len(clusters))
	for _, c := range clusters {
		w, err := work(fs, c, byCluster[c], view)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c, err)
		}
		works = append(works, w)
	}
	return works, nil
}

func work(fs *fleetv1.FleetSet, cluster string, subsets []plan.Subset, view *corev1.ConfigMap) (*workv1.ManifestWork, error) {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: fs.Namespace},
	}
	objs := []runtime.Object{ns, Service(fs), view}
	configs := []workv1.ManifestConfigOption{
		applyConfig("", "namespaces", "", fs.Namespace),
		applyConfig("", "services", fs.Namespace, ServiceName(fs)),
		applyConfig("", "configmaps", fs.Namespace, view.Name),
	}
	var starts []string
	for _, sp := range subsets {
		sts, err := StatefulSet(fs, sp)
		if err != nil {
			return nil, err
		}
		objs = append(objs, SubsetPlacement(fs, sp), sts)
		configs = append(configs,
			applyConfig(fleetv1.GroupVersion.Group, "subsetplacements", fs.Namespace, sts.Name),
			statefulSetConfig(fs.Namespace, sts.Name),
		)
		starts = append(starts, sp.Name+"="+strconv.Itoa(int(sp.OrdinalStart)))
	}
	manifests, err := encode(objs)
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        WorkName(fs.Namespace, fs.Name),
			Namespace:   cluster,
			Labels:      OwnerLabels(fs.Namespace, fs.Name),
			Annotations: map[string]string{fleetv1.AnnotationOrdinalStarts: strings.Join(starts, ",")},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:        workv1.ManifestsTemplate{Manifests: manifests},
			DeleteOption:    orphanNamespace(fs.Namespace),
			ManifestConfigs: configs,
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
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

// StatefulSet renders the StatefulSet <fleetset>-<subset> of one subset:
// fs's template with schedulerName fleetset-scheduler and the labels
// fleetset.io/set, fleetset.io/subset and fleetset.io/placement; the selector
// is spec.selector plus the set and subset labels, so subsets sharing a
// cluster never select each other's pods. spec.ordinals.start is the subset's
// OrdinalStart, and the rolling-update partition is the subset's Partition
// unchanged: the StatefulSet controller counts it from ordinals.start
// (k8s.io/kubernetes pkg/controller/statefulset, newVersionedStatefulSetPod:
// ordinal < start+partition keeps the current revision). Pods are managed in
// Parallel: a pod held Pending by DoNotSchedule in a full domain must not
// block the other domains' instances, as OrderedReady would.
//
// It returns an error if fs.Spec.Selector is nil.
func StatefulSet(fs *fleetv1.FleetSet, sp plan.Subset) (*appsv1.StatefulSet, error) {
	if fs.Spec.Selector == nil {
		return nil, fmt.Errorf("spec.selector: required")
	}
	name := StatefulSetName(fs.Name, sp.Name)
	labels := map[string]string{
		fleetv1.LabelSet:       fs.Name,
		fleetv1.LabelSubset:    sp.Name,
		fleetv1.LabelPlacement: name,
	}
	sel := fs.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[fleetv1.LabelSet] = fs.Name
	sel.MatchLabels[fleetv1.LabelSubset] = sp.Name

	tmpl := fs.Spec.Template.DeepCopy()
	tmpl.Labels = k8slabels.Merge(tmpl.Labels, labels)
	tmpl.Spec.SchedulerName = fleetv1.SchedulerName

	var claims []corev1.PersistentVolumeClaim
	for _, c := range fs.Spec.VolumeClaimTemplates {
		c := *c.DeepCopy()
		c.Status = corev1.PersistentVolumeClaimStatus{}
		claims = append(claims, c)
	}
	policy := fs.Spec.PodManagementPolicy
	if policy == "" {
		policy = appsv1.ParallelPodManagement
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
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(sp.Replicas),
			Selector:             sel,
			Template:             *tmpl,
			ServiceName:          ServiceName(fs),
			PodManagementPolicy:  policy,
			MinReadySeconds:      fs.Spec.MinReadySeconds,
			RevisionHistoryLimit: fs.Spec.RevisionHistoryLimit,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(sp.Partition)},
			},
			VolumeClaimTemplates:                 claims,
			PersistentVolumeClaimRetentionPolicy: fs.Spec.PersistentVolumeClaimRetentionPolicy.DeepCopy(),
			Ordinals:                             &appsv1.StatefulSetOrdinals{Start: sp.OrdinalStart},
		},
	}
	return sts, nil
}

// Service renders the headless Service spec.serviceName that governs the
// FleetSet's StatefulSets in one cluster. It publishes not-ready addresses,
// so peers find each other while they bootstrap.
func Service(fs *fleetv1.FleetSet) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceName(fs),
			Namespace: fs.Namespace,
			Labels:    map[string]string{fleetv1.LabelSet: fs.Name},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{fleetv1.LabelSet: fs.Name},
			PublishNotReadyAddresses: true,
		},
	}
}

// SubsetPlacement renders the SubsetPlacement <fleetset>-<subset>: the
// subset's domains with their shares as the FleetSet gives them (sorted by
// name; fleetset-scheduler takes them by name and deals ordinals by the same
// seat sequence the hub divides with), the topology key, the node selector
// and the ordinal start. It depends on the shares, not on the subset's size,
// so scaling never rewrites it. Whatever the domains, the placement is
// DoNotSchedule so a re-created instance returns to its volume's domain. A
// subset without domains gets no domain list; fleetset-scheduler then only
// spreads it over the cluster's values of the topology key.
func SubsetPlacement(fs *fleetv1.FleetSet, sp plan.Subset) *fleetv1.SubsetPlacement {
	key := fleetv1.TopologyKeyOrDefault(fs.Spec.Topology.TopologyKey)
	var domains []fleetv1.PlacementDomain
	for _, d := range sp.Domains {
		pd := fleetv1.PlacementDomain{Name: d.Name}
		if d.Share != nil {
			pd.Replicas = ptr.To(*d.Share)
		}
		domains = append(domains, pd)
	}
	slices.SortFunc(domains, func(a, b fleetv1.PlacementDomain) int { return strings.Compare(a.Name, b.Name) })
	sel := sp.NodeSelector.DeepCopy()
	return &fleetv1.SubsetPlacement{
		TypeMeta: metav1.TypeMeta{APIVersion: fleetv1.GroupVersion.String(), Kind: "SubsetPlacement"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      StatefulSetName(fs.Name, sp.Name),
			Namespace: fs.Namespace,
			Labels:    map[string]string{fleetv1.LabelSet: fs.Name, fleetv1.LabelSubset: sp.Name},
		},
		Spec: fleetv1.SubsetPlacementSpec{
			TopologyKey:       key,
			Domains:           domains,
			NodeSelector:      sel,
			OrdinalStart:      sp.OrdinalStart,
			WhenUnsatisfiable: fleetv1.DoNotSchedule,
		},
	}
}

// FleetView renders the ConfigMap <fleetset>-fleet holding v1alpha1.FleetView
// for every subset in subsets, under key v1alpha1.FleetViewKey.
func FleetView(fs *fleetv1.FleetSet, subsets []plan.Subset) (*corev1.ConfigMap, error) {
	v := fleetv1.FleetView{FleetSet: fs.Name, Namespace: fs.Namespace, Replicas: fs.Spec.Replicas, Subsets: []fleetv1.FleetViewSubset{}}
	for _, sp := range subsets {
		v.Subsets = append(v.Subsets, fleetv1.FleetViewSubset{
			Name:         sp.Name,
			Cluster:      sp.Cluster,
			OrdinalStart: sp.OrdinalStart,
			OrdinalEnd:   sp.OrdinalStart + sp.BlockSize,
			Replicas:     sp.Replicas,
			Partition:    sp.Partition,
		})
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding fleet view: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      FleetViewName(fs.Name),
			Namespace: fs.Namespace,
			Labels:    map[string]string{fleetv1.LabelSet: fs.Name},
		},
		Data: map[string]string{fleetv1.FleetViewKey: string(b)},
	}, nil
}

// Lease is the state of the resync lease the hub delivers to one cluster.
type Lease struct {
	// HolderIdentity is the hub's identity.
	HolderIdentity string
	// DurationSeconds is leaseDurationSeconds, in seconds.
	DurationSeconds int32
	// AcquireTime is when the hub (this identity) first held the lease.
	AcquireTime metav1.MicroTime
	// RenewTime is the last renewal.
	RenewTime metav1.MicroTime
}

// ResyncWork renders the per-cluster ManifestWork v1alpha1.ResyncWorkName in
// namespace cluster: the namespace v1alpha1.ResyncLeaseNamespace (orphaned on
// deletion: fleetset-scheduler may live there) and the Lease
// v1alpha1.ResyncLeaseName holding l. Both are applied with server-side apply
// and force, so every renewTime the hub writes reaches the member Lease.
func ResyncWork(cluster string, l Lease) (*workv1.ManifestWork, error) {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseNamespace},
	}
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: fleetv1.ResyncLeaseName, Namespace: fleetv1.ResyncLeaseNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(l.HolderIdentity),
			LeaseDurationSeconds: ptr.To(l.DurationSeconds),
			AcquireTime:          ptr.To(l.AcquireTime),
			RenewTime:            ptr.To(l.RenewTime),
		},
	}
	manifests, err := encode([]runtime.Object{ns, lease})
	if err != nil {
		return nil, err
	}
	w := &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fleetv1.ResyncWorkName,
			Namespace: cluster,
			Labels: map[string]string{
				fleetv1.LabelManagedBy: fleetv1.ManagedByHub,
				fleetv1.LabelResync:    "true",
			},
		},
		Spec: workv1.ManifestWorkSpec{
			Workload:     workv1.ManifestsTemplate{Manifests: manifests},
			DeleteOption: orphanNamespace(fleetv1.ResyncLeaseNamespace),
			ManifestConfigs: []workv1.ManifestConfigOption{
				applyConfig("", "namespaces", "", fleetv1.ResyncLeaseNamespace),
				applyConfig("coordination.k8s.io", "leases", fleetv1.ResyncLeaseNamespace, fleetv1.ResyncLeaseName),
			},
		},
	}
	if err := stampHash(w); err != nil {
		return nil, err
	}
	return w, nil
}

// LeaseOf returns the resync Lease a ManifestWork carries. It returns an error
// if the work holds no Lease manifest or the Lease cannot be decoded, or its
// holderIdentity, leaseDurationSeconds, acquireTime or renewTime is unset.
func LeaseOf(w *workv1.ManifestWork) (Lease, error) {
	for i, m := range w.Spec.Workload.Manifests {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &tm); err != nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		}
		if tm.Kind != "Lease" {
			continue
		}
		var l coordinationv1.Lease
		if err := json.Unmarshal(m.Raw, &l); err != nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		}
		s := l.Spec
		if s.HolderIdentity == nil || s.LeaseDurationSeconds == nil || s.AcquireTime == nil || s.RenewTime == nil {
			return Lease{}, fmt.Errorf("spec.workload.manifests[%d]: lease spec is incomplete", i)
		}
		return Lease{HolderIdentity: *s.HolderIdentity, DurationSeconds: *s.LeaseDurationSeconds, AcquireTime: *s.AcquireTime, RenewTime: *s.RenewTime}, nil
	}
	return Lease{}, fmt.Errorf("spec.workload.manifests: no Lease")
}

// StatefulSetFeedback is what the work agent reported of one StatefulSet.
type StatefulSetFeedback struct {
	Replicas          int32
	ReadyReplicas     int32
	UpdatedReplicas   int32
	AvailableReplicas int32
	CurrentRevision   string
	UpdateRevision    string
	// FleetRevision is the StatefulSet's fleetset.io/revision annotation.
	FleetRevision string
	// Generation and ObservedGeneration are the StatefulSet's
	// metadata.generation and status.observedGeneration.
	Generation, ObservedGeneration int64
}

// Current reports whether the fed-back status is of the StatefulSet's
// current spec: observedGeneration = generation, both reported.
func (f StatefulSetFeedback) Current() bool {
	return f.Generation > 0 && f.ObservedGeneration == f.Generation
}

// Feedback returns, by StatefulSet name, the statusFeedback values the work
// agent wrote into w.status.resourceStatus.manifests[]. StatefulSets with no
// value reported are absent; values of the wrong type are ignored.
func Feedback(w *workv1.ManifestWork) map[string]StatefulSetFeedback {
	out := map[string]StatefulSetFeedback{}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Kind != "StatefulSet" || m.ResourceMeta.Group != "apps" || len(m.StatusFeedbacks.Values) == 0 {
			continue
		}
		var f StatefulSetFeedback
		for _, v := range m.StatusFeedbacks.Values {
			i := func(p *int32) {
				if v.Value.Integer != nil {
					*p = int32(*v.Value.Integer)
				}
			}
			s := func(p *string) {
				if v.Value.String != nil {
					*p = *v.Value.String
				}
			}
			switch v.Name {
			case FeedbackReplicas:
				i(&f.Replicas)
			case FeedbackReadyReplicas:
				i(&f.ReadyReplicas)
			case FeedbackUpdatedReplicas:
				i(&f.UpdatedReplicas)
			case FeedbackAvailableReplicas:
				i(&f.AvailableReplicas)
			case FeedbackCurrentRevision:
				s(&f.CurrentRevision)
			case FeedbackUpdateRevision:
				s(&f.UpdateRevision)
			case FeedbackFleetRevision:
				s(&f.FleetRevision)
			case FeedbackGeneration:
				if v.Value.Integer != nil {
					f.Generation = *v.Value.Integer
				}
			case FeedbackObservedGeneration:
				if v.Value.Integer != nil {
					f.ObservedGeneration = *v.Value.Integer
				}
			}
		}
		out[m.ResourceMeta.Name] = f
	}
	return out
}

// OrdinalStarts returns the subset → ordinalStart record of a FleetSet's
// ManifestWork (annotation v1alpha1.AnnotationOrdinalStarts); malformed
// entries are skipped.
func OrdinalStarts(w *workv1.ManifestWork) map[string]int32 {
	out := map[string]int32{}
	for _, kv := range strings.Split(w.Annotations[fleetv1.AnnotationOrdinalStarts], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			continue
		}
		out[k] = int32(n)
	}
	return out
}

// UpToDate reports whether existing already holds what desired renders: the
// same spec hash, labels and annotations the hub sets. The hub rewrites a
// ManifestWork only when this is false.
func UpToDate(existing, desired *workv1.ManifestWork) bool {
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if existing.Annotations[k] != v {
			return false
		}
	}
	return true
}

// stampHash sets AnnotationSpecHash to a hash of w's spec.
func stampHash(w *workv1.ManifestWork) error {
	b, err := json.Marshal(w.Spec)
	if err != nil {
		return fmt.Errorf("encoding work spec: %w", err)
	}
	sum := sha256.Sum256(b)
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[fleetv1.AnnotationSpecHash] = hex.EncodeToString(sum[:])[:16]
	return nil
}

// encode turns objects into manifests: each converted to unstructured by
// apimachinery's converter, without status and without the null
// creationTimestamps typed objects carry (the fields OCM sdk-go's
// ManifestWorkEqual also drops), encoded with sorted keys as the apiserver
// returns them.
func encode(objs []runtime.Object) ([]workv1.Manifest, error) {
	out := make([]workv1.Manifest, 0, len(objs))
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", o, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		if claims, ok, _ := unstructured.NestedSlice(u.Object, "spec", "volumeClaimTemplates"); ok {
			for i := range claims {
				if c, ok := claims[i].(map[string]any); ok {
					unstructured.RemoveNestedField(c, "status")
					unstructured.RemoveNestedField(c, "metadata", "creationTimestamp")
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, claims, "spec", "volumeClaimTemplates"); err != nil {
				return nil, fmt.Errorf("encoding %T: %w", o, err)
			}
		}
		b, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", o, err)
		}
		out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}})
	}
	return out, nil
}

// orphanNamespace returns the delete option of a ManifestWork that carries
// the namespace ns: deleting the work deletes its other manifests but leaves
// the namespace, which other works or users may still hold objects in.
func orphanNamespace(ns string) *workv1.DeleteOption {
	return &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
			{Group: "", Resource: "namespaces", Name: ns},
		}},
	}
}
