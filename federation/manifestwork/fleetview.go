package manifestwork

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
)

// FleetView renders the ConfigMap <fleetset>-fleet holding v1alpha1.FleetView
// for every subset in subsets, under key v1alpha1.FleetViewKey.
func FleetView(fs *fleetv1.FleetSet, subsets []plan.Subset) (*corev1.ConfigMap, error) {
	v := fleetv1.FleetView{FleetSet: fs.Name, Namespace: fs.Namespace, Replicas: fs.Spec.Replicas, Subsets: []fleetv1.FleetViewSubset{}}
	for _, sp := range subsets {
		v.Subsets = append(v.Subsets, fleetv1.FleetViewSubset{
			Name:         sp.Name,
			Cluster:      sp.Cluster,
			OrdinalStart: sp.OrdinalStart,
			OrdinalEnd:   sp.OrdinalStart + sp.BlockSize,
			Replicas:     sp.Replicas,
			Partition:    sp.Partition,
			Epoch:        sp.Epoch,
		})
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding fleet view: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      FleetViewName(fs.Name),
			Namespace: fs.Namespace,
			Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name}),
		},
		Data: map[string]string{fleetv1.FleetViewKey: string(b)},
	}, nil
}
