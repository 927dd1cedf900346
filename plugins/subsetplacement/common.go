package subsetplacement

import (
	v1 "k8s.io/api/core/v1"

	"github.com/fleetset/fleetset/plugins/ordinaltarget"
)

// nodeMismatch returns why the node is not allowed for t ("" when it is):
// outside the placement's domains (or without the topology key), outside
// the ordinal's domain when strict, or not matching the nodeSelector.
// Filter and the node queueing hint use it; PreFilter's nodeIndex selects
// the same nodes.
func nodeMismatch(t *ordinaltarget.Target, node *v1.Node) string {
	domain, ok := node.Labels[t.TopologyKey]
	switch {
	case t.Strict && ok && domain == t.Domain:
		// The ordinal's domain is one of the placement's: one comparison.
	case !ok || !inDomains(t, domain):
		return ErrReasonDomainNotAllowed
	case t.Strict:
		return ErrReasonOrdinalDomain
	}
	if t.NodeSelector != nil {
		if match, err := t.NodeSelector.Match(node); err != nil || !match {
			return ErrReasonNodeSelector
		}
	}
	return ""
}

// inDomains reports whether domain is one of the target's domains; a
// placement without domains (spread only) allows every value.
func inDomains(t *ordinaltarget.Target, domain string) bool {
	if t.Domains == nil {
		return true
	}
	_, ok := t.Domains[domain]
	return ok
}
