package manifestwork

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/api/utils/work/v1/workvalidator"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// report is what a member publishes: hostname → IP, all serving.
func report(endpoints map[string]string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}
	for h, ip := range endpoints {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Hostname: ptr.To(h),
			Conditions: discoveryv1.EndpointConditions{Serving: ptr.To(true), Terminating: ptr.To(false)}})
	}
	return s
}

// resolved returns hostname → addresses over slices, as CoreDNS would
// answer for them.
func resolved(slices []*discoveryv1.EndpointSlice) map[string][]string {
	out := map[string][]string{}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			out[*ep.Hostname] = append(out[*ep.Hostname], ep.Addresses...)
		}
	}
	return out
}

func TestRecordsDeliverOtherClustersInstances(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	reports := map[string]*discoveryv1.EndpointSlice{
		"east": report(map[string]string{"mydb-east-0": "10.1.0.1", "mydb-east-1": "10.1.0.2"}),
		"west": report(map[string]string{"mydb-west-1000": "10.2.0.1"}),
	}
	r := AcceptRecords(fs, []Subset{east, west}, reports)
	if r.Len() != 3 || r.Rejected != 0 {
		t.Fatalf("accepted %d, rejected %d; want 3, 0", r.Len(), r.Rejected)
	}
	inWest := resolved(r.Slices(fs, "west"))
	if fmt.Sprint(inWest) != "map[mydb-east-0:[10.1.0.1] mydb-east-1:[10.1.0.2]]" {
		t.Errorf("west's records = %v, want east's two instances only", inWest)
	}
	inEast := resolved(r.Slices(fs, "east"))
	if fmt.Sprint(inEast) != "map[mydb-west-1000:[10.2.0.1]]" {
		t.Errorf("east's records = %v, want west's instance only", inEast)
	}
	// Each slice is one of the governing Service, not the EndpointSlice
	// controller's, and Ready follows publishNotReadyAddresses.
	for _, s := range r.Slices(fs, "west") {
		if errs := metav1validation.ValidateLabels(s.Labels, field.NewPath("labels")); len(errs) > 0 {
			t.Errorf("slice %s: %v", s.Name, errs.ToAggregate())
		}
		if s.Labels[discoveryv1.LabelServiceName] != envelope.ServiceName(fs) || s.Labels[discoveryv1.LabelManagedBy] != fleetv1.FleetDNSManagedBy {
			t.Errorf("slice %s labels %v", s.Name, s.Labels)
		}
		for _, ep := range s.Endpoints {
			if !*ep.Conditions.Ready {
				t.Errorf("%s not ready with publishNotReadyAddresses", *ep.Hostname)
			}
		}
	}
}

func TestRecordsRefuseStaleAndForgedReports(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	// east was relocated to north: east's last report (from before its
	// cut) names the same instances as north's new one.
	relocated := east
	relocated.Cluster = "north"
	reports := map[string]*discoveryv1.EndpointSlice{
		"east":  report(map[string]string{"mydb-east-0": "10.1.0.1", "mydb-east-1": "10.1.0.2"}),
		"north": report(map[string]string{"mydb-east-0": "10.3.0.7"}),
		// west claims an instance of east's block, one outside its own
		// block, a name of another FleetSet, and an IPv6 address.
		"west": report(map[string]string{"mydb-west-1000": "10.2.0.1", "mydb-east-1": "10.2.0.9", "mydb-west-2000": "10.2.0.8",
			"other-west-1001": "10.2.0.7", "mydb-west-1001": "fd00::1"}),
	}
	r := AcceptRecords(fs, []Subset{relocated, west}, reports)
	got := resolved(r.Slices(fs, "member-x"))
	want := "map[mydb-east-0:[10.3.0.7] mydb-west-1000:[10.2.0.1]]"
	if fmt.Sprint(got) != want {
		t.Errorf("records = %v, want %v", got, want)
	}
	if r.Rejected != 6 {
		t.Errorf("rejected %d endpoints, want 6 (2 stale of east, 4 of west's)", r.Rejected)
	}
	// north, which runs mydb-east-0 now, gets no remote record of it.
	if n := resolved(r.Slices(fs, "north")); len(n["mydb-east-0"]) != 0 {
		t.Errorf("north's remote records name its own instance: %v", n)
	}
}

