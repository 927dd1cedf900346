//go:build integration

package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// ownerUIDPlaceholder stands, in a normalised ManifestWork, for the UID of
// the FleetSet that owns it.
const ownerUIDPlaceholder = "OWNER-UID"

// normalWork returns what the benchmark compares of w, a ManifestWork of the
// FleetSet whose UID is ownerUID, as JSON: its labels, annotations and spec,
// with every occurrence of ownerUID replaced by ownerUIDPlaceholder and
// without the spec-hash annotation. These are the only two things that must
// differ between the works of two apiservers: the apiserver chooses a
// FleetSet's UID (the fleetset.io/owner-uid label of the work and of every
// manifest in it), and the spec hash covers those labels. Server-set
// metadata (resourceVersion, uid, creationTimestamp, managedFields,
// generation) is not the writer's and is left out.
func normalWork(w *workv1.ManifestWork, ownerUID types.UID) ([]byte, error) {
	ann := map[string]string{}
	for k, v := range w.Annotations {
		if k != fleetv1.AnnotationSpecHash {
			ann[k] = v
		}
	}
	b, err := json.Marshal(struct {
		Labels      map[string]string        `json:"labels"`
		Annotations map[string]string        `json:"annotations"`
		Spec        workv1.ManifestWorkSpec  `json:"spec"`
		Owner       []map[string]interface{} `json:"ownerReferences,omitempty"`
	}{Labels: w.Labels, Annotations: ann, Spec: w.Spec, Owner: ownerRefs(w)})
	if err != nil {
		return nil, err
	}
	if ownerUID == "" {
		return b, nil
	}
	return []byte(strings.ReplaceAll(string(b), string(ownerUID), ownerUIDPlaceholder)), nil
}

// ownerRefs returns w's owner references as generic maps (none: nil), so
// that normalWork compares them too.
func ownerRefs(w *workv1.ManifestWork) []map[string]interface{} {
	var out []map[string]interface{}
	for _, r := range w.OwnerReferences {
		out = append(out, map[string]interface{}{"kind": r.Kind, "name": r.Name, "uid": string(r.UID)})
	}
	return out
}

// ownerUIDs returns the UID of every FleetSet of namespace ns that c reads,
// by name.
func ownerUIDs(ctx context.Context, c client.Client, ns string) (map[string]types.UID, error) {
	var l fleetv1.FleetSetList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make(map[string]types.UID, len(l.Items))
	for i := range l.Items {
		out[l.Items[i].Name] = l.Items[i].UID
	}
	return out, nil
}

// workSet is what the benchmark keeps of the ManifestWorks one side wrote,
// as its apiserver stored them (defaults applied), by key: each one's
// normalWork, gzipped, and its SHA-256; and the raw JSON of the first.
type workSet struct {
	digests  map[types.NamespacedName]string
	normal   map[types.NamespacedName][]byte
	firstKey types.NamespacedName
	firstRaw []byte
}

// storedWorks lists, 500 at a time, every ManifestWork that c reads of a
// FleetSet of namespace ns and returns their workSet, with the owners'
// UIDs as c reads them.
func storedWorks(ctx context.Context, c client.Client, ns string) (*workSet, error) {
	uids, err := ownerUIDs(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	out := &workSet{digests: map[types.NamespacedName]string{}, normal: map[types.NamespacedName][]byte{}}
	opts := []client.ListOption{client.MatchingLabels{fleetv1.LabelOwnerNamespace: ns}, client.Limit(500)}
	for cont := ""; ; {
		var l workv1.ManifestWorkList
		if err := c.List(ctx, &l, append(opts, client.Continue(cont))...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			if err := out.add(&l.Items[i], uids[l.Items[i].Labels[fleetv1.LabelOwnerName]]); err != nil {
				return nil, err
			}
		}
		if cont = l.Continue; cont == "" {
			return out, nil
		}
	}
}

// add adds w, of the FleetSet whose UID is ownerUID, to s.
func (s *workSet) add(w *workv1.ManifestWork, ownerUID types.UID) error {
	k := client.ObjectKeyFromObject(w)
	n, err := normalWork(w, ownerUID)
	if err != nil {
		return err
	}
	s.digests[k] = fmt.Sprintf("%x", sha256.Sum256(n))
	var buf bytes.Buffer
	z, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = z.Write(n)
	if err := z.Close(); err != nil {
		return err
	}
	s.normal[k] = buf.Bytes()
	if s.firstRaw == nil || k.String() < s.firstKey.String() {
		s.firstKey = k
		s.firstRaw, err = json.Marshal(w)
	}
	return err
}

// normalOf returns the normalWork of k in s, or nil.
func (s *workSet) normalOf(k types.NamespacedName) []byte {
	z, err := gzip.NewReader(bytes.NewReader(s.normal[k]))
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(z)
	return b
}

// jsonDiff appends to out the paths below path where a and b (decoded JSON)
// differ, each with both values, shortened.
func jsonDiff(path string, a, b any, out *[]string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			jsonDiff(path+"."+k, av[k], bv[k], out)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			jsonDiff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, fmt.Sprintf("%s: %s | %s", path, short(a), short(b)))
	}
}

