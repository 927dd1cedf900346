package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	workv1 "open-cluster-management.io/api/work/v1"
)

func work(ns, name, rv string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// TestCacheExpectations: a write is awaited until the informer delivers its
// resourceVersion (an older one does not do), a delete until the informer
// delivers the deletion or a deletionTimestamp, a write delivered before it
// was recorded (even followed by newer versions) is not awaited, and the
// TTL ends any wait.
func TestCacheExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	e := newCacheExpectations(30*time.Second, func() time.Time { return now })
	h := e.handler(kindManifestWork)
	const owner = "fleetset/db/mydb"

	h.OnAdd(work("east", "w", "1"), true)
	e.expectWrite(owner, kindManifestWork, work("east", "w", "5"))
	if e.satisfied(owner) {
		t.Fatal("satisfied before the write was delivered")
	}
	h.OnUpdate(nil, work("east", "w", "3"))
	if e.satisfied(owner) {
		t.Fatal("satisfied by an older version")
	}
	h.OnUpdate(nil, work("east", "w", "5"))
	if !e.satisfied(owner) {
		t.Fatal("not satisfied once the written version was delivered")
	}

	// Delivered before recorded: nothing to await.
	h.OnAdd(work("west", "w", "7"), false)
	e.expectWrite(owner, kindManifestWork, work("west", "w", "7"))
	if !e.satisfied(owner) {
		t.Fatal("awaits a write the informer already delivered")
	}

	// Delivered, and then a newer version (a work agent's status update),
	// before recorded: nothing to await either.
	h.OnUpdate(nil, work("west", "w", "8"))
	h.OnUpdate(nil, work("west", "w", "9"))
	e.expectWrite(owner, kindManifestWork, work("west", "w", "8"))
	if !e.satisfied(owner) {
		t.Fatal("awaits a write delivered before a newer version")
	}

	// Deletes: by a deletionTimestamp, or by the deletion.
	e.expectDelete(owner, kindManifestWork, types.NamespacedName{Namespace: "east", Name: "w"})
	if e.satisfied(owner) {
		t.Fatal("satisfied before the delete was delivered")
	}
	deleting := work("east", "w", "6")
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	h.OnUpdate(nil, deleting)
	if !e.satisfied(owner) {
		t.Fatal("not satisfied by the deletionTimestamp")
	}
	e.expectDelete(owner, kindManifestWork, types.NamespacedName{Namespace: "west", Name: "w"})
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "west/w", Obj: work("west", "w", "7")})
	if !e.satisfied(owner) {
		t.Fatal("not satisfied by the deletion")
	}
	e.expectDelete(owner, kindManifestWork, types.NamespacedName{Namespace: "north", Name: "w"})
	if !e.satisfied(owner) {
		t.Fatal("awaits the delete of an object the informer never had")
	}

	// Owners and kinds are apart; the TTL ends a wait.
	e.expectWrite(owner, kindFleetSet, work("db", "mydb", "9"))
	if e.satisfied(owner) || !e.satisfied("fleetset/db/other") {
		t.Fatal("owners mixed up")
	}
	h.OnUpdate(nil, work("db", "mydb", "9")) // a ManifestWork of that key, not the FleetSet
	if e.satisfied(owner) {
		t.Fatal("kinds mixed up")
	}
	now = now.Add(31 * time.Second)
	if !e.satisfied(owner) {
		t.Fatal("still waiting after the TTL")
	}

	var none *cacheExpectations
	none.expectWrite(owner, kindFleetSet, work("db", "mydb", "1"))
	if !none.satisfied(owner) {
		t.Fatal("nil expectations await")
	}
}