func TestRecordsReadiness(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).obj()
	s := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{
		{Addresses: []string{"10.1.0.1"}, Hostname: ptr.To("mydb-east-0"), Conditions: discoveryv1.EndpointConditions{Serving: ptr.To(false), Terminating: ptr.To(false)}},
		{Addresses: []string{"10.1.0.2"}, Hostname: ptr.To("mydb-east-1"), Conditions: discoveryv1.EndpointConditions{Serving: ptr.To(true), Terminating: ptr.To(true)}},
	}}
	r := AcceptRecords(fs, []Subset{east}, map[string]*discoveryv1.EndpointSlice{"east": s})
	for _, ep := range r.Slices(fs, "west")[0].Endpoints {
		if !*ep.Conditions.Ready {
			t.Errorf("%s: Ready false; the governing Service publishes not-ready addresses", *ep.Hostname)
		}
	}
}

// TestRecordsFitOCMLimits renders fleets up to the largest fleet DNS
// serves, v1alpha1.MaxFleetDNSInstances instances over 10 clusters, with
// short names and with the longest hostnames (63 characters), and checks
// every work against OCM's own manifest validator (500 KiB) and every slice
// against the EndpointSlice API's 1000 endpoints: up to
// MaxInlineFleetDNSInstances the records travel in each cluster's work,
// above it in fleet DNS works, bucket k in work k/FleetDNSBucketsPerWork.
// One instance more than MaxFleetDNSInstances delivers no record and says so.
func TestRecordsFitOCMLimits(t *testing.T) {
	long := strings.Repeat("d", 63-len("-cluster-00-9999"))
	for _, tc := range []struct {
		name  string
		total int
	}{{"mydb", 1000}, {"mydb", fleetv1.MaxInlineFleetDNSInstances}, {long, fleetv1.MaxInlineFleetDNSInstances}, {"mydb", fleetv1.MaxFleetDNSInstances}, {long, fleetv1.MaxFleetDNSInstances}} {
		t.Run(fmt.Sprintf("%d/%d", tc.total, len(tc.name)), func(t *testing.T) {
			w := makeFleetSet("db", tc.name)
			var subsets []Subset
			reports := map[string]*discoveryv1.EndpointSlice{}
			per := tc.total / 10
			for c := range 10 {
				name := fmt.Sprintf("cluster-%02d", c)
				w = w.subset(name, name, nil)
				sp := Subset{Name: name, Cluster: name, OrdinalStart: int32(c * 1000), BlockSize: 1000, Replicas: int32(per)}
				subsets = append(subsets, sp)
				eps := map[string]string{}
				for k := range per {
					eps[fmt.Sprintf("%s-%s-%d", tc.name, name, c*1000+k)] = fmt.Sprintf("10.%d.%d.%d", 100+c, k/250, k%250+1)
				}
				reports[name] = report(eps)
			}
			fs := w.obj()
			fs.Spec.Replicas = int32(tc.total)
			r := AcceptRecords(fs, subsets, reports)
			if r.TooLarge || r.Len() != tc.total {
				t.Fatalf("accepted %d of %d (too large %v)", r.Len(), tc.total, r.TooLarge)
			}
			if want := tc.total > fleetv1.MaxInlineFleetDNSInstances; r.Split != want {
				t.Errorf("Split %v, want %v", r.Split, want)
			}
			works, err := Works(fs, subsets, r)
			if err != nil {
				t.Fatal(err)
			}
			largest := 0
			records := map[string]int{}
			main := map[string]int{}
			for _, wk := range works {
				size := 0
				for _, m := range wk.Spec.Workload.Manifests {
					size += len(m.Raw)
				}
				largest = max(largest, size)
				if err := workvalidator.ManifestValidator.ValidateManifests(wk.Spec.Workload.Manifests); err != nil {
					t.Errorf("work %s/%s (%d bytes): %v", wk.Namespace, wk.Name, size, err)
				}
				if !IsFleetDNSWork(wk) {
					main[wk.Namespace]++
				}
				for _, m := range wk.Spec.Workload.Manifests {
					var s discoveryv1.EndpointSlice
					if err := json.Unmarshal(m.Raw, &s); err != nil || s.Kind != "EndpointSlice" {
						continue
					}
					if len(s.Endpoints) > 1000 {
						t.Errorf("slice %s holds %d endpoints", s.Name, len(s.Endpoints))
					}
					if r.Split != IsFleetDNSWork(wk) {
						t.Errorf("slice %s in work %s/%s; records split %v", s.Name, wk.Namespace, wk.Name, r.Split)
					}
					if IsFleetDNSWork(wk) {
						if !reflect.DeepEqual(wk.Spec.Executor, Executor("db")) {
							t.Errorf("fleet DNS work %s runs as %+v, want the namespace's executor %+v", wk.Name, wk.Spec.Executor, Executor("db"))
						}
						k, _ := strconv.Atoi(s.Name[strings.LastIndex(s.Name, "-")+1:])
						if want := fleetv1.FleetDNSWorkName("db", tc.name, k/fleetv1.FleetDNSBucketsPerWork); wk.Name != want {
							t.Errorf("slice %s in work %s, want %s", s.Name, wk.Name, want)
						}
					}
					records[wk.Namespace] += len(s.Endpoints)
				}
			}
			for c := range 10 {
				name := fmt.Sprintf("cluster-%02d", c)
				if main[name] != 1 || records[name] != tc.total-per {
					t.Errorf("cluster %s: %d works of its subsets, %d records; want 1, %d", name, main[name], records[name], tc.total-per)
				}
			}
			t.Logf("%d instances (hostnames of %d characters) over 10 clusters: %d works, largest %d bytes of OCM's %d",
				tc.total, len(tc.name)+len("-cluster-00-")+len(fmt.Sprint(per-1)), len(works), largest, 500*1024)
		})
	}
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).obj()
	fs.Spec.Replicas = fleetv1.MaxFleetDNSInstances + 1
	big := east
	big.Replicas = fleetv1.MaxFleetDNSInstances + 1
	r := AcceptRecords(fs, []Subset{big}, map[string]*discoveryv1.EndpointSlice{"east": report(map[string]string{"mydb-east-0": "10.1.0.1"})})
	if !r.TooLarge || r.Slices(fs, "west") != nil {
		t.Errorf("over MaxFleetDNSInstances: TooLarge %v, slices %v; want true, none", r.TooLarge, r.Slices(fs, "west"))
	}
}

