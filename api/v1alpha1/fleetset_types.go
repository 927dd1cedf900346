package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The percent rules spell out the map {'0%':0, …, '100%':100} in every CEL
// expression that needs it (nine copies: six in this file's four rules,
// two in the one rule of subsetplacement_types.go, one in domains.go): an
// int-or-string field cannot be parsed with
// string functions within the apiserver's CEL cost budget, a map lookup has
// constant cost, and CEL has no shared definitions. Keep the copies equal.

// Subset is one slice of a FleetSet: one StatefulSet in one member cluster.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassNames) == has(oldSelf.storageClassNames) && (!has(self.storageClassNames) || self.storageClassNames == oldSelf.storageClassNames)",message="storageClassNames is immutable: a StatefulSet's volume claim templates cannot change (remove the subset and add a new one)"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.domains) || self.domains.filter(d, has(d.replicas) && type(d.replicas) in [string] && d.replicas in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}).map(d, {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}[d.replicas]).sum() <= 100",message="domains: explicit percents must not sum over 100%"
type Subset struct {
	// Name identifies the subset; the StatefulSet is named <fleetset>-<name>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="name must be a DNS label (lower-case alphanumerics and '-')"
	Name string `json:"name"`

	// Cluster is the name of the ManagedCluster that runs the subset.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Cluster string `json:"cluster"`

	// Replicas is the subset's share of the FleetSet: an integer number of
	// replicas or a percent of spec.replicas such as "60%". Unset: an even
	// share of what the other subsets leave.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] ? self >= 0 : self in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}",message="replicas must be a non-negative integer or a percent between 0% and 100%"
	// +optional
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`

	// MinReplicas is the fewest replicas division gives this subset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas division gives this subset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Domains are the domains of the member cluster the subset's instances
	// are spread over. Empty: the subset is not restricted to domains and
	// fleetset-scheduler only spreads it.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Domains []DomainShare `json:"domains,omitempty"`

	// NodeSelector further restricts the subset's nodes, ANDed with the domains.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// FallbackClusters are the ManagedClusters the subset may be relocated
	// to when its cluster is lost (spec.failover.policy Relocate), in order
	// of preference. Default: the clusters of the other subsets, fewest
	// replicas first.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	FallbackClusters []string `json:"fallbackClusters,omitempty"`

	// ImageRegistryRewrites rewrite the registry prefix of every container
	// and init container image of this subset (a private mirror), the first
	// matching entry winning. See overrides.go for the order in which the
	// overrides apply.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ImageRegistryRewrites []ImageRegistryRewrite `json:"imageRegistryRewrites,omitempty"`

	// ContainerResources override containers' resources in this subset.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	ContainerResources []ContainerResources `json:"containerResources,omitempty"`

	// Tolerations are appended to the template's tolerations in this subset.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// StorageClassNames give volume claim templates another StorageClass in
	// this subset. Immutable once the subset exists, as a StatefulSet's
	// claim templates are.
	// +listType=map
	// +listMapKey=claim
	// +kubebuilder:validation:MaxItems=16
	// +optional
	StorageClassNames []ClaimStorageClass `json:"storageClassNames,omitempty"`

	// Patch is a strategic merge patch (kubectl patch --type strategic) of
	// the pod template, applied after every other override of this subset,
	// as OpenKruise UnitedDeployment's subset patch is. Its result must be a
	// valid pod template; the hub applies it before delivering anything and
	// reports a patch that fails (Degraded InvalidSpec naming the subset).
	// schedulerName and the fleetset.io/ labels stay fleetset's.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Patch *runtime.RawExtension `json:"patch,omitempty"`
}

// FleetTopology says how a FleetSet is divided over member clusters and domains.
// +kubebuilder:validation:XValidation:rule="self.subsets.filter(s, has(s.replicas) && type(s.replicas) in [string] && s.replicas in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}).map(s, {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}[s.replicas]).sum() <= 100",message="subsets: explicit percents must not sum over 100%"
// +kubebuilder:validation:XValidation:rule="(has(self.subsets) && size(self.subsets) > 0) != has(self.placementRef)",message="topology: set exactly one of subsets and placementRef"
type FleetTopology struct {
	// TopologyKey is the node label whose values name the domains in every
	// member cluster.
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.indexOf('/') <= 253",message="topologyKey must be a qualified label key: its prefix must be at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="topologyKey must be a qualified label key such as topology.kubernetes.io/zone"
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`

	// OrdinalBlockSize is how many ordinals each subset reserves: subset slot s
	// owns ordinals [s*OrdinalBlockSize, (s+1)*OrdinalBlockSize). A subset never
	// holds more replicas than this.
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ordinalBlockSize is immutable: changing it would renumber instances"
	// +optional
	OrdinalBlockSize int32 `json:"ordinalBlockSize,omitempty"`

	// Subsets are the slices of the FleetSet, one per member cluster (a
	// cluster may host several). Names are unique. Empty (the default) when
	// PlacementRef chooses the clusters.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:default={}
	// +optional
	Subsets []Subset `json:"subsets"`

	// PlacementRef chooses the clusters through an OCM Placement in the
	// FleetSet's namespace instead of Subsets: each cluster the Placement
	// decides becomes a subset named after it (shares from Shares, else
	// even). Subsets are sticky: a subset whose cluster leaves the
	// decisions (a NoSelect taint, a changed predicate) keeps its name and
	// ordinal block and moves, two-phase (removed first, then delivered with
	// epoch + 1), to the decided cluster hosting the fewest subsets; it
	// returns when its cluster is decided again. The other decided clusters
	// are each subset's fallbackClusters.
	// +optional
	PlacementRef *PlacementRef `json:"placementRef,omitempty"`

	// CordonedClusters are member clusters this FleetSet puts no new
	// instance on (see cordon.go): `kubectl fleetset cordon`.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	CordonedClusters []string `json:"cordonedClusters,omitempty"`
}

