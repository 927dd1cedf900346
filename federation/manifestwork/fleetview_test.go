package manifestwork

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/federation/plan"
	"github.com/fleetset/fleetset/internal/apportion"
)

// decodeView returns the FleetView the ConfigMap of FleetView(fs, subsets)
// holds.
func decodeView(t *testing.T, fs *fleetv1.FleetSet, subsets []Subset) fleetv1.FleetView {
	t.Helper()
	cm, err := FleetView(fs, subsets)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name != FleetViewName(fs.Name) {
		t.Errorf("ConfigMap name = %q, want %q", cm.Name, FleetViewName(fs.Name))
	}
	var v fleetv1.FleetView
	if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFleetView(t *testing.T) {
	fs := makeFleetSet("db", "mydb").obj()
	got := decodeView(t, fs, []Subset{east, west})
	in := func(subset string, ordinal int32, domain string) fleetv1.FleetViewInstance {
		name := "mydb-" + subset + "-" + strconv.Itoa(int(ordinal))
		return fleetv1.FleetViewInstance{Name: name, Ordinal: ordinal, Subset: subset, Cluster: subset, Domain: domain, DNSName: name + ".mydb.db.svc"}
	}
	want := fleetv1.FleetView{FleetSet: "mydb", Namespace: "db", Replicas: 9, ServiceName: "mydb",
		Subsets: []fleetv1.FleetViewSubset{
			{Name: "east", Cluster: "east", OrdinalStart: 0, OrdinalEnd: 1000, Replicas: 5, Partition: 2},
			{Name: "west", Cluster: "west", OrdinalStart: 1000, OrdinalEnd: 2000, Replicas: 4},
		},
		// east: even shares, seats a, b, c, a, b. west: zone-a 2 (an int,
		// first), then zone-c 20% and zone-b (unset: the other 80%) of the
		// 2 left, 0.4 and 1.6: b, b (the seat sequence, docs/scheduler.md).
		Instances: []fleetv1.FleetViewInstance{
			in("east", 0, "zone-a"), in("east", 1, "zone-b"), in("east", 2, "zone-c"), in("east", 3, "zone-a"), in("east", 4, "zone-b"),
			in("west", 1000, "zone-a"), in("west", 1001, "zone-a"), in("west", 1002, "zone-b"), in("west", 1003, "zone-b"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fleet view (-want,+got):\n%s", diff)
	}
}

// TestFleetViewInstancesHoldTheDivision: for FleetSets planned by the hub
// (plan.For), with blocks out of spec order, int, percent and unset shares
// listed out of name order, a subset without domains and a custom Service,
// the fleet view lists every desired instance once, by ordinal; each
// subset's first k instances hold the division of k over its domains
// (apportion.Divide), and all of them the hub's division.
func TestFleetViewInstancesHoldTheDivision(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	fs := makeFleetSet("prod", "kv").serviceName("kv-peers").obj()
	fs.Spec.Topology.Subsets = []fleetv1.Subset{
		{Name: "east", Cluster: "c-east", Replicas: pct("50%"), Domains: []fleetv1.DomainShare{
			{Name: "zone-c", Replicas: num(2)}, {Name: "zone-b", Replicas: pct("70%")}, {Name: "zone-a"}}},
		{Name: "west", Cluster: "c-west", Domains: []fleetv1.DomainShare{{Name: "w-2", Replicas: pct("60%")}, {Name: "w-1", Replicas: pct("40%")}}},
		{Name: "north", Cluster: "c-north"},
	}
	for _, replicas := range []int32{7, 23, 100, 400} {
		t.Run(fmt.Sprint(replicas), func(t *testing.T) {
			fs.Spec.Replicas = replicas
			// east keeps a block after west's: the instances still come by ordinal.
			subsets, problems, err := plan.For(fs, map[string]int32{"east": 2000, "west": 0, "north": 1000})
			if err != nil || len(problems) > 0 {
				t.Fatalf("plan.For: %v %v", err, problems)
			}
			v := decodeView(t, fs, fromPlan(subsets))
			if v.ServiceName != "kv-peers" {
				t.Errorf("serviceName = %q, want kv-peers", v.ServiceName)
			}
			if len(v.Instances) != int(replicas) {
				t.Fatalf("%d instances, want %d", len(v.Instances), replicas)
			}
			byName := map[string]plan.Subset{}
			for _, sp := range subsets {
				byName[sp.Name] = sp
			}
			specDomains := map[string][]fleetv1.DomainShare{}
			for _, s := range fs.Spec.Topology.Subsets {
				specDomains[s.Name] = s.Domains
			}
			perDomain := map[string]map[string]int32{}
			for i, in := range v.Instances {
				if i > 0 && in.Ordinal <= v.Instances[i-1].Ordinal {
					t.Errorf("instance %d (ordinal %d) after ordinal %d: not sorted by ordinal", i, in.Ordinal, v.Instances[i-1].Ordinal)
				}
				sp := byName[in.Subset]
				if in.Ordinal < sp.OrdinalStart || in.Ordinal >= sp.OrdinalStart+sp.Replicas || in.Cluster != sp.Cluster {
					t.Errorf("%+v: not a desired instance of subset %s on %s, ordinals [%d,%d)", in, sp.Name, sp.Cluster, sp.OrdinalStart, sp.OrdinalStart+sp.Replicas)
				}
				pod := fmt.Sprintf("kv-%s-%d", sp.Name, in.Ordinal)
				if in.Name != pod || in.DNSName != pod+".kv-peers.prod.svc" {
					t.Errorf("ordinal %d: name %q, dns %q; want %q, %q", in.Ordinal, in.Name, in.DNSName, pod, pod+".kv-peers.prod.svc")
				}
				if perDomain[sp.Name] == nil {
					perDomain[sp.Name] = map[string]int32{}
				}
				perDomain[sp.Name][in.Domain]++
				if ds := specDomains[sp.Name]; len(ds) > 0 {
					k := in.Ordinal - sp.OrdinalStart + 1
					div, err := apportion.Divide(k, apportion.DomainShares(ds))
					if err != nil {
						t.Fatal(err)
					}
					want := map[string]int32{}
					for _, a := range div.Assignments {
						if a.Replicas > 0 {
							want[a.Name] = a.Replicas
						}
					}
					if diff := cmp.Diff(want, perDomain[sp.Name]); diff != "" {
						t.Fatalf("subset %s: first %d instances differ from the division of %d (-division,+view):\n%s", sp.Name, k, k, diff)
					}
				}
			}
			for _, sp := range subsets {
				division := map[string]int32{}
				for _, d := range sp.Domains {
					if d.Replicas > 0 {
						division[d.Name] = d.Replicas
					}
				}
				if len(sp.Domains) == 0 && sp.Replicas > 0 {
					division[""] = sp.Replicas
				}
				got := perDomain[sp.Name]
				if got == nil {
					got = map[string]int32{}
				}
				if diff := cmp.Diff(division, got); diff != "" {
					t.Errorf("subset %s: instances per domain differ from the hub's division (-division,+view):\n%s", sp.Name, diff)
				}
			}
		})
	}
}

// TestFleetViewInstancesBound: the view lists up to MaxFleetViewInstances
// instances, and none beyond (the subsets still describe them); the
// ConfigMap stays well under its 1 MiB limit.
func TestFleetViewInstancesBound(t *testing.T) {
	for _, tt := range []struct {
		replicas int32
		want     int
	}{{fleetv1.MaxFleetViewInstances, fleetv1.MaxFleetViewInstances}, {fleetv1.MaxFleetViewInstances + 1, 0}} {
		fs := makeFleetSet("database-production", "orders").subset("east", "cluster-east", nil, "zone-a", "zone-b", "zone-c").
			subset("west", "cluster-west", nil, "zone-a", "zone-b", "zone-c").obj()
		fs.Spec.Replicas = tt.replicas
		subsets, _, err := plan.For(fs, nil)
		if err != nil {
			t.Fatal(err)
		}
		cm, err := FleetView(fs, fromPlan(subsets))
		if err != nil {
			t.Fatal(err)
		}
		var v fleetv1.FleetView
		if err := json.Unmarshal([]byte(cm.Data[fleetv1.FleetViewKey]), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Instances) != tt.want || len(v.Subsets) != 2 {
			t.Errorf("replicas %d: %d instances, %d subsets; want %d, 2", tt.replicas, len(v.Instances), len(v.Subsets), tt.want)
		}
		b, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Errorf("replicas %d: the ConfigMap is %d bytes, over 1 MiB", tt.replicas, len(b))
		}
		t.Logf("replicas %d: ConfigMap %d bytes encoded", tt.replicas, len(b))
	}
}