func TestRecordsBucketByOrdinal(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	r := AcceptRecords(fs, []Subset{east, west}, map[string]*discoveryv1.EndpointSlice{
		"east": report(map[string]string{"mydb-east-3": "10.1.0.1"}),
		"west": report(map[string]string{"mydb-west-1002": "10.2.0.1"}),
	})
	var names []string
	for _, s := range r.Slices(fs, "north") {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "mydb-fleet-0,mydb-fleet-1" {
		t.Errorf("slices %v, want one per ordinal bucket of 1000", names)
	}
}

func TestServiceExportOnlyWhenAsked(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).obj()
	kinds := func() []string {
		works, err := Works(fs, []Subset{east}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range works[0].Spec.Workload.Manifests {
			if strings.Contains(string(m.Raw), `"kind":"ServiceExport"`) {
				out = append(out, string(m.Raw))
			}
		}
		return out
	}
	if got := kinds(); len(got) != 0 {
		t.Errorf("no spec.network: work carries %v", got)
	}
	fs.Spec.Network = &fleetv1.FleetNetwork{Export: fleetv1.NetworkExportMultiClusterService}
	got := kinds()
	if len(got) != 1 || !strings.Contains(got[0], `"apiVersion":"multicluster.x-k8s.io/v1alpha1"`) || !strings.Contains(got[0], `"name":"mydb"`) {
		t.Errorf("export MultiClusterService: work carries %v, want one ServiceExport mydb", got)
	}
}

// TestRecordsDuringAMove: while east's subset moves back home from north
// (failback: delivered to east, draining on north), both clusters run a
// pod of each moving name and both report it. A third cluster gets one
// address per name, east's (the subset is not draining there), whatever
// order the reports are read in; north, which still runs its copy and
// resolves it from its own EndpointSlice, gets no fleet record for those
// names (it answered two addresses for one name, the fleet record and its
// own pod's); east gets north's copies of nothing it runs itself.
func TestRecordsDuringAMove(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	home := east
	// The draining copy's cluster sorts after east, then before it: the
	// copy not draining wins either way, not the first cluster by name.
	for _, other := range []string{"north", "alpha"} {
		copyElsewhere := east
		copyElsewhere.Cluster, copyElsewhere.Replicas, copyElsewhere.Draining = other, 0, true
		reports := map[string]*discoveryv1.EndpointSlice{
			"east": report(map[string]string{"mydb-east-0": "10.1.0.5", "mydb-east-1": "10.1.0.6"}),
			other:  report(map[string]string{"mydb-east-0": "10.3.0.7", "mydb-east-1": "10.3.0.8"}),
			"west": report(map[string]string{"mydb-west-1000": "10.2.0.1"}),
		}
		for range 20 { // map order varies between calls
			r := AcceptRecords(fs, []Subset{copyElsewhere, home, west}, reports)
			if r.Rejected != 0 {
				t.Fatalf("%s: rejected %d endpoints, want 0 (every report names an instance placed where it runs)", other, r.Rejected)
			}
			for cluster, want := range map[string]string{
				"west": "map[mydb-east-0:[10.1.0.5] mydb-east-1:[10.1.0.6]]",
				other:  "map[mydb-west-1000:[10.2.0.1]]",
				"east": "map[mydb-west-1000:[10.2.0.1]]",
			} {
				if got := fmt.Sprint(resolved(r.Slices(fs, cluster))); got != want {
					t.Fatalf("%s: fleet records delivered to %s = %s, want %s", other, cluster, got, want)
				}
			}
		}
	}
}

// TestNoRecordForALeftoverCopy: once a subset is placed home again, the
// cluster it left may still run (and report) a copy of an instance, its pod
// terminating: that cluster resolves the name from its own EndpointSlice,
// so it gets no fleet record for it (else it would answer two addresses),
// and its copy is no record for the others.
func TestNoRecordForALeftoverCopy(t *testing.T) {
	fs := makeFleetSet("db", "mydb").subset("east", "east", nil).subset("west", "west", nil).obj()
	reports := map[string]*discoveryv1.EndpointSlice{
		"east":  report(map[string]string{"mydb-east-0": "10.1.0.5", "mydb-east-1": "10.1.0.6"}),
		"north": report(map[string]string{"mydb-east-1": "10.3.0.8"}),
		"west":  report(map[string]string{"mydb-west-1000": "10.2.0.1"}),
	}
	r := AcceptRecords(fs, []Subset{east, west}, reports)
	if r.Rejected != 1 {
		t.Errorf("rejected %d endpoints, want 1 (north's copy, not placed there)", r.Rejected)
	}
	for cluster, want := range map[string]string{
		"north": "map[mydb-east-0:[10.1.0.5] mydb-west-1000:[10.2.0.1]]",
		"west":  "map[mydb-east-0:[10.1.0.5] mydb-east-1:[10.1.0.6]]",
		"east":  "map[mydb-west-1000:[10.2.0.1]]",
	} {
		if got := fmt.Sprint(resolved(r.Slices(fs, cluster))); got != want {
			t.Errorf("fleet records delivered to %s = %s, want %s", cluster, got, want)
		}
	}
}
