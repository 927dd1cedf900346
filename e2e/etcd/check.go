package etcdcheck

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// register is the model's state of one key: absent, or holding value.
type register struct {
	present bool
	value   string
}

// Model is the porcupine model of the history: every key a register with
// put, get and compare-and-swap (a transaction If Value(key) == expect, or
// the key is absent when expect is "", Then Put(key, value)); operations are
// partitioned by key (linearizability is local, Herlihy and Wing), as each
// touches one key. A write whose outcome is unknown (its Output Failed) is
// accepted in either outcome, as etcd's robustness model accepts a failed
// request as persisted or lost (model.nonDeterministicState
// .applyFailedRequest); a CAS of unknown outcome applies if its comparison
// holds at the point porcupine places it.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(Op).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return register{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(register), input.(Op), output.(Op)
		switch in.Kind {
		case KindGet:
			return out.Found == s.present && out.Got == s.value, s
		case KindPut:
			return true, register{present: true, value: in.Value}
		case KindCAS:
			holds := !s.present && in.Expect == "" || s.present && in.Expect != "" && s.value == in.Expect
			if !out.Failed() && out.Succeeded != holds {
				return false, s
			}
			if holds {
				return true, register{present: true, value: in.Value}
			}
			return true, s
		}
		return false, s
	},
	Equal: func(a, b any) bool { return a.(register) == b.(register) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(Op), output.(Op)
		res := ""
		switch {
		case out.Failed():
			res = "unknown (" + out.Err + ")"
		case in.Kind == KindGet && !out.Found:
			res = "absent"
		case in.Kind == KindGet:
			res = fmt.Sprintf("%q", out.Got)
		case in.Kind == KindCAS:
			res = fmt.Sprint(out.Succeeded)
		default:
			res = fmt.Sprintf("ok rev %d", out.Revision)
		}
		switch in.Kind {
		case KindPut:
			return fmt.Sprintf("put(%s, %q) -> %s", in.Key, in.Value, res)
		case KindCAS:
			return fmt.Sprintf("cas(%s, %q -> %q) -> %s", in.Key, in.Expect, in.Value, res)
		}
		return fmt.Sprintf("get(%s) -> %s", in.Key, res)
	},
	DescribeState: func(state any) string {
		s := state.(register)
		if !s.present {
			return "absent"
		}
		return fmt.Sprintf("%q", s.value)
	},
}

// Operations turns the recorded history into porcupine operations, as etcd's
// robustness validation prepares its own (validate.go,
// prepareAndCategorizeOperations, and patch_history.go): a failed get is
// dropped (it has no effect and nothing to check); a failed write returns at
// infinity (math.MaxInt64: it may take effect any time after its call),
// unless a successful operation observed its value (every value is
// written once), in which case it returned no later than the first such
// observer did. It takes the operations of every client and returns them
// with one porcupine client per stream, and how many were dropped.
func Operations(ops []Op) (out []porcupine.Operation, dropped int) {
	// The earliest return of an operation that saw a value: a get that
	// returned it, a successful CAS that compared against it.
	seen := map[string]int64{}
	for _, o := range ops {
		if o.Failed() {
			continue
		}
		var v string
		switch {
		case o.Kind == KindGet && o.Found:
			v = o.Got
		case o.Kind == KindCAS && o.Succeeded && o.Expect != "":
			v = o.Expect
		default:
			continue
		}
		if r, ok := seen[o.Key+"\x00"+v]; !ok || o.Return < r {
			seen[o.Key+"\x00"+v] = o.Return
		}
	}
	streams := map[string]int{}
	for _, o := range ops {
		if o.Kind == KindGet && o.Failed() {
			dropped++
			continue
		}
		ret := o.Return
		if o.Failed() {
			ret = math.MaxInt64
			if r, ok := seen[o.Key+"\x00"+o.Value]; ok {
				ret = max(r, o.Call)
			}
		}
		id, ok := streams[o.Stream]
		if !ok {
			id = len(streams)
			streams[o.Stream] = id
		}
		out = append(out, porcupine.Operation{ClientId: id, Input: o, Call: o.Call, Output: o, Return: ret})
	}
	return out, dropped
}

