// Command etcd-client is the etcd acceptance test's client (make
// e2e-kind-etcd, docs/etcd.md). It runs in a pod of a member cluster,
// talks to the etcd members by their fleet DNS names with etcd's own Go
// client, and prints JSON lines (etcdcheck.Record) to stdout:
//
//   - every operation of its workers (puts, linearizable gets and
//     compare-and-swap transactions on a few keys; every value written is
//     unique) with its call and return time and, for a failed one, its
//     error (the outcome is unknown);
//   - with -monitor, a sample each second of the member list and every
//     member's status;
//   - at the end, after the stop key appears (or -max-duration), a
//     linearizable get of every key, then the read-back of every put it had
//     acknowledged at the put's revision (Verify), and a Summary.
//
// etcd-check reads these lines from every client and checks them.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdcheck "github.com/fleetset/fleetset/e2e/etcd"
)

func main() {
	var (
		endpoints = flag.String("endpoints", "", "comma-separated client URLs of the members (fleet DNS names)")
		name      = flag.String("name", os.Getenv("HOSTNAME"), "client name, the prefix of its streams and values")
		workers   = flag.Int("workers", 3, "concurrent workers")
		keys      = flag.Int("keys", 8, "keys the workers use")
		prefix    = flag.String("prefix", "", "prefix of the keys: the same for every client of a run, new for each run (the history starts with the keys absent)")
		interval  = flag.Duration("interval", 50*time.Millisecond, "pause of a worker between two operations")
		opTimeout = flag.Duration("op-timeout", 2*time.Second, "timeout of one operation: then its outcome is unknown")
		maxDur    = flag.Duration("max-duration", 60*time.Minute, "stop after this long even without the stop key")
		stopKey   = flag.String("stop-key", "fleetset-acceptance/stop", "the workers stop once this key exists")
		monitor   = flag.Bool("monitor", false, "sample the member list and every member's status each second")
	)
	flag.Parse()
	if *endpoints == "" || *prefix == "" {
		fmt.Fprintln(os.Stderr, "etcd-client: -endpoints and -prefix are required")
		os.Exit(2)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            strings.Split(*endpoints, ","),
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-client:", err)
		os.Exit(1)
	}
	defer cli.Close()
	c := &client{cli: cli, name: *name, opTimeout: *opTimeout, out: json.NewEncoder(os.Stdout)}
	for i := range *keys {
		c.keys = append(c.keys, fmt.Sprintf("%sk%d", *prefix, i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *maxDur)
	defer cancel()
	go c.waitStop(ctx, cancel, *stopKey)
	var wg sync.WaitGroup
	if *monitor {
		wg.Go(func() { c.monitor(ctx) })
	}
	for w := range *workers {
		wg.Go(func() { c.work(ctx, w, *interval) })
	}
	wg.Wait()
	c.finish(*monitor)
}

// client holds what the workers share.
type client struct {
	cli       *clientv3.Client
	name      string
	keys      []string
	opTimeout time.Duration

	mu     sync.Mutex
	out    *json.Encoder
	ops    int
	failed int
	acked  []etcdcheck.Op // successful puts and CAS that wrote
}

func (c *client) emit(r etcdcheck.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Op != nil {
		c.ops++
		if r.Op.Failed() {
			c.failed++
		} else if r.Op.Kind == etcdcheck.KindPut || r.Op.Kind == etcdcheck.KindCAS && r.Op.Succeeded {
			c.acked = append(c.acked, *r.Op)
		}
	}
	_ = c.out.Encode(r)
}

// waitStop cancels the workers once key exists.
func (c *client) waitStop(ctx context.Context, cancel context.CancelFunc, key string) {
	for ctx.Err() == nil {
		qctx, qcancel := context.WithTimeout(ctx, c.opTimeout)
		r, err := c.cli.Get(qctx, key)
		qcancel()
		if err == nil && len(r.Kvs) > 0 {
			cancel()
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// work runs one worker until ctx ends: one stream of sequential operations.
// After a write of unknown outcome it starts a new stream (its next call may
// overlap that write, whose return time is unknown, as etcd's robustness
// client does) and only reads until a read succeeds.
func (c *client) work(ctx context.Context, w int, interval time.Duration) {
	gen, seq := 0, 0
	last := map[string]string{} // the value this worker last saw per key
	afterFailure := false
	for ctx.Err() == nil {
		key := c.keys[rand.IntN(len(c.keys))]
		o := etcdcheck.Op{Stream: fmt.Sprintf("%s/w%d/%d", c.name, w, gen), Key: key}
		switch r := rand.Float64(); {
		case afterFailure || r < 0.4:
			o.Kind = etcdcheck.KindGet
		case r < 0.75:
			o.Kind = etcdcheck.KindPut
		default:
			o.Kind = etcdcheck.KindCAS
		}
		if o.Kind != etcdcheck.KindGet {
			seq++
			o.Value = fmt.Sprintf("%s-w%d-%d", c.name, w, seq)
			o.Expect = last[key]
		}
		c.do(ctx, &o)
		if ctx.Err() != nil && o.Failed() && o.Kind == etcdcheck.KindGet {
			return // cancelled by the stop, not a fault
		}
		switch {
		case o.Failed() && o.IsWrite():
			gen++
			afterFailure = true
		case !o.Failed() && o.Kind == etcdcheck.KindGet:
			afterFailure = false
			last[key] = o.Got
		case !o.Failed() && (o.Kind == etcdcheck.KindPut || o.Succeeded):
			last[key] = o.Value
		}
		c.emit(etcdcheck.Record{Op: &o})
		time.Sleep(interval)
	}
}

// do runs o against the cluster and fills in its times and outcome. A
// write's context is not the run's: a write is never cut short by the stop.
func (c *client) do(ctx context.Context, o *etcdcheck.Op) {
	parent := ctx
	if o.IsWrite() {
		parent = context.Background()
	}
	octx, cancel := context.WithTimeout(parent, c.opTimeout)
	defer cancel()
	o.Call = time.Now().UnixNano()
	var err error
	switch o.Kind {
	case etcdcheck.KindGet:
		var r *clientv3.GetResponse
		if r, err = c.cli.Get(octx, o.Key); err == nil {
			o.Revision = r.Header.Revision
			if len(r.Kvs) > 0 {
				o.Found, o.Got = true, string(r.Kvs[0].Value)
			}
		}
	case etcdcheck.KindPut:
		var r *clientv3.PutResponse
		if r, err = c.cli.Put(octx, o.Key, o.Value); err == nil {
			o.Revision = r.Header.Revision
		}
	case etcdcheck.KindCAS:
		cmp := clientv3.Compare(clientv3.CreateRevision(o.Key), "=", 0)
		if o.Expect != "" {
			cmp = clientv3.Compare(clientv3.Value(o.Key), "=", o.Expect)
		}
		var r *clientv3.TxnResponse
		if r, err = c.cli.Txn(octx).If(cmp).Then(clientv3.OpPut(o.Key, o.Value)).Commit(); err == nil {
			o.Revision, o.Succeeded = r.Header.Revision, r.Succeeded
		}
	}
	o.Return = time.Now().UnixNano()
	if o.Return <= o.Call {
		o.Return = o.Call + 1
	}
	if err != nil {
		o.Err = err.Error()
	}
}

// monitor samples the cluster each second until ctx ends.
func (c *client) monitor(ctx context.Context) {
	for ctx.Err() == nil {
		s := c.sample()
		c.emit(etcdcheck.Record{Sample: &s})
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// sample returns the member list (linearizable) and each started member's
// status.
func (c *client) sample() etcdcheck.Sample {
	s := etcdcheck.Sample{Time: time.Now().UnixNano()}
	ctx, cancel := context.WithTimeout(context.Background(), c.opTimeout)
	defer cancel()
	ml, err := c.cli.MemberList(ctx)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	for _, m := range ml.Members {
		peer := ""
		if len(m.PeerURLs) > 0 {
			peer = m.PeerURLs[0]
		}
		s.Members = append(s.Members, etcdcheck.Member{ID: fmt.Sprintf("%x", m.ID), Name: m.Name, PeerURL: peer, Started: len(m.ClientURLs) > 0})
		if len(m.ClientURLs) == 0 {
			continue
		}
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.cli.Status(sctx, m.ClientURLs[0])
		scancel()
		if err != nil {
			continue
		}
		s.Status = append(s.Status, etcdcheck.MemberStatus{ID: fmt.Sprintf("%x", st.Header.MemberId), Endpoint: m.ClientURLs[0],
			Leader: fmt.Sprintf("%x", st.Leader), RaftTerm: st.RaftTerm, AppliedIndex: st.RaftAppliedIndex})
	}
	return s
}

// finish reads every key (recorded), reads back every acknowledged write at
// its revision, and prints the Verify and Summary lines.
func (c *client) finish(monitor bool) {
	ctx := context.Background()
	for _, k := range c.keys {
		for try := 0; try < 30; try++ {
			o := etcdcheck.Op{Stream: c.name + "/final", Kind: etcdcheck.KindGet, Key: k}
			c.do(ctx, &o)
			c.emit(etcdcheck.Record{Op: &o})
			if !o.Failed() {
				break
			}
			time.Sleep(time.Second)
		}
	}
	if monitor {
		s := c.sample()
		c.emit(etcdcheck.Record{Sample: &s})
	}
	v := etcdcheck.Verify{Acknowledged: len(c.acked)}
	for _, a := range c.acked {
		var got string
		var err error
		for try := 0; try < 10; try++ {
			qctx, cancel := context.WithTimeout(ctx, c.opTimeout)
			var r *clientv3.GetResponse
			r, err = c.cli.Get(qctx, a.Key, clientv3.WithRev(a.Revision))
			cancel()
			if err == nil {
				got = ""
				if len(r.Kvs) > 0 {
					got = string(r.Kvs[0].Value)
				}
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil || got != a.Value {
			v.Lost++
			if len(v.Examples) < 10 {
				v.Examples = append(v.Examples, fmt.Sprintf("%s=%q at rev %d: got %q (%v)", a.Key, a.Value, a.Revision, got, err))
			}
		}
	}
	c.emit(etcdcheck.Record{Verify: &v})
	c.mu.Lock()
	sum := etcdcheck.Summary{Client: c.name, Ops: c.ops, Failed: c.failed}
	c.mu.Unlock()
	c.emit(etcdcheck.Record{Summary: &sum})
}
