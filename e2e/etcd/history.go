// Package etcdcheck is the etcd acceptance test's history and its checks
// (make e2e-kind-etcd, docs/etcd.md): the client (cmd/etcd-client) records
// puts, gets and compare-and-swap transactions on a few keys as JSON lines,
// with call and return times and unknown outcomes for failed writes; Check
// decides whether the history is linearizable with porcupine, modelling
// every key as a register as etcd's robustness tests model their KV store
// (go.etcd.io/etcd/tests/robustness/model) and treating indeterminate
// results as they do (validate.prepareAndCategorizeOperations: a failed read
// is dropped, a failed write may take effect at any time after its call).
// The client's monitor samples (member list, every member's status) give
// the leader changes, the final member list and the member-ID check.
package etcdcheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Op kinds.
const (
	KindPut = "put"
	KindGet = "get"
	KindCAS = "cas"
)

// Op is one operation of the history, as the client records it (one JSON
// line). Times are Unix nanoseconds of the host's wall clock: every kind
// node shares the host's kernel clock, so times of clients in different
// clusters compare.
type Op struct {
	// Stream identifies a sequential stream of operations: a client
	// worker, renumbered after every write with an unknown outcome (whose
	// return time is unknown, so the worker's next operation may overlap it).
	Stream string `json:"s"`
	Kind   string `json:"op"`
	Key    string `json:"k"`
	// Value is what put writes and what CAS writes on success.
	Value string `json:"v,omitempty"`
	// Expect is the value a CAS compares the key with ("" = absent).
	Expect string `json:"e,omitempty"`
	Call   int64  `json:"call"`
	Return int64  `json:"ret"`
	// Err is the error of a failed operation: its outcome is unknown.
	Err string `json:"err,omitempty"`
	// Found and Got are what a get returned (Got "" when not Found).
	Found bool   `json:"found,omitempty"`
	Got   string `json:"got,omitempty"`
	// Succeeded is a CAS's outcome.
	Succeeded bool `json:"ok,omitempty"`
	// Revision is the response header's revision (of a put: the revision
	// it wrote).
	Revision int64 `json:"rev,omitempty"`
}

// Failed reports whether the operation's outcome is unknown.
func (o Op) Failed() bool { return o.Err != "" }

// IsWrite reports whether the operation may change the store.
func (o Op) IsWrite() bool { return o.Kind == KindPut || o.Kind == KindCAS }

// Record is one line of a client's output: an operation, a monitor sample
// or the client's verification summary.
type Record struct {
	Op      *Op      `json:"o,omitempty"`
	Sample  *Sample  `json:"m,omitempty"`
	Verify  *Verify  `json:"verify,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
}

// Sample is one monitor observation: the member list (linearizable) and the
// status of every member that answered.
type Sample struct {
	Time    int64          `json:"t"`
	Members []Member       `json:"members,omitempty"`
	Status  []MemberStatus `json:"status,omitempty"`
	Err     string         `json:"err,omitempty"`
}

// Member is one entry of the member list. IDs are hexadecimal, as etcdctl
// prints them.
type Member struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	PeerURL string `json:"peer"`
	Started bool   `json:"started"`
}

// MemberStatus is one member's answer to Status.
type MemberStatus struct {
	ID           string `json:"id"`
	Endpoint     string `json:"endpoint"`
	Leader       string `json:"leader"`
	RaftTerm     uint64 `json:"term"`
	AppliedIndex uint64 `json:"applied"`
}

// Verify is what a client found when it read back every put it had
// acknowledged, at the put's revision.
type Verify struct {
	Acknowledged int      `json:"acknowledged"`
	Lost         int      `json:"lost"`
	Examples     []string `json:"examples,omitempty"`
}

// Summary is a client's last line: how many operations it recorded.
type Summary struct {
	Client string `json:"client"`
	Ops    int    `json:"ops"`
	Failed int    `json:"failed"`
}

// ReadRecords reads JSON lines from r and returns the records; lines that
// are not records (log lines of the container) are skipped. It returns an
// error only if r fails.
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			continue
		}
		if rec.Op == nil && rec.Sample == nil && rec.Verify == nil && rec.Summary == nil {
			continue
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading records: %w", err)
	}
	return out, nil
}
