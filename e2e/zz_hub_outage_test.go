//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetset/fleetset/e2e/framework"
)

// This file's name sorts last, so that the hub apiserver outage runs after
// every other test of the suite: OCM's registration controller and work
// agents take minutes to trust and feed back again after the hub's
// apiserver restarts (see docs/failover.md), which would slow the tests
// after it.

// TestHubOutageFencesNothing stops the hub's kube-apiserver
// (FLEETSET_E2E_HUB_OUTAGE, default 45 s; `make e2e-fencing` 3 min): every
// member loses the hub, asks its peers, finds they lost it too and holds;
// no pod is deleted, and the hub, back, relocates nothing.
func TestHubOutageFencesNothing(t *testing.T) {
	f := theFleet
	f.skipUnless(t, framework.OpStop, "hub", "kube-apiserver")
	f.skipUnless(t, framework.OpStart, "hub", "kube-apiserver")
	hubSilence(t, "hub kube-apiserver stopped", silenceFor("FLEETSET_E2E_HUB_OUTAGE", 45*time.Second),
		func() { f.do(t, framework.OpStop, "hub", "kube-apiserver") },
		func() {
			f.do(t, framework.OpStart, "hub", "kube-apiserver")
			eventually(t, 2*time.Minute, "hub apiserver back", func(ctx context.Context) (bool, string, error) {
				_, err := f.getFleetSet(ctx, "default", "none")
				return err == nil || client.IgnoreNotFound(err) == nil, errString(err), nil
			})
		})
}
