package v1alpha1

// DefaultOrdinalBlockSize is spec.topology.ordinalBlockSize, in ordinals,
// when unset (the CRD's default marker repeats it: markers cannot name a
// constant).
const DefaultOrdinalBlockSize int32 = 1000

// OrdinalBlockSizeOrDefault returns OrdinalBlockSize, or
// DefaultOrdinalBlockSize when it is 0 (an object not defaulted by the
// apiserver, e.g. in a unit test).
func (t *FleetTopology) OrdinalBlockSizeOrDefault() int32 {
	if t.OrdinalBlockSize == 0 {
		return DefaultOrdinalBlockSize
	}
	return t.OrdinalBlockSize
}

// TopologyKeyOrDefault returns key, or DefaultTopologyKey when key is empty;
// the hub and the scheduler default a FleetSet's or a SubsetPlacement's
// topologyKey with it.
func TopologyKeyOrDefault(key string) string {
	if key == "" {
		return DefaultTopologyKey
	}
	return key
}
