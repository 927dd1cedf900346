package ordinals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

func TestAssign(t *testing.T) {
	cases := []struct {
		name    string
		block   int32
		subsets []Subset
		want    []Block
		wantErr bool
	}{
		{
			name:    "new subsets east, west: slots 0 and 1 in spec order",
			block:   1000,
			subsets: []Subset{{Name: "east"}, {Name: "west"}},
			want:    []Block{{Name: "east", Start: 0}, {Name: "west", Start: 1000}},
		},
		{
			name:    "sticky: previous starts kept whatever the order",
			block:   1000,
			subsets: []Subset{{Name: "west", Previous: ptr.To[int32](1000)}, {Name: "east", Previous: ptr.To[int32](0)}},
			want:    []Block{{Name: "west", Start: 1000}, {Name: "east", Start: 0}},
		},
		{
			name:    "removed subset frees slot 0: new subset takes it, west keeps 1",
			block:   1000,
			subsets: []Subset{{Name: "west", Previous: ptr.To[int32](1000)}, {Name: "north"}},
			want:    []Block{{Name: "west", Start: 1000}, {Name: "north", Start: 0}},
		},
		{
			name:    "new subsets fill gaps lowest first",
			block:   10,
			subsets: []Subset{{Name: "a"}, {Name: "b", Previous: ptr.To[int32](10)}, {Name: "c", Previous: ptr.To[int32](30)}, {Name: "d"}, {Name: "e"}},
			want:    []Block{{Name: "a", Start: 0}, {Name: "b", Start: 10}, {Name: "c", Start: 30}, {Name: "d", Start: 20}, {Name: "e", Start: 40}},
		},
		{
			name:    "previous start not a multiple of the block: reassigned",
			block:   1000,
			subsets: []Subset{{Name: "east", Previous: ptr.To[int32](500)}, {Name: "west", Previous: ptr.To[int32](0)}},
			want:    []Block{{Name: "east", Start: 1000, Reassigned: true}, {Name: "west", Start: 0}},
		},
		{
			name:    "two subsets claim the same start: the first listed keeps it",
			block:   1000,
			subsets: []Subset{{Name: "east", Previous: ptr.To[int32](0)}, {Name: "west", Previous: ptr.To[int32](0)}},
			want:    []Block{{Name: "east", Start: 0}, {Name: "west", Start: 1000, Reassigned: true}},
		},
		{
			name:    "negative previous start: reassigned",
			block:   1000,
			subsets: []Subset{{Name: "east", Previous: ptr.To[int32](-1000)}},
			want:    []Block{{Name: "east", Start: 0, Reassigned: true}},
		},
		{
			name:    "block 1e9: two slots fit int32, the third does not",
			block:   1_000_000_000,
			subsets: []Subset{{Name: "a"}, {Name: "b"}},
			want:    []Block{{Name: "a", Start: 0}, {Name: "b", Start: 1_000_000_000}},
		},
		{
			name:    "block 1e9, three subsets: out of ordinals",
			block:   1_000_000_000,
			subsets: []Subset{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			wantErr: true,
		},
		{
			name:    "previous start beyond the last whole block: reassigned",
			block:   1_000_000_000,
			subsets: []Subset{{Name: "a", Previous: ptr.To[int32](2_000_000_000)}},
			want:    []Block{{Name: "a", Start: 0, Reassigned: true}},
		},
		{name: "block 0", block: 0, subsets: []Subset{{Name: "a"}}, wantErr: true},
		{name: "empty name", block: 10, subsets: []Subset{{Name: ""}}, wantErr: true},
		{name: "duplicate name", block: 10, subsets: []Subset{{Name: "a"}, {Name: "a"}}, wantErr: true},
		{name: "no subsets", block: 10, subsets: nil, want: []Block{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Assign(tc.block, tc.subsets)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Assign() error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Assign() (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAssignSticky replays a history of spec changes, feeding each result back
// as Previous, and checks that no surviving subset ever changes its block.
func TestAssignSticky(t *testing.T) {
	history := [][]string{
		{"east", "west"},
		{"east", "west", "north"},
		{"west", "north"},
		{"south", "west", "north", "east"},
		{"east"},
	}
	starts := map[string]int32{}
	for step, names := range history {
		in := make([]Subset, len(names))
		for i, n := range names {
			in[i].Name = n
			if s, ok := starts[n]; ok {
				in[i].Previous = ptr.To(s)
			}
		}
		got, err := Assign(100, in)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		next := map[string]int32{}
		used := map[int32]string{}
		for _, b := range got {
			if s, ok := starts[b.Name]; ok && s != b.Start {
				t.Errorf("step %d: subset %s moved from %d to %d", step, b.Name, s, b.Start)
			}
			if o, ok := used[b.Start]; ok {
				t.Errorf("step %d: subsets %s and %s share start %d", step, o, b.Name, b.Start)
			}
			used[b.Start] = b.Name
			next[b.Name] = b.Start
		}
		starts = next
	}
	if diff := cmp.Diff(map[string]int32{"east": 300}, starts); diff != "" {
		t.Errorf("final starts (-want,+got):\n%s", diff)
	}
}

func TestClamp(t *testing.T) {
	cases := []struct {
		replicas, block, want int32
		cut                   bool
	}{
		{5, 10, 5, false},
		{10, 10, 10, false},
		{11, 10, 10, true},
		{0, 1, 0, false},
	}
	for _, tc := range cases {
		got, cut := Clamp(tc.replicas, tc.block)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Clamp(%d, %d) = %d, %v; want %d, %v", tc.replicas, tc.block, got, cut, tc.want, tc.cut)
		}
	}
}
