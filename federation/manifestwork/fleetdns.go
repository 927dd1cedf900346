package manifestwork

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/internal/envelope"
)

// Records are a FleetSet's fleet DNS records as the hub accepted them from
// the members' reports (AcceptRecords): at most one address per instance,
// from the cluster the hub places its subset on now.
type Records struct {
	// TooLarge is true when the fleet has more than
	// v1alpha1.MaxFleetDNSInstances instances: no record is delivered.
	TooLarge bool
	// Split is true when the fleet has, or the members report, more than
	// v1alpha1.MaxInlineFleetDNSInstances instances: the records travel in
	// fleet DNS works (Works), not in each member's ManifestWork.
	Split bool
	// Rejected counts the reported endpoints ignored: not an instance of a
	// subset placed on the reporting cluster, no hostname, or no valid
	// IPv4 address.
	Rejected int
	records  []record
	// reporters holds, per ordinal, every cluster that reported it, in
	// name order, whether or not the hub places its subset there: while
	// an instance moves (a relocation, a failback) both its clusters may
	// run a pod of that name (the old one terminating after its subset
	// moved), and a cluster that runs one resolves the name from its own
	// EndpointSlice, so it gets no fleet record for it (two addresses for
	// one name otherwise).
	reporters map[int32][]string
}

// record is one accepted instance.
type record struct {
	ordinal  int32
	cluster  string
	endpoint discoveryv1.Endpoint
}

// AcceptRecords returns the records to deliver for fs from reports, the
// EndpointSlices members published on the hub by cluster name (the
// namespace each was read from, which the member's hub credentials cannot
// choose). An endpoint of cluster C is accepted only when its hostname is
// <statefulset>-<ordinal> of a subset in subsets placed on C, with the
// ordinal in that subset's block, and it has an IPv4 address (its first);
// its Ready condition is recomputed as the EndpointSlice controller does
// for the governing Service (publishNotReadyAddresses, or serving and not
// terminating). One record per ordinal: when several clusters report it
// (an instance moving), the one whose subset is not draining there, then
// the first by name. A cluster reporting an instance of fs that the hub
// does not place there (a copy still terminating after its subset moved)
// adds no record, but gets none for that instance either (Slices). Records
// are sorted by ordinal.
func AcceptRecords(fs *fleetv1.FleetSet, subsets []Subset, reports map[string]*discoveryv1.EndpointSlice) *Records {
	out := &Records{}
	total := int64(0)
	for _, sp := range subsets {
		total += int64(max(sp.Replicas, 0))
	}
	if total > fleetv1.MaxFleetDNSInstances || int64(fs.Spec.Replicas) > fleetv1.MaxFleetDNSInstances {
		out.TooLarge = true
		return out
	}
	publishNotReady := Service(fs).Spec.PublishNotReadyAddresses
	// One record per ordinal. When several clusters report it (a move
	// under way), the one whose subset is delivered there and not
	// draining wins, then the first cluster by name: the choice does not
	// depend on the order the reports were read in.
	chosen := map[int32]int{} // ordinal → index in out.records
	preferred := map[int32]bool{}
	out.reporters = map[int32][]string{}
	for _, cluster := range slices.Sorted(maps.Keys(reports)) {
		slice := reports[cluster]
		if slice == nil || slice.AddressType != discoveryv1.AddressTypeIPv4 {
			if slice != nil {
				out.Rejected += len(slice.Endpoints)
			}
			continue
		}
		for _, ep := range slice.Endpoints {
			hostname := ptr.Deref(ep.Hostname, "")
			ordinal, draining, ok := instanceOn(fs, subsets, cluster, hostname)
			addr, valid := firstIPv4(ep.Addresses)
			if !ok && valid {
				// A copy the hub no longer places here (still
				// terminating after the subset moved home, or a
				// report not yet updated): not a record, but this
				// cluster resolves the name from its own
				// EndpointSlice, so it gets no fleet record for it.
				if o, found := instanceOfFleet(fs, subsets, hostname); found && !slices.Contains(out.reporters[o], cluster) {
					out.reporters[o] = append(out.reporters[o], cluster)
				}
			}
			if !ok || !valid || slices.Contains(out.reporters[ordinal], cluster) {
				out.Rejected++
				continue
			}
			out.reporters[ordinal] = append(out.reporters[ordinal], cluster)
			serving, terminating := ptr.Deref(ep.Conditions.Serving, false), ptr.Deref(ep.Conditions.Terminating, false)
			rec := record{ordinal: ordinal, cluster: cluster, endpoint: discoveryv1.Endpoint{
				Addresses: []string{addr},
				Hostname:  ptr.To(*ep.Hostname),
				Conditions: discoveryv1.EndpointConditions{
					Ready:       ptr.To(publishNotReady || (serving && !terminating)),
					Serving:     ptr.To(serving),
					Terminating: ptr.To(terminating),
				},
			}}
			i, seen := chosen[ordinal]
			switch {
			case !seen:
				chosen[ordinal], preferred[ordinal] = len(out.records), !draining
				out.records = append(out.records, rec)
			case !draining && !preferred[ordinal]:
				out.records[i], preferred[ordinal] = rec, true
			}
		}
	}
	slices.SortFunc(out.records, func(a, b record) int { return cmp.Compare(a.ordinal, b.ordinal) })
	// Instances beyond a subset's replicas (still terminating after a
	// scale-down) are accepted too: they count for the split.
	out.Split = max(total, int64(fs.Spec.Replicas), int64(len(out.records))) > fleetv1.MaxInlineFleetDNSInstances
	return out
}