// Result is the outcome of Check.
type Result struct {
	// Verdict is porcupine's: Ok, Illegal, or Unknown when the check timed
	// out.
	Verdict porcupine.CheckResult
	// Ops is how many operations were checked, Dropped how many failed
	// gets were left out, Unknown how many writes had an unknown outcome.
	Ops, Dropped, Unknown int
	// Info is porcupine's linearization information, for Visualize.
	Info porcupine.LinearizationInfo
}

// Check decides whether ops (every client's history) is linearizable, within
// timeout (0: no limit). It returns the verdict and counts.
func Check(ops []Op, timeout time.Duration) Result {
	pops, dropped := Operations(ops)
	unknown := 0
	for _, o := range ops {
		if o.IsWrite() && o.Failed() {
			unknown++
		}
	}
	verdict, info := porcupine.CheckOperationsVerbose(Model, pops, timeout)
	return Result{Verdict: verdict, Ops: len(pops), Dropped: dropped, Unknown: unknown, Info: info}
}

// Visualize writes porcupine's HTML visualization of r to w.
func (r Result) Visualize(w io.Writer) error { return porcupine.Visualize(Model, r.Info, w) }

// Cluster is what the monitor samples say about the cluster over the run.
type Cluster struct {
	// LeaderChanges counts changes of the leader between samples (the
	// leader named by the answering member of the highest term).
	LeaderChanges int
	// Final is the started members' names in the last member list, sorted.
	Final []string
	// Reused lists member IDs whose applied index went back by more than
	// half (a member ID running on lost data: it restarted from nothing).
	Reused []string
}

// AnalyzeSamples returns what the samples (of every client, any order) say:
// leader changes, the final member list, and member IDs seen running on
// lost data.
func AnalyzeSamples(samples []Sample) Cluster {
	slices.SortFunc(samples, func(a, b Sample) int { return int(a.Time - b.Time) })
	var c Cluster
	leader := ""
	maxApplied := map[string]uint64{}
	reused := map[string]bool{}
	for _, s := range samples {
		var term uint64
		l := ""
		for _, st := range s.Status {
			if st.Leader != "" && st.Leader != "0" && st.RaftTerm >= term {
				term, l = st.RaftTerm, st.Leader
			}
			if m := maxApplied[st.ID]; m > 100 && st.AppliedIndex < m/2 {
				reused[st.ID] = true
			}
			maxApplied[st.ID] = max(maxApplied[st.ID], st.AppliedIndex)
		}
		if l != "" && l != leader {
			if leader != "" {
				c.LeaderChanges++
			}
			leader = l
		}
		if len(s.Members) > 0 {
			c.Final = c.Final[:0]
			for _, m := range s.Members {
				if m.Started {
					c.Final = append(c.Final, m.Name)
				} else {
					c.Final = append(c.Final, "(unstarted "+m.PeerURL+")")
				}
			}
			sort.Strings(c.Final)
		}
	}
	for id := range reused {
		c.Reused = append(c.Reused, id)
	}
	sort.Strings(c.Reused)
	return c
}

// MembersMatch reports whether the final member list names exactly the
// instances want (pod names, any order).
func (c Cluster) MembersMatch(want []string) bool {
	w := slices.Clone(want)
	sort.Strings(w)
	return strings.Join(w, ",") == strings.Join(c.Final, ",")
}

// LongestWriteGap returns the longest time in [start, end] (Unix ns) without
// a write that succeeded: between start, the returns of the successful puts
// and CAS transactions (whatever their comparison's outcome: the store
// answered) and end. It takes every client's operations.
func LongestWriteGap(ops []Op, start, end int64) time.Duration {
	var t []int64
	for _, o := range ops {
		if o.IsWrite() && !o.Failed() && o.Return >= start && o.Return <= end {
			t = append(t, o.Return)
		}
	}
	slices.Sort(t)
	prev, gap := start, int64(0)
	for _, r := range append(t, end) {
		gap = max(gap, r-prev)
		prev = r
	}
	return time.Duration(gap)
}