// PlacementRef names an OCM Placement (cluster.open-cluster-management.io/
// v1beta1) and the shares of the clusters it decides.
type PlacementRef struct {
	// Name of the Placement, in the FleetSet's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Shares gives decided clusters a share of spec.replicas: an int or a
	// percent, as subsets[].replicas; clusters not listed share the rest
	// evenly.
	// +listType=map
	// +listMapKey=cluster
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Shares []ClusterShare `json:"shares,omitempty"`
}

// ClusterShare is one decided cluster's share of a placement-chosen
// FleetSet.
type ClusterShare struct {
	// Cluster is a ManagedCluster name (its subset's name).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`
	// Replicas: an integer number of replicas or a percent such as "50%".
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] ? self >= 0 : self in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}",message="replicas must be a non-negative integer or a percent between 0% and 100%"
	Replicas intstr.IntOrString `json:"replicas"`
}

// UpdateStrategyType names how a FleetSet rolls out a new template.
// +kubebuilder:validation:Enum=RollingUpdate;Manual
type UpdateStrategyType string

const (
	// RollingUpdateStrategyType: the hub rolls a new template (or a reverted
	// one: a rollback) over the fleet subset by subset, in fleet order,
	// computing each subset's StatefulSet partition from the fed-back status.
	RollingUpdateStrategyType UpdateStrategyType = "RollingUpdate"
	// ManualUpdateStrategyType forwards per-subset partitions to each subset's
	// StatefulSet (UnitedDeployment ManualUpdate semantics).
	ManualUpdateStrategyType UpdateStrategyType = "Manual"
)

// ManualUpdate holds the per-subset partitions.
type ManualUpdate struct {
	// Partitions maps a subset name to how many of its instances (the lowest
	// ordinals of its block) stay on the old revision; it is forwarded
	// unchanged to the subset's StatefulSet updateStrategy.rollingUpdate.partition,
	// which the StatefulSet controller counts from spec.ordinals.start.
	// Subsets not named here update fully.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Partitions map[string]int32 `json:"partitions,omitempty"`
}

