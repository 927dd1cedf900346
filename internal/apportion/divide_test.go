package apportion

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func num(n int32) *intstr.IntOrString {
	v := intstr.FromInt32(n)
	return &v
}

func pct(s string) *intstr.IntOrString {
	v := intstr.FromString(s)
	return &v
}

func ptr(n int32) *int32 { return &n }

func TestDivide(t *testing.T) {
	tests := []struct {
		name      string
		total     int32
		shares    []Share
		want      []Assignment
		wantUnmet []string
	}{
		{
			name:   "replicas 9, shares 60%:40%",
			total:  9,
			shares: []Share{{Name: "east", Replicas: pct("60%")}, {Name: "west", Replicas: pct("40%")}},
			want:   []Assignment{{"east", 5}, {"west", 4}},
		},
		{
			name:   "replicas 10, shares 33%:33%:rest",
			total:  10,
			shares: []Share{{Name: "a", Replicas: pct("33%")}, {Name: "b", Replicas: pct("33%")}, {Name: "c"}},
			want:   []Assignment{{"a", 3}, {"b", 3}, {"c", 4}},
		},
		{
			name:   "replicas 10, shares 3:rest:rest",
			total:  10,
			shares: []Share{{Name: "a", Replicas: num(3)}, {Name: "b"}, {Name: "c"}},
			want:   []Assignment{{"a", 3}, {"b", 4}, {"c", 3}},
		},
		{
			name:   "replicas 10, shares rest:rest:3 in any order",
			total:  10,
			shares: []Share{{Name: "c"}, {Name: "b"}, {Name: "a", Replicas: num(3)}},
			want:   []Assignment{{"c", 3}, {"b", 4}, {"a", 3}},
		},
		{
			name:   "replicas 10, shares 30%:30% normalised",
			total:  10,
			shares: []Share{{Name: "a", Replicas: pct("30%")}, {Name: "b", Replicas: pct("30%")}},
			want:   []Assignment{{"a", 5}, {"b", 5}},
		},
		{
			name:   "replicas 4, shares 100%:rest",
			total:  4,
			shares: []Share{{Name: "a", Replicas: pct("100%")}, {Name: "b"}},
			want:   []Assignment{{"a", 4}, {"b", 0}},
		},
		{
			name:   "replicas 4, shares 100%:rest min 1",
			total:  4,
			shares: []Share{{Name: "a", Replicas: pct("100%")}, {Name: "b", MinReplicas: ptr(1)}},
			want:   []Assignment{{"a", 3}, {"b", 1}},
		},
		{
			name:   "replicas 5, shares 0%:rest",
			total:  5,
			shares: []Share{{Name: "a", Replicas: pct("0%")}, {Name: "b"}},
			want:   []Assignment{{"a", 0}, {"b", 5}},
		},
		{
			name:   "replicas 0, shares 60%:40%",
			total:  0,
			shares: []Share{{Name: "east", Replicas: pct("60%")}, {Name: "west", Replicas: pct("40%")}},
			want:   []Assignment{{"east", 0}, {"west", 0}},
		},
		{
			name:   "min binds: replicas 10, shares 50% min 7:50%",
			total:  10,
			shares: []Share{{Name: "a", Replicas: pct("50%"), MinReplicas: ptr(7)}, {Name: "b", Replicas: pct("50%")}},
			want:   []Assignment{{"a", 7}, {"b", 3}},
		},
		{
			name:   "max redistributes: replicas 10, shares 50% max 3:50%",
			total:  10,
			shares: []Share{{Name: "a", Replicas: pct("50%"), MaxReplicas: ptr(3)}, {Name: "b", Replicas: pct("50%")}},
			want:   []Assignment{{"a", 3}, {"b", 7}},
		},
		{
			name:  "max redistributes by weight: replicas 10, shares 50% max 1:30%:20%",
			total: 10,
			shares: []Share{
				{Name: "a", Replicas: pct("50%"), MaxReplicas: ptr(1)},
				{Name: "b", Replicas: pct("30%")},
				{Name: "c", Replicas: pct("20%")},
			},
			// b and c keep their 3:2 ratio, within quota, over the 9 left.
			want: []Assignment{{"a", 1}, {"b", 5}, {"c", 4}},
		},
		{
			name:   "ints over-commit: replicas 10, shares 8:4:rest",
			total:  10,
			shares: []Share{{Name: "a", Replicas: num(8)}, {Name: "b", Replicas: num(4)}, {Name: "c"}},
			want:   []Assignment{{"a", 7}, {"b", 3}, {"c", 0}},
			wantUnmet: []string{
				`share "a": 7 assigned, below its required 8: ints and minReplicas add up to 12, above the total of 10`,
				`share "b": 3 assigned, below its required 4: ints and minReplicas add up to 12, above the total of 10`,
			},
		},
		{
			name:   "mins over-commit: replicas 2, shares rest min 2:rest min 2",
			total:  2,
			shares: []Share{{Name: "a", MinReplicas: ptr(2)}, {Name: "b", MinReplicas: ptr(2)}},
			want:   []Assignment{{"a", 1}, {"b", 1}},
			wantUnmet: []string{
				`share "a": 1 assigned, below its required 2: ints and minReplicas add up to 4, above the total of 2`,
				`share "b": 1 assigned, below its required 2: ints and minReplicas add up to 4, above the total of 2`,
			},
		},
		{
			name:   "all capped: replicas 10, shares rest max 3:rest max 4",
			total:  10,
			shares: []Share{{Name: "a", MaxReplicas: ptr(3)}, {Name: "b", MaxReplicas: ptr(4)}},
			want:   []Assignment{{"a", 5}, {"b", 5}},
			wantUnmet: []string{
				`share "a": 5 assigned, above its allowed 3: the shares can hold only 7 of the total of 10`,
				`share "b": 5 assigned, above its allowed 4: the shares can hold only 7 of the total of 10`,
			},
		},
		{
			name:   "all capped keeps ints: replicas 10, shares 3:rest max 2",
			total:  10,
			shares: []Share{{Name: "a", Replicas: num(3)}, {Name: "b", MaxReplicas: ptr(2)}},
			want:   []Assignment{{"a", 3}, {"b", 7}},
			wantUnmet: []string{
				`share "b": 7 assigned, above its allowed 2: the shares can hold only 5 of the total of 10`,
			},
		},
		{
			name:   "ints under-commit: replicas 10, shares 3:2",
			total:  10,
			shares: []Share{{Name: "a", Replicas: num(3)}, {Name: "b", Replicas: num(2)}},
			want:   []Assignment{{"a", 6}, {"b", 4}},
			wantUnmet: []string{
				`share "a": 6 assigned, above its allowed 3: the shares can hold only 5 of the total of 10`,
				`share "b": 4 assigned, above its allowed 2: the shares can hold only 5 of the total of 10`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Divide(tt.total, tt.shares)
			if err != nil {
				t.Fatalf("Divide: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Assignments); diff != "" {
				t.Errorf("assignments (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnmet, got.Unmet); diff != "" {
				t.Errorf("unmet (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDivideErrors(t *testing.T) {
	tests := []struct {
		name   string
		total  int32
		shares []Share
		want   string
	}{
		{name: "negative total", total: -1, shares: []Share{{Name: "a"}}, want: "total: must not be negative, got -1"},
		{name: "total above the maximum", total: MaxTotal + 1, shares: []Share{{Name: "a"}}, want: "total: 1048577 exceeds the maximum of 1048576 replicas"},
		{name: "no shares", total: 3, want: "shares: must not be empty"},
		{name: "empty name", total: 3, shares: []Share{{Name: "a"}, {}}, want: "shares[1].name: must not be empty"},
		{name: "duplicate name", total: 3, shares: []Share{{Name: "a"}, {Name: "a"}}, want: `shares[1].name: duplicate name "a"`},
		{name: "percent abc%", total: 3, shares: []Share{{Name: "a", Replicas: pct("abc%")}}, want: `shares[0].replicas: invalid percent "abc%"`},
		{name: "percent %", total: 3, shares: []Share{{Name: "a", Replicas: pct("%")}}, want: `shares[0].replicas: invalid percent "%"`},
		{name: "percent +5%", total: 3, shares: []Share{{Name: "a", Replicas: pct("+5%")}}, want: `shares[0].replicas: invalid percent "+5%"`},
		{name: "percent 120%", total: 3, shares: []Share{{Name: "a"}, {Name: "b", Replicas: pct("120%")}}, want: `shares[1].replicas: invalid percent "120%": must be between 0% and 100%`},
		{name: "percent -5%", total: 3, shares: []Share{{Name: "a", Replicas: pct("-5%")}}, want: `shares[0].replicas: invalid percent "-5%": must be between 0% and 100%`},
		{name: "string without %", total: 3, shares: []Share{{Name: "a", Replicas: pct("60")}}, want: `shares[0].replicas: invalid value "60": must be an integer or a percentage such as "60%"`},
		{name: "unknown type", total: 3, shares: []Share{{Name: "a", Replicas: &intstr.IntOrString{Type: 7}}}, want: "shares[0].replicas: invalid type 7: must be an integer or a string"},
		{name: "percents 60%:60%", total: 3, shares: []Share{{Name: "a", Replicas: pct("60%")}, {Name: "b", Replicas: pct("60%")}}, want: "shares: percentages sum to 120%, must not exceed 100%"},
		{name: "negative int", total: 3, shares: []Share{{Name: "a", Replicas: num(-3)}}, want: "shares[0].replicas: must not be negative, got -3"},
		{name: "negative min", total: 3, shares: []Share{{Name: "a", MinReplicas: ptr(-1)}}, want: "shares[0].minReplicas: must not be negative, got -1"},
		{name: "negative max", total: 3, shares: []Share{{Name: "a", MaxReplicas: ptr(-1)}}, want: "shares[0].maxReplicas: must not be negative, got -1"},
		{name: "min above max", total: 3, shares: []Share{{Name: "a", MinReplicas: ptr(5), MaxReplicas: ptr(3)}}, want: "shares[0].minReplicas: 5 must not exceed maxReplicas 3"},
		{name: "int below min", total: 3, shares: []Share{{Name: "a", Replicas: num(1), MinReplicas: ptr(2)}}, want: "shares[0].replicas: 1 must not be below minReplicas 2"},
		{name: "int above max", total: 3, shares: []Share{{Name: "a", Replicas: num(5), MaxReplicas: ptr(2)}}, want: "shares[0].replicas: 5 must not exceed maxReplicas 2"},
		{
			name:   "every error at once",
			total:  3,
			shares: []Share{{Name: "a", Replicas: pct("abc%")}, {Name: "a", MaxReplicas: ptr(-1)}},
			want:   "shares[0].replicas: invalid percent \"abc%\"\nshares[1].name: duplicate name \"a\"\nshares[1].maxReplicas: must not be negative, got -1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Divide(tt.total, tt.shares)
			if err == nil {
				t.Fatalf("Divide succeeded, want error %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

// decodeShares builds up to 6 shares from data, 4 bytes each: the claim
// (int, percent or nil) and its value, minReplicas, maxReplicas (0 = unset,
// else value−1).
func decodeShares(data []byte) []Share {
	var shares []Share
	for i := 0; i+4 <= len(data) && len(shares) < 6; i += 4 {
		s := Share{Name: fmt.Sprintf("s%d", len(shares))}
		switch data[i] % 3 {
		case 0:
			s.Replicas = num(int32(data[i+1] % 32))
		case 1:
			s.Replicas = pct(fmt.Sprintf("%d%%", data[i+1]%51))
		}
		if data[i+2] != 0 {
			s.MinReplicas = ptr(int32(data[i+2]-1) % 16)
		}
		if data[i+3] != 0 {
			s.MaxReplicas = ptr(int32(data[i+3]-1) % 64)
		}
		shares = append(shares, s)
	}
	return shares
}

// weightsOf returns the flexible weight of each share as the package
// documentation defines it.
func weightsOf(shares []Share) []int64 {
	var rest, percents int64
	for _, s := range shares {
		switch {
		case s.Replicas == nil:
			rest++
		case s.Replicas.Type == intstr.String:
			percents += percentOf(s)
		}
	}
	weights := make([]int64, len(shares))
	for i, s := range shares {
		switch {
		case s.Replicas == nil:
			weights[i] = 100 - percents
		case s.Replicas.Type == intstr.String:
			weights[i] = percentOf(s) * max(rest, 1)
		}
	}
	return weights
}

// percentOf returns the percentage of a share whose Replicas is a valid
// percentage.
func percentOf(s Share) int64 {
	p, err := strconv.ParseInt(strings.TrimSuffix(s.Replicas.StrVal, "%"), 10, 64)
	if err != nil {
		panic(err)
	}
	return p
}

func counts(r Result) map[string]int32 {
	m := make(map[string]int32, len(r.Assignments))
	for _, a := range r.Assignments {
		m[a.Name] = a.Replicas
	}
	return m
}

// FuzzDivide checks, for shares drawn from the input: counts sum to the
// total and are never negative; ints, minReplicas and maxReplicas hold and
// Unmet is empty exactly when the spec is feasible; the division is
// deterministic, independent of input order, house monotone, and within
// quota when only percentages and nil shares without bounds are given.
func FuzzDivide(f *testing.F) {
	f.Add(uint16(9), []byte{1, 60, 0, 0, 1, 40, 0, 0})
	f.Add(uint16(10), []byte{1, 33, 0, 0, 1, 33, 0, 0, 2, 0, 0, 0})
	f.Add(uint16(10), []byte{0, 8, 0, 0, 0, 4, 0, 0, 2, 0, 0, 0})
	f.Add(uint16(10), []byte{1, 50, 8, 0, 1, 50, 0, 0})
	f.Add(uint16(10), []byte{1, 50, 0, 4, 1, 50, 0, 0})
	f.Add(uint16(10), []byte{2, 0, 0, 4, 2, 0, 0, 5})
	f.Add(uint16(200), []byte{1, 17, 3, 40, 2, 0, 2, 9, 0, 5, 0, 0, 2, 0, 0, 0, 1, 23, 5, 0})
	f.Fuzz(func(t *testing.T, rawTotal uint16, data []byte) {
		total := int32(rawTotal % 512)
		shares := decodeShares(data)
		got, err := Divide(total, shares)
		if err != nil {
			return // invalid input: its errors are covered by TestDivideErrors.
		}
		weights := weightsOf(shares)
		var sum, demand, capacity int64
		unbounded := false
		for i, a := range got.Assignments {
			s := shares[i]
			if a.Name != s.Name {
				t.Fatalf("assignment %d is for %q, want %q", i, a.Name, s.Name)
			}
			if a.Replicas < 0 {
				t.Fatalf("share %q: negative count %d", a.Name, a.Replicas)
			}
			sum += int64(a.Replicas)
			lo, hi := int64(0), int64(math.MaxInt64)
			if s.MinReplicas != nil {
				lo = int64(*s.MinReplicas)
			}
			if s.MaxReplicas != nil {
				hi = int64(*s.MaxReplicas)
			}
			if s.Replicas != nil && s.Replicas.Type == intstr.Int {
				lo, hi = int64(s.Replicas.IntVal), int64(s.Replicas.IntVal)
			}
			demand += lo
			switch {
			case weights[i] == 0:
				capacity += lo
			case hi == math.MaxInt64:
				unbounded = true
			default:
				capacity += hi
			}
		}
		if sum != int64(total) {
			t.Fatalf("counts %v sum to %d, want %d", got.Assignments, sum, total)
		}
		feasible := demand <= int64(total) && (unbounded || int64(total) <= capacity)
		if feasible != (len(got.Unmet) == 0) {
			t.Fatalf("feasible = %v, but unmet = %q", feasible, got.Unmet)
		}
		if feasible {
			for i, a := range got.Assignments {
				s := shares[i]
				switch {
				case s.Replicas != nil && s.Replicas.Type == intstr.Int && a.Replicas != s.Replicas.IntVal:
					t.Fatalf("share %q: got %d, want its int %d", a.Name, a.Replicas, s.Replicas.IntVal)
				case s.MinReplicas != nil && a.Replicas < *s.MinReplicas:
					t.Fatalf("share %q: got %d, below minReplicas %d", a.Name, a.Replicas, *s.MinReplicas)
				case s.MaxReplicas != nil && a.Replicas > *s.MaxReplicas:
					t.Fatalf("share %q: got %d, above maxReplicas %d", a.Name, a.Replicas, *s.MaxReplicas)
				}
			}
		}

		again, err := Divide(total, shares)
		if err != nil {
			t.Fatalf("Divide again: %v", err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("second Divide (-first,+second):\n%s", diff)
		}
		reversed := slices.Clone(shares)
		slices.Reverse(reversed)
		rev, err := Divide(total, reversed)
		if err != nil {
			t.Fatalf("Divide reversed: %v", err)
		}
		if diff := cmp.Diff(counts(got), counts(rev)); diff != "" {
			t.Fatalf("counts after reversing the shares (-want,+got):\n%s", diff)
		}
		if diff := cmp.Diff(got.Unmet, rev.Unmet); diff != "" {
			t.Fatalf("unmet after reversing the shares (-want,+got):\n%s", diff)
		}

		next, err := Divide(total+1, shares)
		if err != nil {
			t.Fatalf("Divide(%d): %v", total+1, err)
		}
		for i, a := range next.Assignments {
			if a.Replicas < got.Assignments[i].Replicas {
				t.Fatalf("share %q: %d at total %d, %d at total %d", a.Name, got.Assignments[i].Replicas, total, a.Replicas, total+1)
			}
		}

		var weightSum int64
		for i, s := range shares {
			if (s.Replicas != nil && s.Replicas.Type == intstr.Int) || s.MinReplicas != nil || s.MaxReplicas != nil {
				return
			}
			weightSum += weights[i]
		}
		if weightSum == 0 {
			return // only 0% shares: nothing to be within quota of.
		}
		for i, a := range got.Assignments {
			exact := int64(total) * weights[i]
			lower, upper := exact/weightSum, (exact+weightSum-1)/weightSum
			if c := int64(a.Replicas); c < lower || c > upper {
				t.Fatalf("share %q: got %d, want within quota [%d,%d]", a.Name, c, lower, upper)
			}
		}
	})
}

func BenchmarkDivide(b *testing.B) {
	subsets := make([]Share, 10)
	for i := range subsets {
		subsets[i] = Share{Name: fmt.Sprintf("cluster-%d", i)}
		if i%2 == 0 {
			subsets[i].Replicas = pct("15%")
		}
	}
	subsets[1].MaxReplicas = ptr(50)
	subsets[3].MinReplicas = ptr(150)
	for _, bc := range []struct {
		name   string
		total  int32
		shares []Share
	}{
		{name: "10 subsets, 1000 replicas", total: 1000, shares: subsets},
		{name: "3 domains, 7 replicas", total: 7, shares: []Share{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Divide(bc.total, bc.shares); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
