package etcdcheck

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func put(s, k, v string, call, ret int64) Op {
	return Op{Stream: s, Kind: KindPut, Key: k, Value: v, Call: call, Return: ret}
}

func get(s, k, got string, call, ret int64) Op {
	return Op{Stream: s, Kind: KindGet, Key: k, Found: got != "", Got: got, Call: call, Return: ret}
}

func cas(s, k, expect, v string, ok bool, call, ret int64) Op {
	return Op{Stream: s, Kind: KindCAS, Key: k, Expect: expect, Value: v, Succeeded: ok, Call: call, Return: ret}
}

func failed(o Op) Op { o.Err = "context deadline exceeded"; return o }

// TestCheck: recorded histories the checker must accept and histories it
// must reject (a stale read, a lost acknowledged write, a CAS that lies,
// a read of a value nobody wrote).
func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"sequential put get", []Op{put("a", "x", "1", 0, 10), get("a", "x", "1", 20, 30)}, porcupine.Ok},
		{"concurrent put, read sees old or new", []Op{
			put("a", "x", "1", 0, 10),
			put("a", "x", "2", 20, 50), get("b", "x", "1", 25, 30), get("c", "x", "2", 30, 40),
		}, porcupine.Ok},
		{"stale read after a newer read", []Op{
			put("a", "x", "1", 0, 10), put("a", "x", "2", 20, 30),
			get("b", "x", "2", 40, 50), get("c", "x", "1", 60, 70),
		}, porcupine.Illegal},
		{"acknowledged put lost", []Op{put("a", "x", "1", 0, 10), get("b", "x", "", 20, 30)}, porcupine.Illegal},
		{"read of a value never written", []Op{get("b", "x", "9", 20, 30)}, porcupine.Illegal},
		{"cas on absent key then get", []Op{cas("a", "x", "", "1", true, 0, 10), get("b", "x", "1", 20, 30)}, porcupine.Ok},
		{"cas claims success on a wrong value", []Op{
			put("a", "x", "1", 0, 10), cas("b", "x", "0", "2", true, 20, 30),
		}, porcupine.Illegal},
		{"two cas from the same value both succeed", []Op{
			put("a", "x", "1", 0, 10), cas("b", "x", "1", "2", true, 20, 30), cas("c", "x", "1", "3", true, 40, 50),
		}, porcupine.Illegal},
		{"failed put seen later: persisted", []Op{
			failed(put("a", "x", "1", 0, 10)), get("b", "x", "1", 100, 110),
		}, porcupine.Ok},
		{"failed put never seen: lost", []Op{
			put("a", "x", "0", 0, 5), failed(put("a", "x", "1", 6, 10)), get("b", "x", "0", 100, 110),
		}, porcupine.Ok},
		{"failed put seen, then the older value again", []Op{
			put("a", "x", "0", 0, 5), failed(put("a", "x", "1", 6, 10)),
			get("b", "x", "1", 100, 110), get("b", "x", "0", 120, 130),
		}, porcupine.Illegal},
		{"failed cas applies late", []Op{
			put("a", "x", "1", 0, 5), failed(cas("a", "x", "1", "2", false, 6, 10)),
			get("b", "x", "1", 20, 30), get("b", "x", "2", 200, 210),
		}, porcupine.Ok},
		{"failed get dropped", []Op{put("a", "x", "1", 0, 10), failed(get("b", "x", "7", 20, 30))}, porcupine.Ok},
		{"keys are independent", []Op{
			put("a", "x", "1", 0, 10), put("a", "y", "2", 20, 30), get("b", "x", "1", 40, 50), get("b", "y", "2", 40, 50),
		}, porcupine.Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(c.ops, 0)
			if r.Verdict != c.want {
				t.Errorf("Check = %s, want %s", r.Verdict, c.want)
			}
		})
	}
}

// TestOperations: a failed get is dropped; a failed write returns at
// infinity unless a successful read saw its value, then at that read's
// return.
func TestOperations(t *testing.T) {
	ops, dropped := Operations([]Op{
		failed(put("a", "x", "1", 0, 10)), failed(put("a", "x", "2", 11, 20)),
		failed(get("b", "x", "", 5, 6)), get("c", "x", "1", 30, 40),
	})
	if dropped != 1 || len(ops) != 3 {
		t.Fatalf("Operations: %d ops, %d dropped; want 3, 1", len(ops), dropped)
	}
	if ops[0].Return != 40 {
		t.Errorf("observed failed put returns at %d, want 40", ops[0].Return)
	}
	if ops[1].Return != 1<<63-1 {
		t.Errorf("unobserved failed put returns at %d, want MaxInt64", ops[1].Return)
	}
}

// TestAnalyzeSamples: leader changes are counted, the last member list is
// the final one, and a member whose applied index falls back is reported.
func TestAnalyzeSamples(t *testing.T) {
	st := func(id, leader string, term, applied uint64) MemberStatus {
		return MemberStatus{ID: id, Leader: leader, RaftTerm: term, AppliedIndex: applied}
	}
	c := AnalyzeSamples([]Sample{
		{Time: 3, Status: []MemberStatus{st("a", "b", 3, 900), st("c", "b", 3, 50)},
			Members: []Member{{Name: "p-1", Started: true}, {Name: "p-0", Started: true}}},
		{Time: 1, Status: []MemberStatus{st("a", "a", 2, 500), st("c", "a", 2, 500)}},
		{Time: 2, Status: []MemberStatus{st("a", "a", 2, 800)}},
	})
	if c.LeaderChanges != 1 {
		t.Errorf("leader changes %d, want 1", c.LeaderChanges)
	}
	if got := strings.Join(c.Final, ","); got != "p-0,p-1" || !c.MembersMatch([]string{"p-1", "p-0"}) {
		t.Errorf("final members %s", got)
	}
	if got := strings.Join(c.Reused, ","); got != "c" {
		t.Errorf("reused %q, want c", got)
	}
}

// TestLongestWriteGap: the gap counts from the window's start and to its
// end; failed writes and reads do not close a gap.
func TestLongestWriteGap(t *testing.T) {
	ops := []Op{put("a", "x", "1", 0, 100), failed(put("a", "x", "2", 150, 400)), get("b", "x", "1", 300, 350),
		cas("a", "x", "3", "4", false, 500, 600), put("a", "x", "5", 700, 750)}
	if got := LongestWriteGap(ops, 50, 1000); got != 500 {
		t.Errorf("LongestWriteGap = %d, want 500 (100 → 600)", got)
	}
	if got := LongestWriteGap(nil, 0, 10); got != 10 {
		t.Errorf("empty: %d, want 10", got)
	}
}
