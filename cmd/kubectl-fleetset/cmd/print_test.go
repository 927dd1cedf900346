package cmd

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var now = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// failedOver is the sample at 9 replicas after east was lost: subset east
// runs on west (epoch 1) in its own domains (west's subset names them), the
// hub no longer renews east's lease.
func failedOver() *Status {
	fs := withStatus(sample(9),
		fleetv1.SubsetStatus{Name: "east", Cluster: "west", OrdinalStart: 0, Replicas: 5, Partition: 2, Epoch: 1, Domains: domains(2, 2, 1),
			Failover: fleetv1.SubsetFailedOver, ReadyReplicas: 5, UpdatedReplicas: 3, FleetRevision: "5d1c0a9b7e"},
		fleetv1.SubsetStatus{Name: "west", Cluster: "west", OrdinalStart: 1000, Replicas: 4, Domains: domains(2, 1, 1),
			ReadyReplicas: 4, UpdatedReplicas: 4, FleetRevision: "5d1c0a9b7e"})
	fs.Generation = 2
	fs.Status.ObservedGeneration = 2
	fs.Status.Replicas, fs.Status.ReadyReplicas, fs.Status.UpdatedReplicas = 9, 9, 7
	fs.Status.UpdateRevision, fs.Status.CurrentRevision = "5d1c0a9b7e", "5d1c0a9b7e"
	fs.Status.Conditions = []metav1.Condition{
		{Type: fleetv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: fleetv1.ReasonFailedOver,
			Message: "subset east on cluster west: relocated from home cluster east, epoch 1"},
		{Type: fleetv1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonDegraded, Message: "see condition Degraded"},
		{Type: fleetv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: fleetv1.ReasonComplete},
	}
	st := &Status{FleetSet: fs, Subsets: SubsetRows(fs), Now: now,
		HubLeases: map[string]LeaseState{"west": {RenewTime: now.Add(-4 * time.Second), Duration: 15 * time.Second}}}
	return st
}

