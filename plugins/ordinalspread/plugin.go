// Package ordinalspread is the OrdinalSpread scheduler plugin: among the
// feasible nodes it scores first the nodes in the domain the pod's ordinal maps
// to (what makes whenUnsatisfiable ScheduleAnyway still prefer the right
// domain), then the nodes holding the fewest pods of the same set, in the
// manner of PodTopologySpread's scoring. Pods without the
// fleetset.io/placement label are skipped.
package ordinalspread

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/fleetset/fleetset/plugins/apis/config"
	"github.com/fleetset/fleetset/plugins/apis/config/validation"
	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// Name is the name of the plugin in the registry and in configurations.
const Name = "OrdinalSpread"

// OrdinalSpread is the plugin.
type OrdinalSpread struct {
	resolver     *ordinaltarget.Resolver
	domainWeight int64
	// nodes lists every node of the cycle's snapshot, for counting a
	// spread-only set per domain; nil: count over the nodes PreScore gets.
	nodes framework.SharedLister
	// memo keeps the sets' pod counts per node between cycles.
	memo countMemo
}

var _ framework.PreScorePlugin = &OrdinalSpread{}
var _ framework.ScorePlugin = &OrdinalSpread{}

// Name returns the plugin name.
func (pl *OrdinalSpread) Name() string { return Name }

// New builds the plugin from *config.OrdinalSpreadArgs (validated here).
// Errors: wrong args type, invalid args, or failing to build the
// SubsetPlacement informer.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*config.OrdinalSpreadArgs)
	if !ok {
		return nil, fmt.Errorf("want args to be of type OrdinalSpreadArgs, got %T", obj)
	}
	if err := validation.ValidateOrdinalSpreadArgs(nil, args); err != nil {
		return nil, err
	}
	r, err := ordinaltarget.ForHandle(ctx, Name, h)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Plugin ready", "plugin", Name, "domainWeight", args.DomainWeight)
	pl := NewWithResolver(r, args.DomainWeight)
	pl.nodes = h.SnapshotSharedLister()
	return pl, nil
}

// NewWithResolver builds the plugin over an existing resolver; domainWeight
// is OrdinalSpreadArgs.DomainWeight (0–100).
func NewWithResolver(r *ordinaltarget.Resolver, domainWeight int32) *OrdinalSpread {
	return &OrdinalSpread{resolver: r, domainWeight: int64(domainWeight)}
}
