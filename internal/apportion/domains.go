package apportion

import (
	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// DomainShares returns the shares of domains, in the same order; nil for none.
func DomainShares(ds []fleetv1.DomainShare) []Share {
	if len(ds) == 0 {
		return nil
	}
	out := make([]Share, len(ds))
	for i, d := range ds {
		out[i] = Share{Name: d.Name, Replicas: d.Replicas}
	}
	return out
}

// SubsetShares returns the shares of a FleetSet's subsets, in the same order.
func SubsetShares(ss []fleetv1.Subset) []Share {
	out := make([]Share, len(ss))
	for i, s := range ss {
		out[i] = Share{Name: s.Name, Replicas: s.Replicas, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
	}
	return out
}

// DomainSeats returns the ordinal → domain map of a SubsetPlacement's
// spec.domains: seat k names the domain of ordinal offset k. nil for none.
// fleetset-scheduler (placing pods) and the hub's fleet view both call it.
func DomainSeats(ds []fleetv1.DomainShare) (*Seats, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	return NewSeats("spec.domains", DomainShares(ds))
}
