package tenancy

import (
	"fmt"
	"slices"
	"strings"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// strictness orders the Pod Security levels, most permissive first.
var strictness = map[fleetv1.PodSecurityLevel]int{
	fleetv1.PodSecurityPrivileged: 0,
	fleetv1.PodSecurityBaseline:   1,
	fleetv1.PodSecurityRestricted: 2,
}

// PlatformLevel returns the Pod Security level the platform team set for a
// hub namespace, given that namespace's name and labels: the value of
// v1alpha1.LabelPodSecurityLevel, or v1alpha1.DefaultPodSecurityLevel when
// the label is absent. It returns an error naming the namespace and the
// label when the value is not a level.
func PlatformLevel(namespace string, labels map[string]string) (fleetv1.PodSecurityLevel, error) {
	v, ok := labels[fleetv1.LabelPodSecurityLevel]
	if !ok {
		return fleetv1.DefaultPodSecurityLevel, nil
	}
	if _, known := strictness[fleetv1.PodSecurityLevel(v)]; !known {
		return "", fmt.Errorf("namespace %s: label %s=%q is not a Pod Security level (privileged, baseline, restricted): nothing is delivered from this namespace until the platform team fixes it",
			namespace, fleetv1.LabelPodSecurityLevel, v)
	}
	return fleetv1.PodSecurityLevel(v), nil
}

// EffectiveLevel returns the level a FleetSet's pods run at, given the
// platform's level for its namespace and the FleetSet's own
// spec.podSecurityLevel (requested; "" when unset): requested when it is
// as strict as platform or stricter, platform when requested is unset. A
// requested level more permissive than platform (or unknown) is an error
// naming spec.podSecurityLevel and the namespace's level: a FleetSet never
// raises what the platform team allows.
func EffectiveLevel(namespace string, platform, requested fleetv1.PodSecurityLevel) (fleetv1.PodSecurityLevel, error) {
	if requested == "" {
		return platform, nil
	}
	r, known := strictness[requested]
	if !known {
		return "", fmt.Errorf("spec.podSecurityLevel: %q is not a Pod Security level", requested)
	}
	if r < strictness[platform] {
		return "", fmt.Errorf("spec.podSecurityLevel: %q is more permissive than %q, the level the platform team allows in namespace %s (its label %s, default %s): a FleetSet may only keep or tighten it",
			requested, platform, namespace, fleetv1.LabelPodSecurityLevel, fleetv1.DefaultPodSecurityLevel)
	}
	return requested, nil
}

// Reserved reports whether hub namespace may not hold delivered FleetSets:
// it is one of v1alpha1.ReservedNamespaces or extra (the hub's
// --reserved-namespaces), an entry ending in "*" matching by prefix. It
// returns the matching entry.
func Reserved(namespace string, extra []string) (string, bool) {
	for _, r := range slices.Concat(fleetv1.ReservedNamespaces, extra) {
		if p, isPrefix := strings.CutSuffix(r, "*"); (isPrefix && strings.HasPrefix(namespace, p)) || namespace == r {
			return r, true
		}
	}
	return "", false
}

// ReservedRefusal is the message of a FleetSet in reserved namespace
// namespace (entry is what Reserved matched).
func ReservedRefusal(namespace, entry string) string {
	return fmt.Sprintf("metadata.namespace: %s is reserved (%s): a FleetSet's objects go to the member namespace of the same name, which belongs to the platform; nothing is delivered from it. Create the FleetSet in a tenant namespace", namespace, entry)
}