// TestWorksSummary: one message for a reconcile's writes, clusters sorted,
// at most maxEventClusters named per operation.
func TestWorksSummary(t *testing.T) {
	if got := (worksSummary{}).message("db.mydb"); got != "" {
		t.Errorf("nothing written: %q, want none", got)
	}
	s := worksSummary{created: []string{"west", "east"}, updated: []string{"north"}, deleted: []string{"south"}}
	want := "ManifestWork db.mydb: created in 2 clusters (east, west); updated in 1 cluster (north); deleted from 1 cluster (south)"
	if got := s.message("db.mydb"); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	var many []string
	for _, c := range "abcdefghijkl" {
		many = append(many, string(c))
	}
	got := worksSummary{updated: many}.message("db.mydb")
	if !strings.HasSuffix(got, "updated in 12 clusters (a, b, c, d, e, f, g, h, i, j and 2 more)") {
		t.Errorf("message = %q, want 10 clusters named and 2 counted", got)
	}
}

// TestCacheExpectationsHolds: holds tells which objects the informer
// delivered and has not deleted; the nil expectations know nothing.
func TestCacheExpectationsHolds(t *testing.T) {
	e := newCacheExpectations(30*time.Second, nil)
	h := e.handler(kindManifestWork)
	key := types.NamespacedName{Namespace: "east", Name: "w"}
	if held, known := e.holds(kindManifestWork, key); held || !known {
		t.Fatalf("before delivery: held %v known %v, want false, true", held, known)
	}
	h.OnAdd(work("east", "w", "1"), false)
	if held, _ := e.holds(kindManifestWork, key); !held {
		t.Fatal("not held once delivered")
	}
	if held, _ := e.holds(kindFleetSet, key); held {
		t.Fatal("held under another kind")
	}
	h.OnDelete(work("east", "w", "2"))
	if held, _ := e.holds(kindManifestWork, key); held {
		t.Fatal("held after its deletion was delivered")
	}
	var none *cacheExpectations
	if _, known := none.holds(kindManifestWork, key); known {
		t.Fatal("nil expectations claim to know")
	}
}

// TestCacheExpectationsAdmit: admit lets at most window writes be admitted
// and unobserved at once; a delivery, a release or the TTL makes room, and a
// cancelled wait returns the context's error.
func TestCacheExpectationsAdmit(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newCacheExpectations(30*time.Second, clock)
	e.window = 2
	h := e.handler(kindManifestWork)
	const owner = "fleetset/db/mydb"
	ctx := context.Background()
	admitNow := func() (func(), bool) {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		release, err := e.admit(c)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("admit: %v", err)
		}
		return release, err == nil
	}

	r1, ok1 := admitNow()
	e.expectWrite(owner, kindManifestWork, work("east", "w", "5"))
	r1()
	r2, ok2 := admitNow()
	if !ok1 || !ok2 {
		t.Fatal("the first two writes were not admitted")
	}
	// One pending, one admitted: the window is full.
	if _, ok := admitNow(); ok {
		t.Fatal("admitted a third write with a window of 2")
	}
	// Released without a write: room again.
	r2()
	r3, ok := admitNow()
	if !ok {
		t.Fatal("not admitted after a release")
	}
	e.expectWrite(owner, kindManifestWork, work("west", "w", "7"))
	r3()
	if _, ok := admitNow(); ok {
		t.Fatal("admitted while two writes are unobserved")
	}
	// Delivered: room.
	h.OnAdd(work("east", "w", "5"), false)
	r4, ok := admitNow()
	if !ok {
		t.Fatal("not admitted after the informer delivered a write")
	}
	e.expectWrite(owner, kindManifestWork, work("north", "w", "9"))
	r4()
	// Never delivered: the TTL ends the wait.
	mu.Lock()
	now = now.Add(31 * time.Second)
	mu.Unlock()
	if _, ok := admitNow(); !ok {
		t.Fatal("not admitted once the unobserved writes passed the TTL")
	}

	// A wait ends with its context.
	full := newCacheExpectations(30*time.Second, nil)
	full.window = 1
	if _, err := full.admit(ctx); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := full.admit(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("admit on a cancelled context: %v, want context.Canceled", err)
	}
	// No window, or no expectations: admitted at once.
	var none *cacheExpectations
	if _, err := none.admit(c); err != nil {
		t.Fatalf("nil expectations: %v", err)
	}
}
