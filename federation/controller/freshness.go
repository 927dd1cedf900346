package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// errStaleFleetSet is returned by writeWorks when the cached FleetSet it
// planned from is not the apiserver's current one: nothing was written.
var errStaleFleetSet = errors.New("the cached FleetSet is older than the apiserver's")

// errWorkConflict is returned by writeWorks when a ManifestWork changed on
// the apiserver after the cache's copy the write was decided from (409):
// most often the work agent's status update, which every apply is followed
// by for a second or so. The reconcile runs again once the cache holds the
// change (the work's event), as for errStaleFleetSet, not after the
// workqueue's exponential backoff, which a run of such conflicts during the
// agent's status updates grew past a second (docs/benchmarks.md, "Scale
// latency").
var errWorkConflict = errors.New("a ManifestWork changed since the cached copy the write was decided from")

// conflictedWrites is the errWorkConflict writeWorks returns: the works whose
// writes conflicted, and the last conflict.
type conflictedWrites struct {
	works []types.NamespacedName
	last  error
}

func (e *conflictedWrites) Error() string {
	return fmt.Sprintf("%v: %d ManifestWork write(s) conflicted, last: %v", errWorkConflict, len(e.works), e.last)
}

// Is makes errors.Is(e, errWorkConflict) true.
func (e *conflictedWrites) Is(target error) bool { return target == errWorkConflict }

// Unwrap returns the last conflict (apierrors.IsConflict, IsAlreadyExists).
func (e *conflictedWrites) Unwrap() error { return e.last }

// maxFastConflictRetries is how many reconciles in a row of one FleetSet
// may end on errWorkConflict and run again after cacheWaitDelay, without a
// status write. From the next one on, a conflict that does not clear
// (another writer rewriting the work, or a cache that does not catch up)
// is a problem like a refused write: ApplyFailed on the subsets of the
// works that conflicted (Degraded, a Warning event), the rest of the
// reconcile's status written, and the writes tried again after
// writeFailureRetry.
const maxFastConflictRetries = 10

// streaks counts events in a row by FleetSet. The zero value is ready.
// Safe for concurrent use.
type streaks struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

// add counts one more for key and returns its streak.
func (s *streaks) add(key types.NamespacedName) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[types.NamespacedName]int{}
	}
	s.n[key]++
	return s.n[key]
}

// reset ends key's streak.
func (s *streaks) reset(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.n, key)
}

// liveReader returns APIReader, the live reads' reader, or Client without
// one (a reconciler built without Setup, as in unit tests).
func (r *FleetSetReconciler) liveReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// current reports whether fs, as read from the cache, is the FleetSet the
// apiserver holds now: the same resourceVersion, read live (metadata only)
// through APIReader; true without an APIReader. It returns the read's error.
//
// The failover state lives in status.subsets and works are written before
// status: planned from an older FleetSet (a process resumed after SIGSTOP,
// an expired expectation), a reconcile would hand a subset to a cluster on
// a superseded grant. The status write then holds the FleetSet to the
// checked resourceVersion (kubernetes/kubernetes#59848: stale reads).
func (r *FleetSetReconciler) current(ctx context.Context, fs *fleetv1.FleetSet) (bool, error) {
	if r.APIReader == nil {
		return true, nil
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(fleetv1.GroupVersion.WithKind("FleetSet"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(fs), live); err != nil {
		return false, fmt.Errorf("reading FleetSet %s live before writing its ManifestWorks: %w", client.ObjectKeyFromObject(fs), err)
	}
	if live.ResourceVersion != fs.ResourceVersion {
		staleReads.Inc()
		return false, nil
	}
	return true, nil
}
