// Package peers lets members corroborate a lost hub: each member serves
// whether it reaches the hub (Handler), and a member that lost the hub asks
// the others (Ask) before it fences, as medik8s self-node-remediation asks
// its peers before a node fences itself.
//
// Fan-out is bounded: a member asks only while it has lost the hub, at most
// once per poll, every peer at once with one short timeout; with 100 member
// clusters that is at most 99 small GETs per poll per lost member, and none
// while the fleet is healthy.
package peers

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/fleetset/fleetset/member/contact"
)

// Path is the peer endpoint's path.
const Path = "/fleetset/v1/contact"

// Answer is what one member says of its contact with the hub.
type Answer struct {
	// Cluster is the answering member's ManagedCluster name.
	Cluster string `json:"cluster"`
	// InContact is true when it reached the hub within half its heartbeat
	// timeout: recently enough that, when the member asking has lost the
	// hub (no contact for its whole timeout), this one reached the hub
	// after the asker last did. A peer that reached it 2/3 of a timeout
	// ago may only have outlived the asker by one heartbeat period into a
	// hub outage, and does not count. The hub uses the same half timeout
	// to count members lost in a full disruption.
	InContact bool `json:"inContact"`
	// SinceContactSeconds is how long ago it last reached the hub, in whole
	// seconds, by its own monotonic clock.
	SinceContactSeconds int64 `json:"sinceContactSeconds"`
	// Nonce echoes the question's nonce (query parameter NonceParam, at
	// most MaxNonce characters): an answer recorded earlier and replayed
	// carries another one, and the asker refuses it (ReasonNonce).
	Nonce string `json:"nonce,omitempty"`
}

// NonceParam is the query parameter of the question's nonce.
const NonceParam = "nonce"

// MaxNonce is the longest nonce a peer echoes, in characters.
const MaxNonce = 64

// Handler serves GET Path with this member's Answer, read from m, echoing
// the question's nonce (400 when it is longer than MaxNonce).
func Handler(cluster string, m *contact.Monitor) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Path, func(w http.ResponseWriter, r *http.Request) {
		nonce := r.URL.Query().Get(NonceParam)
		if len(nonce) > MaxNonce {
			http.Error(w, "nonce too long", http.StatusBadRequest)
			return
		}
		s := m.Status()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Answer{Cluster: cluster, InContact: s.Known && s.SinceContact < m.Timeout()/2,
			SinceContactSeconds: int64(s.SinceContact / time.Second), Nonce: nonce})
	})
	return mux
}

// MaxConnections is how many connections the peer endpoint serves at once;
// more wait in the listen backlog.
const MaxConnections = 32

// NewClient returns the HTTP client members ask peers with: no proxy, no
// kept-alive connections, and no redirect followed (a 3xx is a failed
// answer, so a peer cannot send the question elsewhere).
func NewClient() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true, ResponseHeaderTimeout: 5 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Serve serves h on ln until ctx is done, at most MaxConnections at once,
// with read, write and idle timeouts of a few seconds and 4 KiB of headers:
// an endpoint any member's network can reach must not be held open. With
// tc (TLS.ServerConfig) it serves TLS only; nil serves plain HTTP (tests,
// --member-peer-insecure).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, tc *tls.Config) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 4096,
		ErrorLog: log.New(io.Discard, "", 0)}
	ln = netutil.LimitListener(ln, MaxConnections)
	if tc != nil {
		srv.TLSConfig = tc
		ln = tls.NewListener(ln, tc)
	}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
}

// Result is one peer's answer, or why there is none.
type Result struct {
	// Cluster is the peer asked.
	Cluster string
	// Answer is its answer; valid when Err is nil.
	Answer Answer
	// Err says why the peer did not answer (unreachable, timeout, a bad
	// answer, or one refused: a *Refused, by reason).
	Err error
}

// URLs is, by cluster name, the base URLs of a peer's member component:
// one per replica of fleetset-scheduler (v1alpha1.PeersAllKey).
type URLs map[string][]string

// Ask asks every peer (cluster name → base URLs) at once, each with the
// client clients gives for its cluster, and returns the results sorted by
// cluster. A peer's URLs are tried in order, each bounded by timeout, until
// one answers: any replica of the peer's member component answers for it.
// Each question carries a fresh random nonce; an answer without it, or
// naming another cluster, is refused (and the next URL tried). It never
// fails as a whole: a peer no URL of which answers is a Result with the
// last Err, and every refusal counts in
// fleetset_member_peer_answers_refused_total.
func Ask(ctx context.Context, clients Clients, peers URLs, timeout time.Duration) []Result {
	out := make([]Result, 0, len(peers))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for cluster, urls := range peers {
		wg.Go(func() {
			r := Result{Cluster: cluster, Err: fmt.Errorf("peer %s: no URL", cluster)}
			for _, url := range urls {
				if ctx.Err() != nil {
					break
				}
				r.Answer, r.Err = ask(ctx, clients(cluster), url, timeout)
				if r.Err == nil && r.Answer.Cluster != cluster {
					r.Err = &Refused{ReasonCluster, fmt.Errorf("peer at %s answered as cluster %q", url, r.Answer.Cluster)}
					r.Answer = Answer{}
				}
				if rf := (*Refused)(nil); errors.As(r.Err, &rf) {
					refusedAnswers.WithLabelValues(rf.Reason).Inc()
				}
				if r.Err == nil {
					break
				}
			}
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

func ask(ctx context.Context, hc *http.Client, url string, timeout time.Duration) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+Path+"?"+NonceParam+"="+nonce, nil)
	if err != nil {
		return Answer{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("peer at %s: %s", url, resp.Status)
	}
	var a Answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("peer at %s: %w", url, err)
	}
	if a.Nonce != nonce {
		return Answer{}, &Refused{ReasonNonce, fmt.Errorf("peer at %s answered without the question's nonce (a replayed answer?)", url)}
	}
	a.Nonce = ""
	return a, nil
}