func TestPrint(t *testing.T) {
	cases := []struct {
		name string
		st   func() *Status
		want string
	}{
		{
			name: "failed over, no members: fallback cluster shown as home→fallback, in its own domains",
			st:   failedOver,
			want: `Name:       mydb
Namespace:  default
Replicas:   9 desired, 9 current, 9 ready, 7 updated
Revision:   update 5d1c0a9b7e, current 5d1c0a9b7e
Conditions:
  Ready         False   Degraded     see condition Degraded
  Progressing   False   Complete     -
  Degraded      True    FailedOver   subset east on cluster west: relocated from home cluster east, epoch 1

SUBSET   CLUSTER     ORDINALS      REPLICAS   DOMAINS                      READY   UPDATED   PARTITION   REVISION     ROLLOUT   EPOCH   FAILOVER     LEASE
east     east→west   [0,5)         5          zone-a:2 zone-b:2 zone-c:1   5       3         2           5d1c0a9b7e   -         1       FailedOver   4s
west     west        [1000,1004)   4          zone-a:2 zone-b:1 zone-c:1   4       4         0           5d1c0a9b7e   -         0       -            4s
`,
		},
		{
			name: "heartbeats: the cut-off member fenced, its peer in contact, one cluster without a member component",
			st: func() *Status {
				st := failedOver()
				st.Heartbeats = map[string]HeartbeatState{
					"east": {LeaseState: LeaseState{RenewTime: now.Add(-90 * time.Second), Duration: 15 * time.Second}, State: "Fenced",
						Reason: "cut off: no contact with the hub for 20s while peer(s) west reach it"},
					"west":  {LeaseState: LeaseState{RenewTime: now.Add(-3 * time.Second), Duration: 15 * time.Second}, State: "InContact", Reason: "reached the hub 0s ago"},
					"north": {LeaseState: LeaseState{Missing: true}},
				}
				return st
			},
			want: `Name:       mydb
Namespace:  default
Replicas:   9 desired, 9 current, 9 ready, 7 updated
Revision:   update 5d1c0a9b7e, current 5d1c0a9b7e
Conditions:
  Ready         False   Degraded     see condition Degraded
  Progressing   False   Complete     -
  Degraded      True    FailedOver   subset east on cluster west: relocated from home cluster east, epoch 1

SUBSET   CLUSTER     ORDINALS      REPLICAS   DOMAINS                      READY   UPDATED   PARTITION   REVISION     ROLLOUT   EPOCH   FAILOVER     LEASE
east     east→west   [0,5)         5          zone-a:2 zone-b:2 zone-c:1   5       3         2           5d1c0a9b7e   -         1       FailedOver   4s
west     west        [1000,1004)   4          zone-a:2 zone-b:1 zone-c:1   4       4         0           5d1c0a9b7e   -         0       -            4s

FENCING   HEARTBEAT       STATE       WHY
east      90s (expired)   Fenced      cut off: no contact with the hub for 20s while peer(s) west reach it
north     none            -           no member heartbeat: fencing is off there, and the hub never relocates from it
west      3s              InContact   reached the hub 0s ago
`,
		},
		{
			name: "members: pods by ordinal, an unreachable member, a cluster not given, leases expired, missing and unreadable",
			st: func() *Status {
				st := failedOver()
				st.Subsets[0].Cluster = "east" // failing over: still on its home cluster
				st.Subsets[0].Failover = fleetv1.SubsetFailingOver
				st.Subsets[0].Domains, st.Subsets[0].DomainsComputed = domains(2, 2, 1), false
				st.Subsets = append(st.Subsets, SubsetRow{Name: "south", Home: "south", Cluster: "south", OrdinalStart: 2000, Domains: domains(0), DomainsComputed: true},
					SubsetRow{Name: "north", Home: "north", Cluster: "north", OrdinalStart: 3000})
				st.HubLeases["east"] = LeaseState{RenewTime: now.Add(-90 * time.Second), Duration: 15 * time.Second}
				st.HubLeases["south"] = LeaseState{Missing: true}
				st.HubLeases["north"] = LeaseState{Err: apierrors.NewForbidden(schema.GroupResource{Group: "work.open-cluster-management.io", Resource: "manifestworks"}, "fleetset-resync", errors.New("denied"))}
				st.Members = []MemberReport{
					{Cluster: "east", Err: &url.Error{Op: "Get", URL: "https://127.0.0.1:31021/api/v1/namespaces/default/pods",
						Err: errors.New("dial tcp 127.0.0.1:31021: connect: connection refused")}},
					{Cluster: "west", Pods: 2, Lease: LeaseState{RenewTime: now.Add(-2 * time.Second), Duration: 15 * time.Second}},
					{Cluster: "south", Pods: 0, Lease: LeaseState{Missing: true}, Notes: []string{"zones unknown: forbidden"}},
					{Cluster: "up", Err: errors.New("kubeconfig up.yaml: stat up.yaml: no such file or directory")},
				}
				st.Pods = []PodRow{
					{Cluster: "west", Zone: "zone-a", Node: "west-a-0", Pod: "mydb-east-0", Ordinal: 0, Ready: true},
					{Cluster: "west", Pod: "mydb-west-1000", Ordinal: 1000},
				}
				return st
			},
			want: `Name:       mydb
Namespace:  default
Replicas:   9 desired, 9 current, 9 ready, 7 updated
Revision:   update 5d1c0a9b7e, current 5d1c0a9b7e
Conditions:
  Ready         False   Degraded     see condition Degraded
  Progressing   False   Complete     -
  Degraded      True    FailedOver   subset east on cluster west: relocated from home cluster east, epoch 1

SUBSET   CLUSTER   ORDINALS      REPLICAS   DOMAINS                      READY   UPDATED   PARTITION   REVISION     ROLLOUT   EPOCH   FAILOVER      LEASE
east     east      [0,5)         5          zone-a:2 zone-b:2 zone-c:1   5       3         2           5d1c0a9b7e   -         1       FailingOver   90s (expired)
west     west      [1000,1004)   4          zone-a:2 zone-b:1 zone-c:1   4       4         0           5d1c0a9b7e   -         0       -             4s
south*   south     [2000,2000)   0          zone-a:0                     -       -         0           -            -         0       -             none
north*   north     [3000,3000)   0          spread                       -       -         0           -            -         0       -             -
* not in the FleetSet's status yet: computed here with the hub's division (federation/plan)
resync lease of cluster north: manifestworks.work.open-cluster-management.io "fleetset-resync" is forbidden: denied

CLUSTER   ZONE     NODE       POD              ORDINAL   READY
west      zone-a   west-a-0   mydb-east-0      0         True
west      <none>   <none>     mydb-west-1000   1000      False

MEMBER   PODS   MEMBER LEASE   PROBLEM
east     -      -              unreachable: Get "https://127.0.0.1:31021/api/v1/namespaces/default/pods": dial tcp 127.0.0.1:31021: connect: connection refused
west     2      2s             -
south    0      none           zones unknown: forbidden
up       -      -              kubeconfig up.yaml: stat up.yaml: no such file or directory
north    -      -              not given (--member or --member-context): its pods are not listed
`,
		},
		{
			name: "roles: the leader in the header, each pod's role",
			st: func() *Status {
				st := failedOver()
				st.FleetSet.Spec.Roles = []fleetv1.Role{{Name: "primary", IsLeader: true}, {Name: "replica"}}
				st.FleetSet.Status.Leader = &fleetv1.LeaderStatus{Name: "mydb-west-1000", Subset: "west", Cluster: "west"}
				st.FleetSet.Status.RequestedSwitchover = &fleetv1.RequestedSwitchoverStatus{To: "mydb-east-0", Pod: "mydb-west-1000", Subset: "west", Cluster: "west",
					RequestedAt: metav1.NewTime(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)), Failed: "mydb-west-1000: exit status 1"}
				st.Members = []MemberReport{{Cluster: "west", Pods: 2, Lease: LeaseState{RenewTime: now.Add(-2 * time.Second), Duration: 15 * time.Second}}}
				st.Pods = []PodRow{
					{Cluster: "west", Zone: "zone-a", Node: "west-a-0", Pod: "mydb-east-0", Ordinal: 0, Ready: true, Role: "replica"},
					{Cluster: "west", Zone: "zone-b", Node: "west-b-0", Pod: "mydb-west-1000", Ordinal: 1000, Ready: true, Role: "primary"},
				}
				return st
			},
			want: `Name:       mydb
Namespace:  default
Replicas:   9 desired, 9 current, 9 ready, 7 updated
Revision:   update 5d1c0a9b7e, current 5d1c0a9b7e
Leader:     mydb-west-1000 (subset west, cluster west)
Switchover: asked of mydb-west-1000 (cluster west) to instance mydb-east-0 since 2026-11-29T07:00:00Z; the action fails: mydb-west-1000: exit status 1
Conditions:
  Ready         False   Degraded     see condition Degraded
  Progressing   False   Complete     -
  Degraded      True    FailedOver   subset east on cluster west: relocated from home cluster east, epoch 1

SUBSET   CLUSTER     ORDINALS      REPLICAS   DOMAINS                      READY   UPDATED   PARTITION   REVISION     ROLLOUT   EPOCH   FAILOVER     LEASE
east     east→west   [0,5)         5          zone-a:2 zone-b:2 zone-c:1   5       3         2           5d1c0a9b7e   -         1       FailedOver   4s
west     west        [1000,1004)   4          zone-a:2 zone-b:1 zone-c:1   4       4         0           5d1c0a9b7e   -         0       -            4s

CLUSTER   ZONE     NODE       POD              ORDINAL   READY   ROLE
west      zone-a   west-a-0   mydb-east-0      0         True    replica
west      zone-b   west-b-0   mydb-west-1000   1000      True    primary

MEMBER   PODS   MEMBER LEASE   PROBLEM
west     2      2s             -
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Print(&b, tc.st()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s\ngot:\n%s", diff, b.String())
			}
		})
	}
}
