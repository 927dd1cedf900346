package peers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/fleetset/fleetset/member/contact"
	"github.com/fleetset/fleetset/member/peers"
)

// testCA is a generated fleet peer CA that signs certificates as OCM's
// add-on manager does (addon-framework utils.signCSR: server and client
// auth, no IP address).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes tls.crt and tls.key of an agent certificate of cluster into
// a new directory and returns it.
func (ca *testCA) issue(t *testing.T, cluster string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:   pkix.Name{CommonName: peers.AgentPrefix(cluster) + "addon-agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("tls.crt", "CERTIFICATE", der)
	write("tls.key", "EC PRIVATE KEY", kb)
	return dir
}

// member is one member's peer TLS: its certificate from ca for cluster,
// trusting trust.
func member(t *testing.T, ca *testCA, cluster string, trust *testCA) *peers.TLS {
	t.Helper()
	b := &peers.CABundle{}
	if err := b.Set(trust.pem); err != nil {
		t.Fatal(err)
	}
	return &peers.TLS{CertDir: ca.issue(t, cluster), CA: b.Pool}
}

// serveTLS serves h over the server TLS of srv on loopback and returns its
// base URL.
func serveTLS(t *testing.T, srv *peers.TLS, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	peers.Serve(ctx, ln, h, srv.ServerConfig())
	return "https://" + ln.Addr().String()
}

func inContact() *contact.Monitor {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := contact.NewMonitor(clk, 15*time.Second)
	m.Attempt(clk.Now(), nil)
	return m
}

// refusedFor returns the Refused reason of one result ("" none).
func refusedFor(r peers.Result) string {
	var rf *peers.Refused
	if errors.As(r.Err, &rf) {
		return rf.Reason
	}
	return ""
}

// TestMutualTLS asks over mutual TLS: the happy path answers; a server with
// a certificate of another CA, or one naming another cluster than the one
// asked, is refused by the asker; an answer without the question's nonce (a
// recorded answer replayed) is refused.
func TestMutualTLS(t *testing.T) {
	fleet, other := newCA(t, "fleet peer CA"), newCA(t, "another CA")
	east := member(t, fleet, "east", fleet)
	west := serveTLS(t, member(t, fleet, "west", fleet), peers.Handler("west", inContact()))
	impostor := serveTLS(t, member(t, other, "north", fleet), peers.Handler("north", inContact()))
	// A server of the fleet whose certificate names west, asked as south.
	misnamed := serveTLS(t, member(t, fleet, "west", fleet), peers.Handler("south", inContact()))
	recorded, _ := json.Marshal(peers.Answer{Cluster: "replay", InContact: true, Nonce: "0123456789abcdef0123456789abcdef"})
	replayer := serveTLS(t, member(t, fleet, "replay", fleet), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(recorded)
	}))

	got := peers.Ask(context.Background(), east.Clients(), peers.URLs{
		"west": {west}, "north": {impostor}, "south": {misnamed}, "replay": {replayer},
	}, 2*time.Second)
	want := map[string]string{"west": "", "north": peers.ReasonUntrusted, "south": peers.ReasonIdentity, "replay": peers.ReasonNonce}
	for _, r := range got {
		if reason := refusedFor(r); reason != want[r.Cluster] {
			t.Errorf("%s: refused %q (err %v), want %q", r.Cluster, reason, r.Err, want[r.Cluster])
		}
		if r.Cluster == "west" && (r.Err != nil || !r.Answer.InContact || r.Answer.Cluster != "west") {
			t.Errorf("west: %+v, want an answer in contact", r)
		}
		if r.Cluster != "west" && r.Answer.InContact {
			t.Errorf("%s: a refused answer counts as in contact: %+v", r.Cluster, r)
		}
	}
}

// TestServerRefusesClients: the peer endpoint refuses a client without a
// certificate and one with a certificate of another CA, and answers one of
// the fleet.
func TestServerRefusesClients(t *testing.T) {
	fleet, other := newCA(t, "fleet peer CA"), newCA(t, "another CA")
	srv := member(t, fleet, "west", fleet)
	url := serveTLS(t, srv, peers.Handler("west", inContact()))
	asker := member(t, fleet, "east", fleet)

	noCert := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // the server is what is tested
	}}}
	if resp, err := noCert.Get(url + peers.Path + "?nonce=x"); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a client without a certificate got %s, want the handshake refused", resp.Status)
	}
	foreign := member(t, other, "east", other)
	if r := peers.Ask(context.Background(), foreign.Clients(), peers.URLs{"west": {url}}, 2*time.Second); r[0].Err == nil {
		t.Errorf("a client with another CA's certificate got %+v, want refused", r[0])
	}
	if r := peers.Ask(context.Background(), asker.Clients(), peers.URLs{"west": {url}}, 2*time.Second); r[0].Err != nil || !r[0].Answer.InContact {
		t.Errorf("a fleet member got %+v, want an answer", r[0])
	}
}

// TestNoCARefuses: before the fleet peer CA is loaded the asker refuses
// every answer (no-ca): a member that cannot check its peers hears none.
func TestNoCARefuses(t *testing.T) {
	fleet := newCA(t, "fleet peer CA")
	url := serveTLS(t, member(t, fleet, "west", fleet), peers.Handler("west", inContact()))
	asker := &peers.TLS{CertDir: fleet.issue(t, "east"), CA: (&peers.CABundle{}).Pool}
	r := peers.Ask(context.Background(), asker.Clients(), peers.URLs{"west": {url}}, 2*time.Second)
	if refusedFor(r[0]) != peers.ReasonNoCA {
		t.Errorf("without a CA: %+v, want refused %s", r[0], peers.ReasonNoCA)
	}
}

// TestClusterOf reads the cluster from OCM's agent subjects only.
func TestClusterOf(t *testing.T) {
	for cn, want := range map[string]string{
		"system:open-cluster-management:cluster:east:addon:fleetset:agent:addon-agent": "east",
		"system:open-cluster-management:cluster:east:addon:other:agent:addon-agent":    "",
		"system:open-cluster-management:cluster:east:addon:fleetset:agent:":            "",
		"east": "",
	} {
		got, _ := peers.ClusterOf(&x509.Certificate{Subject: pkix.Name{CommonName: cn}})
		if got != want {
			t.Errorf("ClusterOf(%q) = %q, want %q", cn, got, want)
		}
	}
}
