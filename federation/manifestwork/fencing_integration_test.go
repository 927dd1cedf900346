//go:build integration

package manifestwork

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/testing/controlplane"
)

// TestFencingAppliesEveryGrace server-side applies the rendered
// SubsetPlacement as the work agent does (the manifest's JSON, the hub's
// field manager, forced) on a real kube-apiserver with the shipped CRD,
// through a change of spec.failover.fenceGraceSeconds to 0 and back, at
// epoch 0: every apply must be accepted and store the grace. A fencing
// rendered as {} (both fields empty) was stored by server-side apply as
// null, which the schema refuses, so the member kept the old grace.
func TestFencingAppliesEveryGrace(t *testing.T) {
	env, err := controlplane.Start("manifests/crds/fleetset.io_subsetplacements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	if err := fleetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fs := makeFleetSet("default", "mydb").subset("east", "east", nil).obj()
	for _, grace := range []int32{60, 0, 30, 0} {
		sp := east
		sp.Fencing = &fleetv1.PlacementFencing{GraceSeconds: grace}
		rendered := SubsetPlacement(fs, sp)
		raw, err := json.Marshal(rendered)
		if err != nil {
			t.Fatal(err)
		}
		live := &fleetv1.SubsetPlacement{}
		live.Namespace, live.Name = rendered.Namespace, rendered.Name
		if err := c.Patch(ctx, live, client.RawPatch(types.ApplyPatchType, raw), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			t.Fatalf("applying the placement with fenceGraceSeconds %d: %v\nmanifest: %s", grace, err, raw)
		}
		got := &fleetv1.SubsetPlacement{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(live), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Fencing == nil || got.Spec.Fencing.GraceSeconds != grace {
			t.Errorf("after applying fenceGraceSeconds %d: spec.fencing = %+v", grace, got.Spec.Fencing)
		}
	}
}
