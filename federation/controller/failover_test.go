package controller

import (
	"testing"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/failover"
)

// TestFailoverProblem: each failover phase reports its own problem, a held
// relocation as RelocationHeld, on the cluster where the subset runs now.
func TestFailoverProblem(t *testing.T) {
	s := failover.Subset{Name: "east", Home: "east"}
	for _, tc := range []struct {
		name       string
		d          failover.Decision
		spreadOnly string
		want       string // "" for no problem
	}{
		{"at home", failover.Decision{Cluster: "east", Deliver: true}, "", ""},
		{"failing over", failover.Decision{Cluster: "east", Phase: fleetv1.SubsetFailingOver, Waiting: "w"}, "", "FailingOver subset east on cluster east: w"},
		{"held", failover.Decision{Cluster: "east", Phase: fleetv1.SubsetFailingOver, Waiting: "w", Held: true}, "", "RelocationHeld subset east on cluster east: w"},
		{"failed over, spread only", failover.Decision{Cluster: "west", Phase: fleetv1.SubsetFailedOver, Epoch: 2}, "no zones",
			"FailedOver subset east on cluster west: relocated from home cluster east, epoch 2; no zones"},
		{"moving", failover.Decision{Cluster: "west", Phase: fleetv1.SubsetMoving, Waiting: "w"}, "", "Moving subset east on cluster west: w"},
		{"failing back", failover.Decision{Cluster: "west", Phase: fleetv1.SubsetFailingBack}, "",
			"FailingBack subset east on cluster west: being removed before it returns to east"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := failoverProblem(s, tc.d, tc.spreadOnly)
			got := ""
			if ok {
				got = p.Reason + " " + p.String()
			}
			if got != tc.want {
				t.Errorf("failoverProblem = %q, want %q", got, tc.want)
			}
		})
	}
}