// RollingUpdateFleetSet says how the hub rolls a new revision over the fleet.
// Fleet order is the subsets in subsetOrder, and inside a subset its ordinals
// from the highest down (the order the StatefulSet controller updates in).
type RollingUpdateFleetSet struct {
	// MaxUnavailable is the most instances, fleet-wide, that may be
	// unavailable while the rollout proceeds: an int, or a percent of
	// spec.replicas rounded down (at least 1). The hub lets a subset's
	// StatefulSet update its next instance only while the fleet stays within
	// it. Default 1.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="maxUnavailable must be an integer ≥ 1 or a percent between 1% and 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Partition is how many instances, counted from the end of fleet order,
	// stay on the old revision: the rollout stops after the first
	// spec.replicas − partition instances in fleet order. partition:
	// replicas − 1 updates exactly the first instance (a fleet-wide canary).
	// Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Partition int32 `json:"partition,omitempty"`

	// SubsetOrder names subsets in the order they are updated; subsets not
	// named follow in spec order. Default: spec order.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=30
	// +optional
	SubsetOrder []string `json:"subsetOrder,omitempty"`

	// MaxConcurrentSubsets is how many subsets may update at once. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +optional
	MaxConcurrentSubsets *int32 `json:"maxConcurrentSubsets,omitempty"`

	// Paused stops the rollout before the next instance; instances already
	// being replaced finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ProgressDeadlineSeconds is how long, in seconds, the rollout may make no
	// progress (no instance newly updated and available) before it is
	// reported RolloutBlocked. It keeps waiting; it never skips a subset.
	// Default 600.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// FleetSetUpdateStrategy says how a template change is rolled out.
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'Manual' || !has(self.rollingUpdate)",message="rollingUpdate: only with type RollingUpdate"
type FleetSetUpdateStrategy struct {
	// Type of the update strategy: RollingUpdate (default) or Manual.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`

	// RollingUpdate holds the parameters of the RollingUpdate strategy.
	// +optional
	RollingUpdate *RollingUpdateFleetSet `json:"rollingUpdate,omitempty"`

	// ManualUpdate holds the partitions of the Manual strategy.
	// +kubebuilder:validation:XValidation:rule="!has(self.partitions) || self.partitions.all(k, self.partitions[k] >= 0)",message="partitions must be non-negative"
	// +optional
	ManualUpdate *ManualUpdate `json:"manualUpdate,omitempty"`
}

// FailoverPolicy says what the hub does when a subset's cluster is lost.
// +kubebuilder:validation:Enum=None;Relocate
type FailoverPolicy string

const (
	// FailoverNone leaves a lost cluster's subsets where they are: the
	// FleetSet only reports them Degraded.
	FailoverNone FailoverPolicy = "None"
	// FailoverRelocate moves a lost cluster's subsets, with their identities
	// (StatefulSet name, ordinal block, replicas), to a fallback cluster once
	// the lost cluster is fenced: its resync lease has certainly expired.
	FailoverRelocate FailoverPolicy = "Relocate"
)

// FailbackPolicy says when relocated subsets go home.
// +kubebuilder:validation:Enum=Manual;Automatic
type FailbackPolicy string

const (
	// FailbackManual: relocated subsets go home when the FleetSet is
	// annotated fleetset.io/failback (any value), the home cluster being
	// Available.
	FailbackManual FailbackPolicy = "Manual"
	// FailbackAutomatic: relocated subsets go home once their home cluster
	// has been Available for tolerationSeconds.
	FailbackAutomatic FailbackPolicy = "Automatic"
)

// Failover says how the hub reacts to a lost member cluster.
type Failover struct {
	// Policy: None (default) or Relocate.
	// +kubebuilder:default=None
	// +optional
	Policy FailoverPolicy `json:"policy,omitempty"`

	// TolerationSeconds is how long, in seconds, a ManagedCluster may be
	// unavailable before its subsets are relocated (and, with failback
	// Automatic, how long a home cluster must be Available again before they
	// return). Default 300.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`

	// Failback: Manual (default) or Automatic.
	// +kubebuilder:default=Manual
	// +optional
	Failback FailbackPolicy `json:"failback,omitempty"`

	// FenceGraceSeconds is how long, in seconds, a member cluster keeps
	// running this FleetSet's pods after its resync lease expired, before
	// fleetset-scheduler deletes them (their PVCs are kept). Default 0.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	FenceGraceSeconds int32 `json:"fenceGraceSeconds,omitempty"`
}

// FleetSetSpec is the desired state of a FleetSet.
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || !has(self.failover.policy) || self.failover.policy != 'Relocate' || !has(self.persistentVolumeClaimRetentionPolicy) || !has(self.persistentVolumeClaimRetentionPolicy.whenDeleted) || self.persistentVolumeClaimRetentionPolicy.whenDeleted != 'Delete'",message="failover.policy Relocate needs persistentVolumeClaimRetentionPolicy.whenDeleted Retain: relocation removes a lost cluster's StatefulSets and must never delete their volumes"
// +kubebuilder:validation:XValidation:rule="!has(self.roleProbe) || has(self.roles)",message="roleProbe needs roles"
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycleActions) || !has(self.lifecycleActions.roleProbe) || (has(self.roles) && !has(self.roleProbe))",message="lifecycleActions.roleProbe needs roles and excludes roleProbe"
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycleActions) || !has(self.lifecycleActions.switchover) || has(self.roles)",message="lifecycleActions.switchover needs roles"
// +kubebuilder:validation:XValidation:rule="!has(self.roleServices) || (has(self.roles) && self.roleServices.all(s, !has(s.role) || self.roles.exists(r, r.name == s.role)))",message="roleServices[].role must name one of roles"
// +kubebuilder:validation:XValidation:rule="has(self.serviceName) == has(oldSelf.serviceName) && (!has(self.serviceName) || self.serviceName == oldSelf.serviceName)",message="serviceName is immutable, as it is on a StatefulSet: create a new FleetSet to change it"
// +kubebuilder:validation:XValidation:rule="has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || (self.volumeClaimTemplates.map(c, c.metadata.name) == oldSelf.volumeClaimTemplates.map(c, c.metadata.name) && self.volumeClaimTemplates.map(c, c.spec.?storageClassName.orValue('-')) == oldSelf.volumeClaimTemplates.map(c, c.spec.?storageClassName.orValue('-')) && self.volumeClaimTemplates.map(c, c.spec.?volumeMode.orValue('-')) == oldSelf.volumeClaimTemplates.map(c, c.spec.?volumeMode.orValue('-')) && self.volumeClaimTemplates.map(c, c.spec.?accessModes.orValue([])) == oldSelf.volumeClaimTemplates.map(c, c.spec.?accessModes.orValue([])) && self.volumeClaimTemplates.map(c, c.spec.?resources.?requests.?storage.hasValue()) == oldSelf.volumeClaimTemplates.map(c, c.spec.?resources.?requests.?storage.hasValue())))",message="volumeClaimTemplates: only a claim template's spec.resources.requests.storage may change, and only grow (the claims are expanded); names, access modes, volume mode and storage class are immutable, as on a StatefulSet"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeClaimTemplates) ? self.topology.subsets.all(s, !has(s.storageClassNames)) : self.topology.subsets.all(s, !has(s.storageClassNames) || s.storageClassNames.all(c, self.volumeClaimTemplates.exists(v, v.metadata.name == c.claim)))",message="topology.subsets[].storageClassNames: every claim must name an entry of volumeClaimTemplates"
// +kubebuilder:validation:XValidation:rule="has(self.podManagementPolicy) == has(oldSelf.podManagementPolicy) && (!has(self.podManagementPolicy) || self.podManagementPolicy == oldSelf.podManagementPolicy)",message="podManagementPolicy is immutable, as it is on a StatefulSet"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.rollingUpdate) || !has(self.updateStrategy.rollingUpdate.subsetOrder) || self.updateStrategy.rollingUpdate.subsetOrder.all(n, self.topology.subsets.exists(s, s.name == n))",message="updateStrategy.rollingUpdate.subsetOrder: every entry must name a subset in topology.subsets"
// +kubebuilder:validation:XValidation:rule="!has(self.updateStrategy) || !has(self.updateStrategy.manualUpdate) || !has(self.updateStrategy.manualUpdate.partitions) || self.updateStrategy.manualUpdate.partitions.all(k, self.topology.subsets.exists(s, s.name == k))",message="updateStrategy.manualUpdate.partitions: every key must name a subset in topology.subsets"
// +kubebuilder:validation:XValidation:rule="self.topology.subsets.filter(s, has(s.replicas) && type(s.replicas) in [int]).map(s, int(s.replicas)).sum() <= self.replicas",message="topology.subsets: explicit integer replicas must not sum over spec.replicas"
type FleetSetSpec struct {
	// Replicas is the number of instances over the whole fleet.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	// +optional
	Replicas int32 `json:"replicas"`

	// Selector selects the pods of every subset; it must match the template's
	// labels. It is immutable, as a StatefulSet's selector is.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	Selector *metav1.LabelSelector `json:"selector"`

	// ServiceName is the headless Service governing each subset's StatefulSet;
	// the hub delivers one per member cluster. Default: the FleetSet's name.
	// Immutable, as it is on a StatefulSet.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// Template is the pod template of every subset's StatefulSet.
	// spec.nodeName is refused: fleetset-scheduler places every pod.
	// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.nodeName)",message="spec.template.spec.nodeName must not be set: fleetset-scheduler places every pod (a pod bound by nodeName skips its domain and its fencing gate)"
	Template corev1.PodTemplateSpec `json:"template"`

	// VolumeClaimTemplates are copied to every subset's StatefulSet (with
	// the subset's storageClassNames). Only a claim template's storage
	// request may change, and only grow: fleetset-scheduler's member
	// component then expands the subset's existing claims and replaces its
	// StatefulSet without touching its pods (docs/hub.md#day-2-changes).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// PersistentVolumeClaimRetentionPolicy is copied to every subset's StatefulSet.
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// Topology divides the replicas over member clusters and their domains.
	Topology FleetTopology `json:"topology"`

	// UpdateStrategy says how a template change is rolled out.
	// +optional
	UpdateStrategy FleetSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// PodManagementPolicy is forwarded to every subset's StatefulSet.
	// Default Parallel: a pod held Pending in a full domain must not block
	// the other domains' instances, as OrderedReady would. Immutable, as it
	// is on a StatefulSet.
	// +kubebuilder:validation:Enum=OrderedReady;Parallel
	// +optional
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`

	// MinReadySeconds is forwarded to every subset's StatefulSet: seconds a
	// new pod must be ready before it counts as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is forwarded to every subset's StatefulSet.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Failover says how the hub reacts to a lost member cluster. Default:
	// policy None.
	// +optional
	Failover *Failover `json:"failover,omitempty"`

	// PodSecurityLevel (privileged, baseline or restricted) may tighten the
	// Pod Security level the platform team allows in the FleetSet's hub
	// namespace (its label fleetset.io/pod-security-level, default
	// baseline), never raise it: a more permissive level is refused at
	// admission (manifests/hub/admission.yaml) and by the hub (Degraded
	// InvalidSpec naming this field; nothing is delivered). The effective
	// level (this one when set, else the namespace's) is enforced on the
	// namespace the hub creates in every member cluster (label
	// pod-security.kubernetes.io/enforce), and spec.template is checked
	// against it before anything is delivered: a template it forbids is
	// refused on the hub (Degraded, naming the container and setting).
	// Unset: the namespace's level.
	// +kubebuilder:validation:Enum=privileged;baseline;restricted
	// +optional
	PodSecurityLevel PodSecurityLevel `json:"podSecurityLevel,omitempty"`

	// DeletionPolicy says what happens to the member StatefulSets (and so
	// their PersistentVolumeClaims and running pods) when the FleetSet is
	// deleted: Retain orphans them, untouched, in every member cluster (OCM's
	// Orphan delete option); Delete removes them. Default: Retain when
	// volumeClaimTemplates are set (data is kept), else Delete. Relocation
	// and moves still remove a subset's StatefulSet from the cluster it
	// leaves (its PersistentVolumeClaims stay, whenDeleted Retain).
	// +kubebuilder:validation:Enum=Retain;Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Dependencies says whether the ConfigMaps and Secrets the template
	// references are delivered with the workload: Auto (default) or None.
	// +optional
	Dependencies DependenciesPolicy `json:"dependencies,omitempty"`

	// DisruptionBudget is the fleet-wide budget of evictions, rendered as
	// one PodDisruptionBudget per subset. Unset: none is rendered.
	// +optional
	DisruptionBudget *DisruptionBudget `json:"disruptionBudget,omitempty"`

	// Roles are the roles an instance may hold (roles.go): at most one
	// leader role. Unset: the instances are equal.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.filter(r, has(r.isLeader) && r.isLeader).size() <= 1",message="at most one role may be the leader"
	// +optional
	Roles []Role `json:"roles,omitempty"`

	// RoleProbe is how fleetset's member component learns each instance's
	// role; unset, the workload labels its pods fleetset.io/role itself.
	// +optional
	RoleProbe *RoleProbe `json:"roleProbe,omitempty"`

	// RoleServices are Services rendered in every member cluster, each
	// selecting that cluster's instances of one role or access mode.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	RoleServices []RoleService `json:"roleServices,omitempty"`

	// Switchover is how a role-ordered rollout asks the leader to hand its
	// role over before it is updated (roles.go). Default: policy
	// BestEffort, 60 seconds.
	// +optional
	Switchover *Switchover `json:"switchover,omitempty"`

	// LifecycleActions are the commands or HTTP calls fleetset's member
	// component runs for the workload at its lifecycle steps (lifecycle.go,
	// docs/lifecycle-actions.md). Unset: none.
	// +optional
	LifecycleActions *LifecycleActions `json:"lifecycleActions,omitempty"`

	// Network says how the instances are named beyond fleet DNS (see
	// FleetNetwork). Nil: fleet DNS only.
	// +optional
	Network *FleetNetwork `json:"network,omitempty"`
}

// PodSecurityLevel is a Pod Security Standards level.
type PodSecurityLevel string

const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// DeletionPolicy says what deleting a FleetSet does to its member objects.
type DeletionPolicy string

const (
	// DeletionRetain orphans the member StatefulSets: they, their pods and
	// their PersistentVolumeClaims stay.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete removes the member StatefulSets (their
	// PersistentVolumeClaims follow persistentVolumeClaimRetentionPolicy).
	DeletionDelete DeletionPolicy = "Delete"
)

// SubsetStatus is the observed state of one subset.
type SubsetStatus struct {
	// Name of the subset.
	Name string `json:"name"`
	// Cluster is the ManagedCluster hosting the subset now: its spec
	// cluster, or a fallback cluster after a relocation.
	Cluster string `json:"cluster"`
	// OrdinalStart is the first ordinal of the subset's block; assigned once
	// and never changed while the subset exists.
	OrdinalStart int32 `json:"ordinalStart"`
	// Replicas is the desired replicas division gave the subset.
	Replicas int32 `json:"replicas"`
	// Partition is the partition forwarded to the subset's StatefulSet.
	// +optional
	Partition int32 `json:"partition,omitempty"`
	// Domains are the per-domain desired replicas given to the subset's
	// SubsetPlacement, in spec order. Atomic: only the hub writes status
	// (see Subsets).
	// +listType=atomic
	// +optional
	Domains []DomainStatus `json:"domains,omitempty"`
	// ObservedReplicas is the member StatefulSet's status.replicas.
	// +optional
	ObservedReplicas int32 `json:"observedReplicas,omitempty"`
	// ReadyReplicas is the member StatefulSet's status.readyReplicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas is the member StatefulSet's status.availableReplicas.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// UpdatedReplicas is the member StatefulSet's status.updatedReplicas.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// CurrentRevision is the member StatefulSet's status.currentRevision.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the member StatefulSet's status.updateRevision.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// Revision is the subset revision the hub delivers: a hash of the
	// subset's pod template and claim templates after its overrides, and of
	// the dependencies delivered with it.
	// +optional
	Revision string `json:"revision,omitempty"`
	// FleetRevision is the subset revision (Revision) whose template the
	// member StatefulSet last reported running with.
	// +optional
	FleetRevision string `json:"fleetRevision,omitempty"`
	// Epoch is the subset's fencing epoch: it grows by one at every move of
	// the subset to another cluster (relocation or failback), for in-cluster
	// actors to compare (see the fleet view ConfigMap).
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// Failover is where the subset is in a move: FailingOver (waiting for
	// the lost cluster to be fenced), FailedOver (running on a fallback
	// cluster), FailingBack (being removed from the fallback cluster before
	// it is delivered home), Moving (its spec cluster was edited: being
	// removed from the old cluster before it is delivered to the new one);
	// empty at home.
	// +optional
	Failover SubsetFailoverPhase `json:"failover,omitempty"`
	// Rollout is the subset's place in a RollingUpdate: Waiting (not its
	// turn), Updating, or Updated (every instance it must update is updated
	// and available).
	// +optional
	Rollout SubsetRolloutPhase `json:"rollout,omitempty"`
	// Claims, when set, says that the subset runs away from the claims its
	// instances were created with: relocated or moved, its instances run
	// on fresh claims in Cluster, and the claims they were created with
	// stay, never deleted by fleetset, in Claims.LeftIn. Unset: every
	// instance runs on the claims it was created with.
	// +optional
	Claims *SubsetClaims `json:"claims,omitempty"`
}

// SubsetClaims says where the claims a subset's instances were created
// with are, while the subset runs elsewhere.
type SubsetClaims struct {
	// LeftIn is the ManagedCluster holding them (the cluster the subset
	// first left).
	LeftIn string `json:"leftIn"`
	// Replicas is how many instances had claims there: the ordinals
	// [ordinalStart, ordinalStart+replicas) run on fresh claims; higher
	// ones were created where they run.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// SubsetFailoverPhase is a subset's place in a failover.
type SubsetFailoverPhase string

const (
	// SubsetFailingOver: the subset's cluster is lost; the subset moves once
	// the cluster's resync lease has certainly expired.
	SubsetFailingOver SubsetFailoverPhase = "FailingOver"
	// SubsetFailedOver: the subset runs on a fallback cluster
	// (status.subsets[].cluster).
	SubsetFailedOver SubsetFailoverPhase = "FailedOver"
	// SubsetFailingBack: the subset is being drained in the fallback
	// cluster (its StatefulSet there at replicas 0); it is delivered home
	// once that cluster feeds back that none of its pods is left.
	SubsetFailingBack SubsetFailoverPhase = "FailingBack"
	// SubsetMoving: spec.topology.subsets[].cluster was edited; the subset
	// is drained in its old cluster (status.subsets[].cluster) the same
	// way, then delivered to the new cluster with epoch + 1.
	SubsetMoving SubsetFailoverPhase = "Moving"
)

// SubsetRolloutPhase is a subset's place in a fleet rollout.
type SubsetRolloutPhase string

const (
	// SubsetWaiting: the subset's turn has not come; its partition holds
	// every instance on the old revision.
	SubsetWaiting SubsetRolloutPhase = "Waiting"
	// SubsetUpdating: the subset's StatefulSet is updating its instances.
	SubsetUpdating SubsetRolloutPhase = "Updating"
	// SubsetUpdated: every instance the subset must update is updated and
	// available.
	SubsetUpdated SubsetRolloutPhase = "Updated"
)

// DomainStatus is the desired replicas of one domain of a subset.
type DomainStatus struct {
	// Name of the domain.
	Name string `json:"name"`
	// Replicas division gave the domain.
	Replicas int32 `json:"replicas"`
}

// FleetSetStatus is the observed state of a FleetSet.
type FleetSetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the sum of the subsets' observed replicas.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the sum of the subsets' ready replicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the sum of the subsets' available replicas.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`
	// UpdatedReplicas is how many instances run the fleet's updateRevision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is how many instances run updateRevision and are
	// ready (a lower bound from the subsets' fed-back counts).
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
	// UpdateRevision is the fleet revision of the current spec: the
	// subsets' revision when they are all equal (a hash of spec.template
	// and spec.volumeClaimTemplates when no subset overrides them and
	// nothing is delivered with them), else a hash of every subset's.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the fleet revision every instance ran when the last
	// rollout completed; it becomes updateRevision when a rollout completes.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// RolloutProgressTime is when the rollout last made progress (an
	// instance newly updated and available), for progressDeadlineSeconds.
	// +optional
	RolloutProgressTime *metav1.Time `json:"rolloutProgressTime,omitempty"`
	// SubsetCount is the number of subsets (printer column).
	// +optional
	SubsetCount int32 `json:"subsetCount,omitempty"`
	// Selector is spec.selector in string form, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Switchover is the switchover a role-ordered rollout asked of the
	// leader, while it waits for the leader role to move.
	// +optional
	Switchover *SwitchoverStatus `json:"switchover,omitempty"`
	// RequestedSwitchover is the switchover an operator asked for with the
	// annotation fleetset.io/switchover-to, while the hub waits for the
	// leader role to move.
	// +optional
	RequestedSwitchover *RequestedSwitchoverStatus `json:"requestedSwitchover,omitempty"`
	// Leader is the instance holding the leader role (spec.roles), as the
	// members report it; unset when none or more than one does (Degraded
	// NoLeader or MultipleLeaders).
	// +optional
	Leader *LeaderStatus `json:"leader,omitempty"`
	// Subsets are the per-subset observations, in spec order, one per
	// subset name. The list is atomic: the hub is its only writer, so
	// per-field ownership would buy nothing, and it would cost every status
	// write: server-side field tracking of a 20-subset status took 6.8 KB of
	// managedFields, more than the status itself (docs/hub.md#delivery).
	// +listType=atomic
	// +optional
	Subsets []SubsetStatus `json:"subsets,omitempty"`
	// Conditions are Ready, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FleetSet runs one stateful workload as a single set of ordinal instances
// over several member clusters (ManagedClusters) and their domains.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=fs,categories=fleet
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="UPDATED",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="SUBSETS",type=integer,JSONPath=`.status.subsetCount`
// +kubebuilder:printcolumn:name="ROLLOUT",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].reason`
// +kubebuilder:printcolumn:name="DEGRADED",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="REVISION",type=string,JSONPath=`.status.updateRevision`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label of at most 40 characters: it prefixes StatefulSet, pod and ManifestWork names"
// +kubebuilder:validation:XValidation:rule="self.spec.topology.subsets.all(s, size(self.metadata.name) + size(s.name) <= 51)",message="spec.topology.subsets[].name: <fleetset>-<subset> must be at most 52 characters (a StatefulSet name)"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.topology.placementRef) || !has(self.spec.topology.placementRef.shares) || self.spec.topology.placementRef.shares.all(s, size(self.metadata.name) + size(s.cluster) <= 51)",message="spec.topology.placementRef.shares[].cluster: <fleetset>-<cluster> must be at most 52 characters (the StatefulSet name of the cluster's subset)"
type FleetSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FleetSetSpec   `json:"spec"`
	Status FleetSetStatus `json:"status,omitempty"`
}

// FleetSetList is a list of FleetSets.
// +kubebuilder:object:root=true
type FleetSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FleetSet{}, &FleetSetList{})
}
