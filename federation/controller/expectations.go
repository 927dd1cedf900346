package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds of the objects whose writes are expected.
const (
	kindFleetSet     = "FleetSet"
	kindManifestWork = "ManifestWork"
)

// expectationTTL is how long a write stays expected when the cache never
// delivers it (a relist that skipped the written version): after it the
// cache is trusted again.
const expectationTTL = 30 * time.Second

// cacheWaitDelay is when a reconcile that found its owner's writes not yet
// in the cache runs again (sooner when a watch event requeues it).
const cacheWaitDelay = 200 * time.Millisecond

// objectRef names one object of a kind.
type objectRef struct {
	kind string
	key  types.NamespacedName
}

// seenVersions is how many of an object's latest resourceVersions the
// informer delivered are remembered: a write whose version the informer
// delivered (and then newer ones, e.g. a work agent's status update) before
// the write was recorded is still found delivered.
const seenVersions = 8

// seenState is what the informer delivered of an object: its latest
// resourceVersions (newest last) and whether it is being deleted.
type seenState struct {
	versions []string
	deleting bool
}

// expectation is a write of owner not yet delivered by the informer:
// resourceVersion is the written version, "" for a delete.
type expectation struct {
	owner           string
	resourceVersion string
	at              time.Time
}

// cacheExpectations keeps a reconciler from acting on a cache older than its
// own writes: the ReplicaSet controller's expectations, keyed by
// resourceVersion. Until the informers deliver the writes recorded under an
// owner (or ttl passes), satisfied(owner) is false. nil expects nothing.
type cacheExpectations struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	// seen is what was delivered per object, so a write whose event came
	// before the write was recorded is not expected.
	seen    map[objectRef]seenState
	pending map[objectRef]expectation
	byOwner map[string]map[objectRef]struct{}

	// window is the most writes admit lets be unobserved (pending) or
	// admitted and not yet recorded (admitted) at once; 0: no bound.
	window   int
	admitted int
}

// newCacheExpectations returns empty expectations with the given TTL, read
// on the clock now (nil: time.Now).
func newCacheExpectations(ttl time.Duration, now func() time.Time) *cacheExpectations {
	if now == nil {
		now = time.Now
	}
	return &cacheExpectations{ttl: ttl, now: now, seen: map[objectRef]seenState{},
		pending: map[objectRef]expectation{}, byOwner: map[string]map[objectRef]struct{}{}}
}

// watch feeds e from the informers of informers for each kind in objs
// (kind → an object of that type). It returns an error if an informer
// cannot be had or a handler not added.
func (e *cacheExpectations) watch(ctx context.Context, informers cache.Informers, objs map[string]client.Object) error {
	for kind, obj := range objs {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("informer of %s: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(e.handler(kind)); err != nil {
			return fmt.Errorf("watching %s for expectations: %w", kind, err)
		}
	}
	return nil
}

// handler returns the informer event handler of kind.
func (e *cacheExpectations) handler(kind string) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { e.observe(kind, o, false) },
		UpdateFunc: func(_, o any) { e.observe(kind, o, false) },
		DeleteFunc: func(o any) { e.observe(kind, o, true) },
	}
}

// observe records what the informer delivered of an object of kind o (gone
// when deleted) and clears the write it satisfies.
func (e *cacheExpectations) observe(kind string, o any, gone bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	ref := objectRef{kind, types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}}
	rv, deleting := m.GetResourceVersion(), m.GetDeletionTimestamp() != nil
	e.mu.Lock()
	defer e.mu.Unlock()
	if gone {
		delete(e.seen, ref)
	} else {
		s := e.seen[ref]
		if len(s.versions) == seenVersions {
			s.versions = append(s.versions[:0], s.versions[1:]...)
		}
		s.versions = append(s.versions, rv)
		s.deleting = deleting
		e.seen[ref] = s
	}
	if p, ok := e.pending[ref]; ok && (gone || p.resourceVersion == rv || (p.resourceVersion == "" && deleting)) {
		e.clear(ref, p.owner)
	}
}