// short returns v as JSON, cut to 120 bytes.
func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

// diffWorks returns the paths where the JSON of works a and b differ
// (raw: every field, server-set metadata included), or what stopped it.
func diffWorks(a, b any) []string {
	var da, db any
	for _, x := range []struct {
		in  any
		out *any
	}{{a, &da}, {b, &db}} {
		raw, ok := x.in.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(x.in); err != nil {
				return []string{err.Error()}
			}
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return []string{err.Error()}
		}
	}
	var out []string
	jsonDiff("", da, db, &out)
	return out
}

// compareWithLimit checks that the ManifestWorks the hub wrote (read back
// through c, with the UIDs of the FleetSets of namespace ns that c reads)
// are, normalised (normalWork), the ones the limit wrote (limit, read back
// alike from its apiserver); it fails the test on any difference. It prints
// as "BENCH diff" lines every field where the first work differs raw
// (server-set metadata, owner UID, spec hash: what must differ), and every
// field where the first differing work differs normalised. It returns how
// many were identical.
func compareWithLimit(t *testing.T, ctx context.Context, c client.Client, ns string, limit *workSet) int {
	t.Helper()
	hub, err := storedWorks(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	var differ []types.NamespacedName
	for k, d := range limit.digests {
		if hub.digests[k] == d {
			same++
		} else {
			differ = append(differ, k)
		}
	}
	for k := range hub.digests {
		if _, ok := limit.digests[k]; !ok {
			differ = append(differ, k)
		}
	}
	if limit.firstKey == hub.firstKey {
		for _, d := range diffWorks(limit.firstRaw, hub.firstRaw) {
			fmt.Printf("BENCH diff %v raw (limit | hub) %s\n", limit.firstKey, d)
		}
	}
	if len(differ) == 0 {
		return same
	}
	slices.SortFunc(differ, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	t.Errorf("%d of %d ManifestWorks differ between the hub and the limit (normalised: owner UID, spec hash); first %v", len(differ), len(limit.digests), differ[0])
	for _, d := range diffWorks(limit.normalOf(differ[0]), hub.normalOf(differ[0])) {
		fmt.Printf("BENCH diff %v normalised (limit | hub) %s\n", differ[0], d)
	}
	return same
}

// TestNormalWork checks the benchmark's comparison: works that differ only
// in their owner's UID and spec hash compare equal, and any other field
// makes them differ.
func TestNormalWork(t *testing.T) {
	mk := func(uid, hash, image string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		w.Labels = map[string]string{fleetv1.LabelOwnerUID: uid}
		w.Annotations = map[string]string{fleetv1.AnnotationSpecHash: hash}
		w.Spec.Workload.Manifests = []workv1.Manifest{{}}
		w.Spec.Workload.Manifests[0].Raw = []byte(`{"metadata":{"labels":{"fleetset.io/owner-uid":"` + uid + `"}},"image":"` + image + `"}`)
		return w
	}
	a, _ := normalWork(mk("uid-a", "h1", "x"), "uid-a")
	b, _ := normalWork(mk("uid-b", "h2", "x"), "uid-b")
	c, _ := normalWork(mk("uid-b", "h2", "y"), "uid-b")
	if string(a) != string(b) {
		t.Errorf("differ only in owner UID and spec hash, yet normalised differ: %v", diffWorks(a, b))
	}
	if d := diffWorks(a, c); len(d) != 1 || !strings.Contains(d[0], "image") {
		t.Errorf("differ in image: diff %v, want the image's path", d)
	}
}
