package controller

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

var (
	// fleetDNSRecords is how many fleet DNS records the hub delivers per
	// FleetSet (the instances whose addresses members reported and the hub
	// accepted), by FleetSet namespace/name.
	fleetDNSRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fleetset_hub_fleet_dns_records",
		Help: "Fleet DNS records the hub delivers for a FleetSet: instances whose address a member reported and the hub accepted.",
	}, []string{"namespace", "fleetset"})
	// fleetDNSRejected counts reported endpoints the hub ignored: not an
	// instance of a subset placed on the reporting cluster (stale after a
	// relocation, or forged), no hostname, or no IPv4 address.
	fleetDNSRejected = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fleetset_hub_fleet_dns_rejected_endpoints_total",
		Help: "Endpoints members reported that the hub did not accept for fleet DNS (not an instance of a subset placed on the reporting cluster, no hostname, or no IPv4 address), counted per reconcile that rendered them.",
	})
)

func init() {
	metrics.Registry.MustRegister(fleetDNSRecords, fleetDNSRejected)
}

// readMemberEndpoints returns the EndpointSlices members published on the
// hub for fs (v1alpha1.LabelMemberEndpoints, owner labels), by the cluster
// namespace each is in, from the cache.
func (r *FleetSetReconciler) readMemberEndpoints(ctx context.Context, fs *fleetv1.FleetSet) (map[string]*discoveryv1.EndpointSlice, error) {
	var list discoveryv1.EndpointSliceList
	if err := r.List(ctx, &list, client.MatchingLabels{
		fleetv1.LabelMemberEndpoints: "true",
		fleetv1.LabelOwnerNamespace:  fs.Namespace,
		fleetv1.LabelOwnerName:       fs.Name,
	}); err != nil {
		return nil, fmt.Errorf("listing members' fleet DNS reports: %w", err)
	}
	out := make(map[string]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		if s.Name == fleetv1.MemberEndpointsName(fs.Namespace, fs.Name) {
			out[s.Namespace] = s
		}
	}
	return out, nil
}

// observeRecords reports what fleet DNS delivers for st.fs: the record
// gauge, rejected endpoints, and a FleetDNSTooLarge problem.
func observeRecords(st *state, records *manifestwork.Records) {
	fleetDNSRecords.WithLabelValues(st.fs.Namespace, st.fs.Name).Set(float64(records.Len()))
	if records == nil {
		return
	}
	fleetDNSRejected.Add(float64(records.Rejected))
	if records.TooLarge {
		st.report(fleetProblem(fleetv1.ReasonFleetDNSTooLarge, fmt.Sprintf(
			"the fleet has more than %d instances: no fleet DNS record is delivered to any member (each instance still resolves in its own cluster)",
			fleetv1.MaxFleetDNSInstances)))
	}
}

// memberEndpointsOwner maps a member's fleet DNS report to its FleetSet.
func memberEndpointsOwner(_ context.Context, o client.Object) []reconcile.Request {
	ns, name := o.GetLabels()[fleetv1.LabelOwnerNamespace], o.GetLabels()[fleetv1.LabelOwnerName]
	if ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}
