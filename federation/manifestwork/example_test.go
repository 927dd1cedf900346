package manifestwork_test

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/manifestwork"
	"github.com/fleetset/fleetset/federation/plan"
)

// docs/hub.md's worked example after division: east holds 5 instances (ordinals 0-4,
// the lowest 2 kept on the old revision), west 4 (ordinals 1000-1003). Each
// member cluster gets one ManifestWork, named after the FleetSet, in the
// namespace named after the cluster.
func ExampleWorks() {
	fs := &fleetv1.FleetSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mydb"},
		Spec: fleetv1.FleetSetSpec{
			Replicas: 9,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mydb"}},
			Topology: fleetv1.FleetTopology{Subsets: []fleetv1.Subset{
				{Name: "east", Cluster: "east", Replicas: ptr.To(intstr.FromString("60%"))},
				{Name: "west", Cluster: "west", Replicas: ptr.To(intstr.FromString("40%"))},
			}},
		},
	}
	subsets := []manifestwork.Subset{
		{Name: "east", Cluster: "east", OrdinalStart: 0, BlockSize: 1000, Replicas: 5, Partition: 2,
			Domains: []plan.Domain{{Name: "zone-a", Replicas: 2}, {Name: "zone-b", Replicas: 2}, {Name: "zone-c", Replicas: 1}}},
		{Name: "west", Cluster: "west", OrdinalStart: 1000, BlockSize: 1000, Replicas: 4,
			Domains: []plan.Domain{{Name: "zone-a", Replicas: 2}, {Name: "zone-b", Replicas: 1}, {Name: "zone-c", Replicas: 1}}},
	}
	works, err := manifestwork.Works(fs, subsets, nil)
	if err != nil {
		panic(err)
	}
	for _, w := range works {
		fmt.Printf("ManifestWork %s/%s:\n", w.Namespace, w.Name)
		for _, m := range w.Spec.Workload.Manifests {
			var o struct {
				Kind     string
				Metadata struct{ Name string }
				Spec     struct {
					Replicas       *int32
					Ordinals       *struct{ Start int32 }
					UpdateStrategy *struct {
						RollingUpdate *struct{ Partition int32 }
					}
				}
			}
			_ = json.Unmarshal(m.Raw, &o)
			fmt.Printf("  %s %s", o.Kind, o.Metadata.Name)
			if o.Kind == "StatefulSet" {
				fmt.Printf(" replicas=%d ordinals.start=%d partition=%d", *o.Spec.Replicas, o.Spec.Ordinals.Start, o.Spec.UpdateStrategy.RollingUpdate.Partition)
			}
			fmt.Println()
		}
	}
	// Output:
	// ManifestWork east/default.mydb:
	//   Service mydb
	//   ConfigMap mydb-fleet
	//   SubsetPlacement mydb-east
	//   StatefulSet mydb-east replicas=5 ordinals.start=0 partition=2
	// ManifestWork west/default.mydb:
	//   Service mydb
	//   ConfigMap mydb-fleet
	//   SubsetPlacement mydb-west
	//   StatefulSet mydb-west replicas=4 ordinals.start=1000 partition=0
}
