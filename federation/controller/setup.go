// Package controller holds fleetset-hub's controllers: FleetSetReconciler
// delivers each FleetSet as one ManifestWork per member cluster and folds the
// members' status back; ResyncReconciler keeps the per-cluster resync lease.
// Both run in one controller-runtime manager (cmd/hub).
package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/manager"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// ClusterIndex is the FleetSet field index holding the ManagedCluster name of
// every subset (spec.topology.subsets[].cluster).
const ClusterIndex = "spec.topology.subsets.cluster"

// Options configures the hub's controllers.
type Options struct {
	// HubIdentity is the resync Lease's holderIdentity.
	HubIdentity string
	// LeaseDuration is the resync Lease's leaseDurationSeconds (whole seconds,
	// ≥ 3 s); the hub renews it every third of that.
	LeaseDuration time.Duration
	// Clock is the clock of the lease renewals; nil means the real clock.
	Clock clock.Clock
	// LeaseSkew is the clock-skew margin added to a lost cluster's lease
	// expiry before its subsets are relocated (failover policy Relocate).
	LeaseSkew time.Duration
}

// NewScheme returns a scheme with the types the hub reads and writes:
// client-go's, fleetset.io/v1alpha1, OCM cluster/v1 and work/v1.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1.AddToScheme, clusterv1.Install, workv1.Install} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// CacheOptions restricts the manager's cache of ManifestWorks to those the hub
// wrote (label app.kubernetes.io/managed-by=fleetset-hub), so a hub shared
// with other OCM users does not cache theirs.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&workv1.ManifestWork{}: {Label: labels.SelectorFromSet(labels.Set{fleetv1.LabelManagedBy: fleetv1.ManagedByHub})},
	}}
}

// Setup registers the FleetSet cluster index and both controllers with mgr.
// It returns an error if opts is invalid or a controller cannot be built.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.HubIdentity == "" {
		return fmt.Errorf("hub identity: must not be empty")
	}
	if opts.LeaseDuration < 3*time.Second || opts.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("lease duration: must be whole seconds ≥ 3s, got %v", opts.LeaseDuration)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &fleetv1.FleetSet{}, ClusterIndex, clustersOf); err != nil {
		return fmt.Errorf("indexing FleetSets by cluster: %w", err)
	}
	if opts.LeaseSkew < 0 {
		return fmt.Errorf("lease skew: must not be negative, got %v", opts.LeaseSkew)
	}
	fr := &FleetSetReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("fleetset-hub"), LeaseSkew: opts.LeaseSkew, Clock: opts.Clock}
	if err := fr.SetupWithManager(mgr); err != nil {
		return err
	}
	rr := &ResyncReconciler{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorderFor("fleetset-hub"),
		HubIdentity:   opts.HubIdentity,
		LeaseDuration: opts.LeaseDuration,
		Clock:         opts.Clock,
	}
	return rr.SetupWithManager(mgr)
}

// clustersOf is the ClusterIndex function: the clusters a FleetSet's subsets
// use (spec and status) or may be relocated to (fallbackClusters), so the
// hub hears of their availability and keeps their resync leases.
func clustersOf(o client.Object) []string {
	fs, ok := o.(*fleetv1.FleetSet)
	if !ok {
		return nil
	}
	out := fleetSetClusters(fs, true)
	for _, s := range fs.Spec.Topology.Subsets {
		for _, c := range s.FallbackClusters {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// fleetSetClusters returns, once each and in order, the clusters of fs's
// subsets in its spec and, with withStatus, in its status.
func fleetSetClusters(fs *fleetv1.FleetSet, withStatus bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, s := range fs.Spec.Topology.Subsets {
		add(s.Cluster)
	}
	if withStatus {
		for _, s := range fs.Status.Subsets {
			add(s.Cluster)
		}
	}
	return out
}
