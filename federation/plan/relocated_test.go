package plan

import (
	"fmt"
	"testing"
)

// TestRelocatedDomains: a relocated subset keeps its domains only where
// the subsets homed in the fallback cluster name every one of them.
func TestRelocatedDomains(t *testing.T) {
	abc := []Domain{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}
	homes := []Subset{
		{Name: "east", Cluster: "east", Domains: abc},
		{Name: "west", Cluster: "west", Domains: abc[:2]},
		{Name: "west2", Cluster: "west", Domains: []Domain{{Name: "zone-d"}}},
		{Name: "north", Cluster: "north"},
	}
	for _, tc := range []struct {
		domains     []Domain
		cluster     string
		keep        bool
		wantMissing string
	}{
		{abc, "east", true, ""},
		{abc[:2], "west", true, ""},
		{[]Domain{{Name: "zone-d"}, {Name: "zone-a"}}, "west", true, ""},
		{abc, "west", false, "zone-c"},
		{abc, "north", false, "zone-a"},
		{nil, "north", true, ""},
		{abc[1:], "elsewhere", false, "zone-b"},
	} {
		got, missing := RelocatedDomains(homes, Subset{Name: "s", Domains: tc.domains}, tc.cluster)
		if missing != tc.wantMissing || (tc.keep && fmt.Sprint(got) != fmt.Sprint(tc.domains)) || (!tc.keep && got != nil) {
			t.Errorf("RelocatedDomains(%v to %s) = %v, %q; want keep=%v, missing %q", tc.domains, tc.cluster, got, missing, tc.keep, tc.wantMissing)
		}
	}
}
