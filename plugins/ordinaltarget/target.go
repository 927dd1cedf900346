// Package ordinaltarget resolves, for a pod managed by fleetset-scheduler, its
// SubsetPlacement, its ordinal and the domain that ordinal maps to: the part
// the SubsetPlacement and OrdinalSpread plugins share, with one informer-backed
// reader per scheduler and one ordinal map per placement generation.
//
// Files: target.go (Target, Ordinal, Compile), resolver.go (Resolver),
// state.go (the Target in the cycle state).
package ordinaltarget

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
)

// Target is what a managed pod must obey in one scheduling cycle. It is
// read-only once built and shared between plugins and cycles.
type Target struct {
	// Placement is the SubsetPlacement named by the pod's fleetset.io/placement
	// label. Its fields share memory with the informer cache: read only.
	Placement *fleetv1.SubsetPlacement
	// Ordinal is the pod's StatefulSet ordinal.
	Ordinal int64
	// TopologyKey is the node label holding the domain name (defaulted).
	TopologyKey string
	// Domain is the domain the ordinal maps to; empty when the placement
	// lists no domains (spread only).
	Domain string
	// Domains are the placement's domain names; nil when it lists none, and
	// then every value of TopologyKey is allowed.
	Domains map[string]struct{}
	// Strict is true for whenUnsatisfiable DoNotSchedule with domains: the
	// pod must land in Domain.
	Strict bool
	// NodeSelector is the placement's compiled node selector, nil when unset.
	NodeSelector *nodeaffinity.LazyErrorNodeSelector
}

// Managed reports whether the pod opted in to placement: it carries the
// fleetset.io/placement label.
func Managed(pod *v1.Pod) bool {
	_, ok := pod.Labels[fleetv1.LabelPlacement]
	return ok
}

// Ordinal returns the pod's StatefulSet ordinal from the
// apps.kubernetes.io/pod-index label, falling back to the numeric suffix of
// the pod's name. The error says why neither holds a non-negative integer.
func Ordinal(pod *v1.Pod) (int64, error) {
	if s, ok := pod.Labels[fleetv1.LabelPodIndex]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("label %s=%q is not a non-negative integer", fleetv1.LabelPodIndex, s)
		}
		return n, nil
	}
	i := strings.LastIndexByte(pod.Name, '-')
	if i < 0 {
		return 0, fmt.Errorf("pod has no %s label and its name has no ordinal suffix", fleetv1.LabelPodIndex)
	}
	n, err := strconv.ParseInt(pod.Name[i+1:], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pod has no %s label and its name has no ordinal suffix", fleetv1.LabelPodIndex)
	}
	return n, nil
}

// Compile returns the ordinal map of a placement spec (apportion.DomainSeats)
// and its domain names; nil, nil for a spec without domains (spread only).
func Compile(spec *fleetv1.SubsetPlacementSpec) (*apportion.Seats, map[string]struct{}, error) {
	seats, err := apportion.DomainSeats(spec.Domains)
	if seats == nil || err != nil {
		return nil, nil, err
	}
	names := make(map[string]struct{}, len(spec.Domains))
	for _, d := range spec.Domains {
		names[d.Name] = struct{}{}
	}
	return seats, names, nil
}

// UserError is a Resolve error that describes the objects (an invalid
// placement, a pod without a usable ordinal) rather than a failing API; the
// plugins report it as unresolvable instead of retrying. Test with
// errors.As.
type UserError struct {
	Err error
}

// Error returns the wrapped error's message.
func (e *UserError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UserError) Unwrap() error { return e.Err }