// instanceOn returns the ordinal of hostname when it names an instance of a
// subset of fs placed on cluster: "<fleetset>-<subset>-<ordinal>" with the
// ordinal in the subset's block; draining is the subset's Draining there.
func instanceOn(fs *fleetv1.FleetSet, subsets []Subset, cluster, hostname string) (ordinal int32, draining, ok bool) {
	for _, sp := range subsets {
		if sp.Cluster != cluster {
			continue
		}
		if o, ok := instanceOf(fs, sp, hostname); ok {
			return o, sp.Draining, true
		}
	}
	return 0, false, false
}

// instanceOfFleet returns the ordinal of hostname when it names an instance
// of any subset of fs, wherever that subset is placed.
func instanceOfFleet(fs *fleetv1.FleetSet, subsets []Subset, hostname string) (int32, bool) {
	for _, sp := range subsets {
		if o, ok := instanceOf(fs, sp, hostname); ok {
			return o, true
		}
	}
	return 0, false
}

// instanceOf returns the ordinal of hostname when it is
// "<fleetset>-<subset>-<ordinal>" of subset sp with the ordinal in sp's block.
func instanceOf(fs *fleetv1.FleetSet, sp Subset, hostname string) (int32, bool) {
	rest, found := strings.CutPrefix(hostname, envelope.StatefulSetName(fs.Name, sp.Name)+"-")
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || strconv.FormatInt(n, 10) != rest {
		return 0, false
	}
	if o := int32(n); o >= sp.OrdinalStart && o < sp.OrdinalStart+max(sp.BlockSize, sp.Replicas) {
		return o, true
	}
	return 0, false
}

// firstIPv4 returns the first of addresses when it is a valid IPv4 address.
func firstIPv4(addresses []string) (string, bool) {
	if len(addresses) == 0 {
		return "", false
	}
	a, err := netip.ParseAddr(addresses[0])
	if err != nil || !a.Is4() {
		return "", false
	}
	return a.String(), true
}

// Len returns how many records r holds.
func (r *Records) Len() int {
	if r == nil {
		return 0
	}
	return len(r.records)
}

// Slices returns the EndpointSlices of fs's governing Service to deliver to
// cluster: the records of every other cluster, in slices of
// v1alpha1.FleetDNSBucket ordinals (FleetDNSSliceName; only non-empty
// buckets), endpoints sorted by ordinal. It returns nil for a nil or
// TooLarge r. A cluster's own instances are never in its slices, nor an
// instance it reports itself (a moving instance's other copy): its
// EndpointSlice controller publishes them from its pods.
func (r *Records) Slices(fs *fleetv1.FleetSet, cluster string) []*discoveryv1.EndpointSlice {
	out, _ := r.buckets(fs, cluster)
	return out
}

// buckets is Slices with each slice's bucket index.
func (r *Records) buckets(fs *fleetv1.FleetSet, cluster string) ([]*discoveryv1.EndpointSlice, []int) {
	if r == nil || r.TooLarge {
		return nil, nil
	}
	svc := envelope.ServiceName(fs)
	var out []*discoveryv1.EndpointSlice
	var ks []int
	bucket := -1
	for _, rec := range r.records {
		if rec.cluster == cluster || slices.Contains(r.reporters[rec.ordinal], cluster) {
			continue
		}
		if k := int(rec.ordinal) / fleetv1.FleetDNSBucket; k != bucket {
			bucket = k
			out = append(out, fleetDNSSlice(fs, svc, k))
			ks = append(ks, k)
		}
		s := out[len(out)-1]
		s.Endpoints = append(s.Endpoints, rec.endpoint)
	}
	return out, ks
}

// split returns the slices of cluster (Slices) to carry in its
// ManifestWork (inline) and, for a Split r, by fleet DNS work index the
// slices each fleet DNS work carries instead: bucket k in work
// k / v1alpha1.FleetDNSBucketsPerWork. Only works with a slice are listed.
func (r *Records) split(fs *fleetv1.FleetSet, cluster string) (inline []*discoveryv1.EndpointSlice, parts map[int][]*discoveryv1.EndpointSlice) {
	slices, ks := r.buckets(fs, cluster)
	if r == nil || !r.Split {
		return slices, nil
	}
	parts = map[int][]*discoveryv1.EndpointSlice{}
	for i, s := range slices {
		w := ks[i] / fleetv1.FleetDNSBucketsPerWork
		parts[w] = append(parts[w], s)
	}
	return nil, parts
}

// fleetDNSSlice returns the empty k-th fleet DNS EndpointSlice of Service
// svc of fs.
func fleetDNSSlice(fs *fleetv1.FleetSet, svc string, k int) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fleetv1.FleetDNSSliceName(svc, k),
			Namespace: fs.Namespace,
			Labels: ownedBy(fs, map[string]string{
				fleetv1.LabelSet:             fs.Name,
				discoveryv1.LabelServiceName: svc,
				discoveryv1.LabelManagedBy:   fleetv1.FleetDNSManagedBy,
			}),
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{},
	}
}

// MCSGroup is the Multi-Cluster Services API group (KEP-1645).
const MCSGroup = "multicluster.x-k8s.io"

// ServiceExport renders the ServiceExport (multicluster.x-k8s.io/v1alpha1)
// of fs's governing Service, delivered to every member when
// spec.network.export is MultiClusterService.
func ServiceExport(fs *fleetv1.FleetSet) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(MCSGroup + "/v1alpha1")
	u.SetKind("ServiceExport")
	u.SetNamespace(fs.Namespace)
	u.SetName(envelope.ServiceName(fs))
	u.SetLabels(ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name}))
	return u
}
