package tenancy

import (
	"strings"
	"testing"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

func TestPlatformLevel(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   fleetv1.PodSecurityLevel
		err    string
	}{
		{nil, fleetv1.PodSecurityBaseline, ""},
		{map[string]string{fleetv1.LabelPodSecurityLevel: "privileged"}, fleetv1.PodSecurityPrivileged, ""},
		{map[string]string{fleetv1.LabelPodSecurityLevel: "restricted"}, fleetv1.PodSecurityRestricted, ""},
		{map[string]string{fleetv1.LabelPodSecurityLevel: "lax"}, "", `label fleetset.io/pod-security-level="lax"`},
	}
	for _, tc := range cases {
		got, err := PlatformLevel("team-a", tc.labels)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "namespace team-a") {
				t.Errorf("PlatformLevel(%v) error = %v, want one containing %q", tc.labels, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("PlatformLevel(%v) = %q, %v, want %q", tc.labels, got, err, tc.want)
		}
	}
}

// TestEffectiveLevel: a FleetSet may keep or tighten the platform's level,
// never raise it.
func TestEffectiveLevel(t *testing.T) {
	const p, b, r = fleetv1.PodSecurityPrivileged, fleetv1.PodSecurityBaseline, fleetv1.PodSecurityRestricted
	cases := []struct {
		platform, requested, want fleetv1.PodSecurityLevel
	}{
		{b, "", b}, {b, b, b}, {b, r, r}, {b, p, ""},
		{r, "", r}, {r, b, ""}, {r, p, ""}, {r, r, r},
		{p, "", p}, {p, p, p}, {p, b, b},
		{b, "lax", ""},
	}
	for _, tc := range cases {
		got, err := EffectiveLevel("team-a", tc.platform, tc.requested)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "spec.podSecurityLevel") {
				t.Errorf("EffectiveLevel(%s, %s) = %q, %v, want an error naming spec.podSecurityLevel", tc.platform, tc.requested, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("EffectiveLevel(%s, %s) = %q, %v, want %q", tc.platform, tc.requested, got, err, tc.want)
		}
	}
}

func TestReserved(t *testing.T) {
	for ns, want := range map[string]string{
		"kube-system": "kube-system", "kube-public": "kube-public", "kube-node-lease": "kube-node-lease",
		"fleetset-system": "fleetset-system", "open-cluster-management": "open-cluster-management*",
		"open-cluster-management-agent": "open-cluster-management*", "platform": "platform",
		"default": "", "team-a": "", "kube-systemx": "", "tenant-kube-system": "",
	} {
		got, ok := Reserved(ns, []string{"platform"})
		if ok != (want != "") || got != want {
			t.Errorf("Reserved(%s) = %q, %v, want %q", ns, got, ok, want)
		}
	}
	if msg := ReservedRefusal("kube-system", "kube-system"); !strings.Contains(msg, "kube-system is reserved") {
		t.Errorf("ReservedRefusal = %q", msg)
	}
}
