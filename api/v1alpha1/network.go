package v1alpha1

// FleetNetwork is how a FleetSet's instances are named across clusters.
// Fleet DNS (fleetdns.go) is always on: <pod>.<serviceName>.<namespace>.svc
// resolves in every member to wherever the instance runs now. Export adds
// the Multi-Cluster Services API's names (KEP-1645), for clusters that run
// an MCS implementation.
type FleetNetwork struct {
	// Export also exports the governing Service through another API:
	// MultiClusterService delivers a ServiceExport
	// (multicluster.x-k8s.io/v1alpha1) of it to every member, so an MCS
	// implementation (Submariner Lighthouse, Cilium, GKE) serves
	// <pod>.<cluster>.<serviceName>.<namespace>.svc.clusterset.local: a
	// name that holds the cluster and so changes when the instance is
	// relocated. The members must serve the ServiceExport API, or the
	// works report ApplyFailed. None (default): no export.
	// +kubebuilder:validation:Enum=None;MultiClusterService
	// +optional
	Export NetworkExport `json:"export,omitempty"`
}

// NetworkExport names an API the governing Service is exported through.
type NetworkExport string

const (
	// NetworkExportNone exports nothing beyond fleet DNS.
	NetworkExportNone NetworkExport = "None"
	// NetworkExportMultiClusterService delivers a ServiceExport of the
	// governing Service (KEP-1645).
	NetworkExportMultiClusterService NetworkExport = "MultiClusterService"
)

// ExportsMultiClusterService reports whether spec.network.export is
// MultiClusterService.
func (s *FleetSetSpec) ExportsMultiClusterService() bool {
	return s.Network != nil && s.Network.Export == NetworkExportMultiClusterService
}
