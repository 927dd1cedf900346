//go:build !fleetset_unsafe_nofence

package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func up(since time.Duration) Cluster {
	return Cluster{Exists: true, Available: true, Since: t0.Add(since), Fenced: t0.Add(time.Hour), Removed: true}
}

// down is a cluster unavailable since t0+since whose member, heard by the
// hub, has certainly fenced itself at t0+fenced.
func down(since, fenced time.Duration) Cluster {
	return Cluster{Exists: true, Since: t0.Add(since), Heartbeat: true, Fenced: t0.Add(fenced), Deadline: "heartbeat observed at t0"}
}

// deleted is a cluster whose ManagedCluster is gone and whose member the
// hub heard before (its departed record): certainly fenced at t0+fenced.
// Its works are gone, so it counts as Removed unless the planner knows
// better.
func deleted(fenced time.Duration) Cluster {
	return Cluster{Heartbeat: true, Fenced: t0.Add(fenced), Deadline: "heartbeat observed at t0", Removed: true}
}

// planCase is one case of TestPlan.
type planCase struct {
	name     string
	spec     Spec
	subsets  []Subset
	clusters map[string]Cluster
	now      time.Duration
	want     []Decision
}

func TestPlan(t *testing.T) {
	relocate := Spec{Relocate: true, Toleration: 20 * time.Second}
	two := []Subset{{Name: "east", Home: "east", Replicas: 5}, {Name: "west", Home: "west", Replicas: 4}}
	three := append(append([]Subset(nil), two...), Subset{Name: "north", Home: "north", Replicas: 3})
	tests := []planCase{
		{
			name: "policy None: a lost cluster keeps its subset", spec: Spec{Toleration: 20 * time.Second}, subsets: two,
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "toleration not yet passed: failing over, retry at its end", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": down(0, 5*time.Second), "west": up(0)}, now: 10 * time.Second,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Retry: t0.Add(20 * time.Second)}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "toleration passed but the member not yet certainly fenced: waits for its fence deadline", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": down(0, 35*time.Second), "west": up(0)}, now: 25 * time.Second,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Retry: t0.Add(35 * time.Second),
				Waiting: "subset east: cluster east unavailable; relocating at 2026-11-23T12:00:35Z (fence deadline: heartbeat observed at t0)"}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "fenced: relocated to the other subset's cluster with epoch 1", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": down(0, 25*time.Second), "west": up(0)}, now: 30 * time.Second,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to west, epoch 1"}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "default fallback: the cluster with the fewest replicas", spec: relocate, subsets: three,
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0), "north": up(0)}, now: time.Minute,
			want: []Decision{{Cluster: "north", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to north, epoch 1"},
				{Cluster: "west", Deliver: true}, {Cluster: "north", Deliver: true}},
		},
		{
			name: "cordoned cluster is no fallback: the next one by load", spec: relocate, subsets: three,
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0), "north": func() Cluster { c := up(0); c.Cordoned = true; return c }()}, now: time.Minute,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to west, epoch 1"},
				{Cluster: "west", Deliver: true}, {Cluster: "north", Deliver: true}},
		},
		{
			name: "fallbackClusters order wins over load", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Replicas: 5, Fallbacks: []string{"spare", "west"}}, two[1]},
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0), "spare": {Exists: true}}, now: time.Minute,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to west, epoch 1"}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "no fallback cluster available: stays failing over", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Replicas: 5, Fallbacks: []string{"spare"}}, two[1]},
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0), "spare": {Exists: true}}, now: time.Minute,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver,
				Waiting: "subset east: cluster east lost and fenced, but no fallback cluster is available"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "two of three clusters lost at once: nothing moves (majority rule), retried", spec: relocate, subsets: three,
			clusters: map[string]Cluster{"east": down(0, 0), "west": down(0, 0), "north": up(0)}, now: time.Minute,
			want: []Decision{
				{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(time.Minute + HoldRetry),
					Waiting: "subset east: cluster east lost; relocation held: 2 of the FleetSet's 3 clusters are lost at once; relocating nothing"},
				{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(time.Minute + HoldRetry)},
				{Cluster: "north", Deliver: true}},
		},
		{
			name: "two of three clusters lost, both confirmed out of service: both go to the third at once", spec: relocate, subsets: three,
			clusters: map[string]Cluster{"east": {Exists: true, Since: t0, Confirmed: true}, "west": {Exists: true, Since: t0, Confirmed: true}, "north": up(0)}, now: time.Second,
			want: []Decision{{Cluster: "north", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to north, epoch 1"},
				{Cluster: "north", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset west relocated from west to north, epoch 1"},
				{Cluster: "north", Deliver: true}},
		},
		{
			// Issue 48: a deleted ManagedCluster is unknown, never out of
			// service; without a record of its member's heartbeats the hub
			// cannot count a deadline.
			name: "ManagedCluster deleted, no heartbeat on record: held, however long", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"west": up(0)}, now: 24 * time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(24*time.Hour + HoldRetry),
				Waiting: "subset east: cluster east lost; relocation held: ManagedCluster east was deleted, which does not confirm that its member stopped the subset's pods, and this hub holds no record of that member's heartbeats (it started after the deletion), so it cannot count a fence deadline; re-create ManagedCluster east tainted fleetset.io/out-of-service once it runs none of the subset's pods"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "ManagedCluster deleted, its member heard: held until its fence deadline, and says so", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": deleted(35 * time.Second), "west": up(0)}, now: time.Second,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(35 * time.Second),
				Waiting: "subset east: relocation held: ManagedCluster east was deleted, which does not confirm that its member stopped the subset's pods (it fences only once its heartbeats stop reaching the hub); relocating at 2026-11-23T12:00:35Z (fence deadline: heartbeat observed at t0)"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "ManagedCluster deleted, past its member's fence deadline: relocated", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": deleted(35 * time.Second), "west": up(0)}, now: 35 * time.Second,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to west, epoch 1"}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "failing back from a deleted fallback whose work is gone: not removed, waits for its fence deadline", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailingBack, Epoch: 1}, {Name: "north", Home: "north", Replicas: 4}},
			clusters: map[string]Cluster{"east": up(0), "north": up(0), "west": func() Cluster { c := deleted(time.Hour); c.Removed = true; return c }()}, now: time.Minute,
			want: []Decision{{Cluster: "west", Deliver: false, Phase: fleetv1.SubsetFailingBack, Epoch: 1, Waiting: "subset east: waiting for cluster west to remove it before it returns to east"},
				{Cluster: "north", Deliver: true}},
		},
		{
			name: "no heartbeat ever observed from the lost member: held, however long", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": {Exists: true, Since: t0}, "west": up(0)}, now: 24 * time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(24*time.Hour + HoldRetry),
				Waiting: "subset east: cluster east lost; relocation held: the hub has never observed a heartbeat of east's fleetset member component, so it cannot know that east fenced itself; taint ManagedCluster east fleetset.io/out-of-service once it runs none of the subset's pods"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "the lost member knew no peer at its last heartbeat: held, past its deadline", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": func() Cluster { c := down(0, 0); c.NoPeers = true; return c }(), "west": up(0)}, now: 24 * time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(24*time.Hour + HoldRetry),
				Waiting: "subset east: cluster east lost; relocation held: east's fleetset member component knew no peer at its last heartbeat, so it does not fence on hub silence (it cannot tell its own isolation from a hub outage); give the members peer endpoints, or taint ManagedCluster east fleetset.io/out-of-service once it runs none of the subset's pods"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "no peer, but the operator confirmed it out of service: relocated", spec: relocate, subsets: two,
			clusters: map[string]Cluster{"east": func() Cluster { c := down(0, time.Hour); c.NoPeers, c.Confirmed = true, true; return c }(), "west": up(0)}, now: time.Minute,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Step: "subset east relocated from east to west, epoch 1"}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "full disruption of the members: held", spec: Spec{Relocate: true, Toleration: 20 * time.Second, Disrupted: true}, subsets: two,
			clusters: map[string]Cluster{"east": down(0, 0), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true, Phase: fleetv1.SubsetFailingOver, Held: true, Retry: t0.Add(time.Hour + HoldRetry),
				Waiting: "subset east: cluster east lost; relocation held: full disruption: more than half of the member clusters are lost at once (the hub may be the one cut off); relocating nothing"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "flapping cluster back within the toleration: nothing moves", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Replicas: 5, Phase: fleetv1.SubsetFailingOver}, two[1]},
			clusters: map[string]Cluster{"east": up(15 * time.Second), "west": up(0)}, now: 16 * time.Second,
			want: []Decision{{Cluster: "east", Deliver: true}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "relocated, home back, Manual without request: stays", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": up(0), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "Automatic failback before the home's toleration: retry then", spec: Spec{Relocate: true, Toleration: 20 * time.Second, Automatic: true},
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": up(time.Minute), "west": up(0)}, now: time.Minute + 5*time.Second,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Retry: t0.Add(time.Minute + 20*time.Second)}, {Cluster: "west", Deliver: true}},
		},
		{
			name: "home back but its work not yet applied (stale copy may remain): no failback yet", spec: Spec{Relocate: true, Toleration: 20 * time.Second, Automatic: true},
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": {Exists: true, Available: true, Since: t0, Fenced: t0.Add(time.Hour)}, "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1, Waiting: "subset east: waiting for cluster east to apply its ManifestWork (remove its stale copy) before failing back"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "failback requested: removed from the fallback first, delivered nowhere", spec: Spec{Relocate: true, Toleration: 20 * time.Second, FailbackRequested: true},
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": up(0), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "west", Deliver: false, Phase: fleetv1.SubsetFailingBack, Epoch: 1, Step: "subset east failing back from west to east"},
				{Cluster: "west", Deliver: true}},
		},
		{
			// Issue 48: cordoning the home a subset was relocated away from
			// must not move the subset: no failback onto a cordoned cluster.
			name: "home cordoned: a relocated subset does not fail back, asked or automatic", spec: Spec{Relocate: true, Toleration: 20 * time.Second, Automatic: true, FailbackRequested: true},
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailedOver, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": func() Cluster { c := up(0); c.Cordoned = true; return c }(), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "west", Deliver: true, Phase: fleetv1.SubsetFailedOver, Epoch: 1,
				Waiting: "subset east: home cluster east is cordoned (spec.topology.cordonedClusters): it stays on west until east is uncordoned"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "failing back, fallback has not removed it yet: waits", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailingBack, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": up(0), "west": {Exists: true, Available: true, Fenced: t0.Add(time.Hour)}}, now: time.Hour,
			want: []Decision{{Cluster: "west", Deliver: false, Phase: fleetv1.SubsetFailingBack, Epoch: 1, Waiting: "subset east: waiting for cluster west to remove it before it returns to east"},
				{Cluster: "west", Deliver: true}},
		},
		{
			name: "failing back, fallback removed it: home with epoch 2", spec: relocate,
			subsets:  []Subset{{Name: "east", Home: "east", Current: "west", Replicas: 5, Phase: fleetv1.SubsetFailingBack, Epoch: 1}, two[1]},
			clusters: map[string]Cluster{"east": up(0), "west": up(0)}, now: time.Hour,
			want: []Decision{{Cluster: "east", Deliver: true, Epoch: 2, Step: "subset east failed back from west to east, epoch 2"}, {Cluster: "west", Deliver: true}},
		},
	}
	// Spec moves (subsets[].cluster edited from east to north), with or
	// without failover.
	moving := []Subset{{Name: "east", Home: "north", Current: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Replicas: 5}, two[1]}
	notRemoved := Cluster{Exists: true, Available: true, Since: t0}
	for _, sp := range []Spec{{}, relocate} {
		tests = append(tests, []planCase{
			{
				name: fmt.Sprintf("relocate %v: moved cluster not yet removed from the old one: delivered nowhere", sp.Relocate), spec: sp, subsets: moving,
				clusters: map[string]Cluster{"east": notRemoved, "north": up(0), "west": up(0)}, now: time.Minute,
				want: []Decision{{Cluster: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Waiting: "subset east: moving from east to north: waiting for east to remove it"},
					{Cluster: "west", Deliver: true}},
			},
			{
				name: fmt.Sprintf("relocate %v: the old cluster removed it: delivered to the new one, epoch + 1", sp.Relocate), spec: sp, subsets: moving,
				clusters: map[string]Cluster{"east": up(0), "north": up(0), "west": up(0)}, now: time.Minute,
				want: []Decision{{Cluster: "north", Deliver: true, Epoch: 4, Step: "subset east moved from east to north, epoch 4"}, {Cluster: "west", Deliver: true}},
			},
			{
				name: fmt.Sprintf("relocate %v: the old cluster unavailable: waits, retried", sp.Relocate), spec: sp, subsets: moving,
				clusters: map[string]Cluster{"east": {Exists: true, Since: t0}, "north": up(0), "west": up(0)}, now: time.Minute,
				want: []Decision{{Cluster: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Retry: t0.Add(time.Minute + HoldRetry)}, {Cluster: "west", Deliver: true}},
			},
			{
				name: fmt.Sprintf("relocate %v: the old cluster's ManagedCluster deleted, before any fence deadline: waits, retried", sp.Relocate), spec: sp, subsets: moving,
				clusters: map[string]Cluster{"east": deleted(time.Hour), "north": up(0), "west": up(0)}, now: time.Minute,
				want: []Decision{{Cluster: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Retry: t0.Add(time.Minute + HoldRetry)}, {Cluster: "west", Deliver: true}},
			},
			{
				name: fmt.Sprintf("relocate %v: the old cluster confirmed out of service: moved", sp.Relocate), spec: sp, subsets: moving,
				clusters: map[string]Cluster{"east": {Exists: true, Since: t0, Confirmed: true}, "north": up(0), "west": up(0)}, now: time.Minute,
				want: []Decision{{Cluster: "north", Deliver: true, Epoch: 4, Step: "subset east moved from east to north, epoch 4"}, {Cluster: "west", Deliver: true}},
			},
		}...)
		// The old cluster is lost, its member's heartbeat observed and its
		// fence deadline past: with policy Relocate its member stopped the
		// subset's pods (they carry spec.fencing), so the subset moves; with
		// policy None nothing fences them, so it waits for the cluster to
		// remove it or be tainted out of service.
		fenced := Cluster{Exists: true, Since: t0, Heartbeat: true, Fenced: t0.Add(30 * time.Second), Deadline: "heartbeat observed at t0 + 30s"}
		want := []Decision{{Cluster: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Retry: t0.Add(time.Minute + HoldRetry),
			Waiting: "subset east: moving from east to north: waiting for east to remove it (east is unavailable: it is moved once east is back and has removed it, or is tainted " + fleetv1.TaintOutOfService + ")"},
			{Cluster: "west", Deliver: true}}
		if sp.Relocate {
			want = []Decision{{Cluster: "north", Deliver: true, Epoch: 4, Step: "subset east moved from east to north, epoch 4"}, {Cluster: "west", Deliver: true}}
		}
		tests = append(tests, planCase{
			name: fmt.Sprintf("relocate %v: the old cluster lost past its fence deadline", sp.Relocate), spec: sp, subsets: moving,
			clusters: map[string]Cluster{"east": fenced, "north": up(0), "west": up(0)}, now: time.Minute, want: want,
		})
	}
	tests = append(tests, planCase{
		name: "relocate true: the old cluster's ManagedCluster deleted, past its member's fence deadline: moved", spec: relocate, subsets: moving,
		clusters: map[string]Cluster{"east": deleted(time.Minute), "north": up(0), "west": up(0)}, now: time.Minute,
		want: []Decision{{Cluster: "north", Deliver: true, Epoch: 4, Step: "subset east moved from east to north, epoch 4"}, {Cluster: "west", Deliver: true}},
	}, planCase{
		name: "relocate false: the old cluster's ManagedCluster deleted: never moved without a confirmation", spec: Spec{}, subsets: moving,
		clusters: map[string]Cluster{"east": deleted(time.Minute), "north": up(0), "west": up(0)}, now: time.Hour,
		want: []Decision{{Cluster: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Retry: t0.Add(time.Hour + HoldRetry)}, {Cluster: "west", Deliver: true}},
	})
	tests = append(tests, planCase{
		name: "moved back to the old cluster: no move", spec: relocate,
		subsets:  []Subset{{Name: "east", Home: "east", Current: "east", Phase: fleetv1.SubsetMoving, Epoch: 3, Replicas: 5}, two[1]},
		clusters: map[string]Cluster{"east": notRemoved, "west": up(0)}, now: time.Minute,
		want: []Decision{{Cluster: "east", Deliver: true, Epoch: 3}, {Cluster: "west", Deliver: true}},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.spec, tt.subsets, tt.clusters, t0.Add(tt.now))
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Decision{}, "Waiting")); diff != "" {
				t.Errorf("Plan (-want,+got):\n%s", diff)
			}
			for i, w := range tt.want {
				if w.Waiting != "" && got[i].Waiting != w.Waiting {
					t.Errorf("subset %d waiting %q, want %q", i, got[i].Waiting, w.Waiting)
				}
			}
		})
	}
}
