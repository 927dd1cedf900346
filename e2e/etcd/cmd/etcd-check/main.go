// Command etcd-check checks the histories etcd-client printed (make
// e2e-kind-etcd, docs/etcd.md): it reads the JSON lines of every file given,
// decides whether the operations are linearizable (etcdcheck.Check,
// porcupine), sums up the clients' read-back of their acknowledged writes,
// and compares the last member list with -members. It prints one line
//
//	CHECK ops=<n> linearizable=<bool> verdict=<Ok|Illegal|Unknown> unknown_writes=<n> acknowledged=<n> acknowledged_lost=<n> members_match=<bool> members=<names> leader_changes=<n> reused_ids=<n> clients=<n>
//
// and exits 1 if a check fails (with -viz, porcupine's visualization of a
// non-linearizable history is written there), 2 on bad input.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	etcdcheck "github.com/fleetset/fleetset/e2e/etcd"
)

func main() {
	members := flag.String("members", "", "comma-separated pod names the final member list must equal (empty: not checked)")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound of the linearizability check (then the verdict is Unknown, a failure)")
	viz := flag.String("viz", "", "write porcupine's HTML visualization here when the history is not linearizable")
	var windows []window
	flag.Func("window", "NAME=START,END (Unix ns): print gap_ms_NAME, the longest time without a successful write in that window (repeatable)", func(v string) error {
		var w window
		name, rest, ok := strings.Cut(v, "=")
		if _, err := fmt.Sscanf(rest, "%d,%d", &w.start, &w.end); !ok || err != nil || w.end < w.start {
			return fmt.Errorf("%q: want NAME=START,END", v)
		}
		w.name = name
		windows = append(windows, w)
		return nil
	})
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "etcd-check: no history files given")
		os.Exit(2)
	}
	var (
		ops     []etcdcheck.Op
		samples []etcdcheck.Sample
		acked   int
		lost    int
		clients int
	)
	for _, p := range flag.Args() {
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcd-check:", err)
			os.Exit(2)
		}
		recs, err := etcdcheck.ReadRecords(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcd-check:", p, err)
			os.Exit(2)
		}
		verified := false
		for _, r := range recs {
			switch {
			case r.Op != nil:
				ops = append(ops, *r.Op)
			case r.Sample != nil:
				samples = append(samples, *r.Sample)
			case r.Verify != nil:
				verified = true
				acked += r.Verify.Acknowledged
				lost += r.Verify.Lost
				for _, e := range r.Verify.Examples {
					fmt.Fprintf(os.Stderr, "%s: acknowledged write lost: %s\n", p, e)
				}
			}
		}
		if !verified {
			fmt.Fprintf(os.Stderr, "etcd-check: %s: the client did not finish (no read-back)\n", p)
			lost = max(lost, 1)
		}
		clients++
	}
	res := etcdcheck.Check(ops, *timeout)
	cl := etcdcheck.AnalyzeSamples(samples)
	match := true
	if *members != "" {
		match = cl.MembersMatch(strings.Split(*members, ","))
	}
	lin := res.Verdict == "Ok"
	fmt.Printf("CHECK ops=%d linearizable=%t verdict=%s unknown_writes=%d acknowledged=%d acknowledged_lost=%d members_match=%t members=%s leader_changes=%d reused_ids=%d clients=%d\n",
		len(ops), lin, res.Verdict, res.Unknown, acked, lost, match, strings.Join(cl.Final, ","), cl.LeaderChanges, len(cl.Reused), clients)
	for _, w := range windows {
		fmt.Printf("GAP %s ms=%d\n", w.name, etcdcheck.LongestWriteGap(ops, w.start, w.end).Milliseconds())
	}
	if !lin && *viz != "" {
		if f, err := os.Create(*viz); err == nil {
			_ = res.Visualize(f)
			f.Close()
			fmt.Fprintln(os.Stderr, "etcd-check: visualization in", *viz)
		}
	}
	if !lin || lost > 0 || !match || len(cl.Reused) > 0 {
		os.Exit(1)
	}
}

// window is a named time range of the run (Unix ns).
type window struct {
	name       string
	start, end int64
}
