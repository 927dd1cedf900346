package v1alpha1

import "k8s.io/apimachinery/pkg/util/intstr"

// DomainShare is one domain (a value of the topology key) and its share of
// a subset's or a SubsetPlacement's instances.
//
// FleetSet spec.topology.subsets[].domains and SubsetPlacement spec.domains
// share this type and its division (package internal/apportion).
type DomainShare struct {
	// Name is the value of the topology key on the domain's nodes, e.g. "zone-a".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="name must be a valid label value (alphanumerics, '-', '_', '.', starting and ending alphanumeric)"
	Name string `json:"name"`

	// Replicas is the domain's share of the subset's (or placement's)
	// instances: an integer number of replicas (exact), or a percent such as
	// "60%" of what the integers leave; unset, an even share of what the
	// percents leave. Instance k (ordinal ordinalStart+k) goes to the domain
	// that receives seat k of the shares' seat sequence, so the first n
	// instances always hold the division of n.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) in [int] ? self >= 0 : self in {'0%':0,'1%':1,'2%':2,'3%':3,'4%':4,'5%':5,'6%':6,'7%':7,'8%':8,'9%':9,'10%':10,'11%':11,'12%':12,'13%':13,'14%':14,'15%':15,'16%':16,'17%':17,'18%':18,'19%':19,'20%':20,'21%':21,'22%':22,'23%':23,'24%':24,'25%':25,'26%':26,'27%':27,'28%':28,'29%':29,'30%':30,'31%':31,'32%':32,'33%':33,'34%':34,'35%':35,'36%':36,'37%':37,'38%':38,'39%':39,'40%':40,'41%':41,'42%':42,'43%':43,'44%':44,'45%':45,'46%':46,'47%':47,'48%':48,'49%':49,'50%':50,'51%':51,'52%':52,'53%':53,'54%':54,'55%':55,'56%':56,'57%':57,'58%':58,'59%':59,'60%':60,'61%':61,'62%':62,'63%':63,'64%':64,'65%':65,'66%':66,'67%':67,'68%':68,'69%':69,'70%':70,'71%':71,'72%':72,'73%':73,'74%':74,'75%':75,'76%':76,'77%':77,'78%':78,'79%':79,'80%':80,'81%':81,'82%':82,'83%':83,'84%':84,'85%':85,'86%':86,'87%':87,'88%':88,'89%':89,'90%':90,'91%':91,'92%':92,'93%':93,'94%':94,'95%':95,'96%':96,'97%':97,'98%':98,'99%':99,'100%':100}",message="replicas must be a non-negative integer or a percent between 0% and 100%"
	// +optional
	Replicas *intstr.IntOrString `json:"replicas,omitempty"`
}