// expectWrite records that owner wrote obj (of kind), as the apiserver
// returned it.
func (e *cacheExpectations) expectWrite(owner, kind string, obj client.Object) {
	if e == nil {
		return
	}
	ref := objectRef{kind, client.ObjectKeyFromObject(obj)}
	rv := obj.GetResourceVersion()
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.seen[ref]; ok && slices.Contains(s.versions, rv) {
		return // already delivered
	}
	e.add(ref, expectation{owner: owner, resourceVersion: rv, at: e.now()})
}

// expectDelete records that owner deleted the object of kind at key.
func (e *cacheExpectations) expectDelete(owner, kind string, key types.NamespacedName) {
	if e == nil {
		return
	}
	ref := objectRef{kind, key}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.seen[ref]; !ok || s.deleting {
		return // already delivered
	}
	e.add(ref, expectation{owner: owner, at: e.now()})
}

// satisfied reports whether the cache has delivered every write of owner,
// dropping those older than the TTL.
func (e *cacheExpectations) satisfied(owner string) bool {
	if e == nil {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for ref := range e.byOwner[owner] {
		if e.expired(e.pending[ref], now) {
			e.clear(ref, owner)
		}
	}
	return len(e.byOwner[owner]) == 0
}

// holds reports whether the informer of kind has delivered the object at key
// and not its deletion, without a cache read; known is false for the nil
// expectations (nothing is tracked). Its handler may run behind the cache's
// own, so a false held can be stale: a hint, not a verdict.
func (e *cacheExpectations) holds(kind string, key types.NamespacedName) (held, known bool) {
	if e == nil {
		return false, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, held = e.seen[objectRef{kind, key}]
	return held, true
}

// admitPoll is how often a write held back by admit checks the window again.
const admitPoll = 5 * time.Millisecond

// admit waits until one more write fits the window of writes pending (not
// yet delivered, within the TTL) or admitted and not released, so the hub's
// own watch never falls too far behind; the caller writes, records it, then
// calls release. It returns ctx's error; nil or a window of 0 admit at once.
func (e *cacheExpectations) admit(ctx context.Context) (release func(), err error) {
	if e == nil || e.window <= 0 {
		return func() {}, nil
	}
	for {
		e.mu.Lock()
		if len(e.pending)+e.admitted >= e.window {
			e.expireLocked()
		}
		if len(e.pending)+e.admitted < e.window {
			e.admitted++
			e.mu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					e.mu.Lock()
					e.admitted--
					e.mu.Unlock()
				})
			}, nil
		}
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return func() {}, ctx.Err()
		case <-time.After(admitPoll):
		}
	}
}

// expireLocked drops the writes older than the TTL. e.mu must be held.
func (e *cacheExpectations) expireLocked() {
	now := e.now()
	for ref, p := range e.pending {
		if e.expired(p, now) {
			e.clear(ref, p.owner)
		}
	}
}

// expired reports whether write p, recorded at p.at, is older than the TTL
// at now: no longer awaited.
func (e *cacheExpectations) expired(p expectation, now time.Time) bool {
	return now.Sub(p.at) > e.ttl
}

// add records p for ref, replacing an earlier write of ref (by any owner).
// e.mu must be held.
func (e *cacheExpectations) add(ref objectRef, p expectation) {
	if old, ok := e.pending[ref]; ok {
		e.clear(ref, old.owner)
	}
	e.pending[ref] = p
	if e.byOwner[p.owner] == nil {
		e.byOwner[p.owner] = map[objectRef]struct{}{}
	}
	e.byOwner[p.owner][ref] = struct{}{}
}

// clear drops the write of ref by owner. e.mu must be held.
func (e *cacheExpectations) clear(ref objectRef, owner string) {
	delete(e.pending, ref)
	delete(e.byOwner[owner], ref)
	if len(e.byOwner[owner]) == 0 {
		delete(e.byOwner, owner)
	}
}

// fleetSetOwner is the expectations owner of a FleetSet's reconciles.
func fleetSetOwner(key types.NamespacedName) string { return "fleetset/" + key.String() }
