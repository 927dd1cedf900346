package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WhenUnsatisfiable says what fleetset-scheduler does when a pod cannot be
// placed in the domain its ordinal maps to.
// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
type WhenUnsatisfiable string

const (
	// DoNotSchedule keeps the pod Pending until a node in its ordinal's domain
	// fits. This is what keeps a re-created pod next to its zonal volume.
	DoNotSchedule WhenUnsatisfiable = "DoNotSchedule"
	// ScheduleAnyway lets the pod land in any of the placement's domains,
	// preferring its ordinal's domain when scoring.
	ScheduleAnyway WhenUnsatisfiable = "ScheduleAnyway"
)

// SubsetPlacementSpec is the placement of one StatefulSet's pods over the
// domains of one cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.domains) || self.domains.filter(d, has(d.replicas) && type(d.replicas) in [string] && d.replicas in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}).map(d, {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}[d.replicas]).sum() <= 100",message="domains: explicit percents must not sum over 100%"
type SubsetPlacementSpec struct {
	// TopologyKey is the node label whose values name the domains.
	// +kubebuilder:default="topology.kubernetes.io/zone"
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="topologyKey must be a qualified label key such as topology.kubernetes.io/zone"
	// +kubebuilder:validation:XValidation:rule="self.indexOf('/') <= 253",message="topologyKey must be a qualified label key: its prefix must be at most 253 characters"
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`

	// Domains are the domains pods may land in and their shares. Names are
	// unique; the order does not matter (domains are taken by name). Empty:
	// pods are not pinned to domains, only spread over the values of
	// topologyKey on the cluster's nodes.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Domains []DomainShare `json:"domains,omitempty"`

	// NodeSelector further restricts the nodes pods may use; it is ANDed with
	// the domains. Same semantics as a required node affinity.
	// +optional
	NodeSelector *corev1.NodeSelector `json:"nodeSelector,omitempty"`

	// OrdinalStart is the first ordinal of the StatefulSet (its
	// spec.ordinals.start); the pod with ordinal OrdinalStart+k is offset k.
	// +kubebuilder:validation:Minimum=0
	// +optional
	OrdinalStart int32 `json:"ordinalStart,omitempty"`

	// OrdinalBlockSize bounds the placement's ordinals to the block
	// [ordinalStart, ordinalStart+ordinalBlockSize), as the FleetSet's
	// spec.topology.ordinalBlockSize bounds its subset (the hub copies it).
	// A pod whose ordinal lies outside stays Pending, and the scheduler's
	// ordinal map of the placement never grows past the block, whatever
	// ordinals pods claim. Default 1000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	OrdinalBlockSize int32 `json:"ordinalBlockSize,omitempty"`

	// Fencing, when set, makes the member's fleetset component fence the
	// placement's pods when the member is cut off from the hub (see the
	// contract in api/v1alpha1/member.go): while fenced the pods are not
	// scheduled, and running ones are deleted after graceSeconds; their PVCs
	// are kept. A silent hub never fences. The hub sets it for FleetSets with
	// failover policy Relocate.
	// +optional
	Fencing *PlacementFencing `json:"fencing,omitempty"`

	// WhenUnsatisfiable says whether a pod must land in its ordinal's domain
	// (DoNotSchedule) or only prefers it (ScheduleAnyway). Without domains
	// there is no ordinal domain and pods are only spread.
	// +kubebuilder:default=DoNotSchedule
	// +optional
	WhenUnsatisfiable WhenUnsatisfiable `json:"whenUnsatisfiable,omitempty"`

	// Cluster is the ManagedCluster the hub delivered this placement to (the
	// subset's cluster now: its home or a fallback). fleetset-scheduler
	// labels every pod it binds fleetset.io/cluster with it.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// ClaimStorage is the storage request of each volume claim template of
	// the StatefulSet this placement belongs to (same name), as the FleetSet
	// asks now. When it is larger than the StatefulSet's own claim template
	// (which a StatefulSet cannot change), fleetset-scheduler's member
	// component expands the StatefulSet's existing claims to it, where their
	// StorageClass allows expansion, and then deletes the StatefulSet with
	// propagationPolicy Orphan (its pods keep running), so that the work
	// agent creates it anew with the larger claim template and it adopts
	// the pods.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ClaimStorage []ClaimStorage `json:"claimStorage,omitempty"`

	// Roles are the FleetSet's roles and role probe, for the member
	// component; nil: the FleetSet has no roles.
	// +optional
	Roles *PlacementRoles `json:"roles,omitempty"`

	// Update is the hub's instruction for a role-ordered rollout (roles.go):
	// set only when the FleetSet has roles and rolls out with RollingUpdate,
	// its StatefulSet then having updateStrategy OnDelete.
	// +optional
	Update *PlacementUpdate `json:"update,omitempty"`

	// Actions are the FleetSet's lifecycle actions and the hub's
	// instructions about them (lifecycle.go); nil: the FleetSet has none.
	// +optional
	Actions *PlacementActions `json:"actions,omitempty"`
}

// PlacementFencing is how a placement's pods are fenced when the member is
// cut off from the hub.
type PlacementFencing struct {
	// GraceSeconds is how long, in seconds, running pods may keep running
	// after the member fenced itself. Default 0. Always serialized, 0
	// included: a fencing with no field set would be {}, which server-side
	// apply stores as null over a fencing another apply set (the schema
	// refuses null), so a grace lowered to 0 would never reach the member.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	GraceSeconds int32 `json:"graceSeconds"`

	// Epoch is the subset's fencing epoch (FleetSet
	// status.subsets[].epoch) when the hub delivered the placement: it grows
	// by one at every move of the subset to another cluster. A member that
	// fenced the placement at an epoch runs it again only when the hub
	// confirms that epoch or delivers a higher one.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
}

// SubsetPlacement is the input of fleetset-scheduler for one StatefulSet: the
// domains its pods may use and each domain's share of the instances. Pods
// select it with the label fleetset.io/placement=<name>. It is written by
// fleetset-hub, or by hand in a single cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="LEADERS",type=string,JSONPath=`.status.leaders`,priority=1
// +kubebuilder:resource:shortName=splace,categories=fleet
// +kubebuilder:printcolumn:name="TOPOLOGY-KEY",type=string,JSONPath=`.spec.topologyKey`
// +kubebuilder:printcolumn:name="DOMAINS",type=string,JSONPath=`.spec.domains[*].name`
// +kubebuilder:printcolumn:name="SHARES",type=string,JSONPath=`.spec.domains[*].replicas`,priority=1
// +kubebuilder:printcolumn:name="ORDINAL-START",type=integer,JSONPath=`.spec.ordinalStart`
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.spec.whenUnsatisfiable`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type SubsetPlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SubsetPlacementSpec `json:"spec"`
	// Status is written by the member component (roles).
	// +optional
	Status SubsetPlacementStatus `json:"status,omitempty"`
}

// SubsetPlacementList is a list of SubsetPlacements.
// +kubebuilder:object:root=true
type SubsetPlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SubsetPlacement `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SubsetPlacement{}, &SubsetPlacementList{})
}

// ClaimStorage is the storage request of one volume claim template.
type ClaimStorage struct {
	// Name of the volume claim template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Storage is its spec.resources.requests.storage.
	Storage resource.Quantity `json:"storage"`
}
