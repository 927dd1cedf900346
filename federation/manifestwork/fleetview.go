package manifestwork

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/apportion"
	"github.com/fleetset/fleetset/internal/envelope"
)

// FleetView renders the ConfigMap <fleetset>-fleet holding v1alpha1.FleetView:
// the subsets, the Service and (see Instances) every desired instance. It
// errors when domain shares cannot be divided or the view cannot be encoded.
func FleetView(fs *fleetv1.FleetSet, subsets []Subset) (*corev1.ConfigMap, error) {
	v := fleetv1.FleetView{FleetSet: fs.Name, Namespace: fs.Namespace, Replicas: fs.Spec.Replicas, Subsets: []fleetv1.FleetViewSubset{},
		ServiceName: envelope.ServiceName(fs)}
	for _, sp := range subsets {
		for _, l := range sp.Leaders {
			v.Leaders = append(v.Leaders, fleetv1.LeaderStatus{Name: l, Subset: sp.Name, Cluster: sp.Cluster})
		}
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
	var err error
	if v.Instances, err = Instances(fs, subsets); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding fleet view: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      envelope.FleetViewName(fs.Name),
			Namespace: fs.Namespace,
			Labels:    ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name}),
		},
		Data: map[string]string{fleetv1.FleetViewKey: string(b)},
	}, nil
}

// Instances returns every desired instance of the fleet, sorted by ordinal:
// per subset, ordinals [OrdinalStart, OrdinalStart+Replicas) with name,
// cluster, DNS name <pod>.<service>.<namespace>.svc, role, whether it runs
// on the claims it was created with (and where they are if not), and the domain
// fleetset-scheduler pins the ordinal to (apportion.DomainSeats of the
// SubsetPlacement the hub delivers). It returns nil for a fleet over
// v1alpha1.MaxFleetViewInstances replicas, and an error for shares the seat
// sequence cannot divide.
func Instances(fs *fleetv1.FleetSet, subsets []Subset) ([]fleetv1.FleetViewInstance, error) {
	total := int64(0)
	for _, sp := range subsets {
		total += int64(max(sp.Replicas, 0))
	}
	if fs.Spec.Replicas > fleetv1.MaxFleetViewInstances || total > fleetv1.MaxFleetViewInstances || total == 0 {
		return nil, nil
	}
	svc := envelope.ServiceName(fs)
	out := make([]fleetv1.FleetViewInstance, 0, total)
	for _, sp := range subsets {
		seats, err := apportion.DomainSeats(SubsetPlacement(fs, sp).Spec.Domains)
		if err != nil {
			return nil, fmt.Errorf("subset %s: %w", sp.Name, err)
		}
		sts := envelope.StatefulSetName(fs.Name, sp.Name)
		for k := int32(0); k < sp.Replicas; k++ {
			ordinal := sp.OrdinalStart + k
			name := sts + "-" + strconv.FormatInt(int64(ordinal), 10)
			in := fleetv1.FleetViewInstance{
				Name:    name,
				Ordinal: ordinal,
				Subset:  sp.Name,
				Cluster: sp.Cluster,
				DNSName: name + "." + svc + "." + fs.Namespace + ".svc",
				Role:    sp.Roles[name],
			}
			if sp.ClaimsLeft != nil && k < sp.ClaimsLeft.Replicas {
				in.Claims, in.OldClaimsCluster = fleetv1.ClaimsFresh, sp.ClaimsLeft.LeftIn
			}
			if seats != nil {
				d, err := seats.NameOf(int64(k))
				if err != nil {
					return nil, fmt.Errorf("subset %s: ordinal %d: %w", sp.Name, ordinal, err)
				}
				in.Domain = d
			}
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b fleetv1.FleetViewInstance) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	return out, nil
}
