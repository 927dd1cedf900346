package peers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SignerName is the CustomSigner of the add-on's second OCM registration
// (manifests/addon/addontemplate.yaml): the add-on manager signs each
// member's peer certificate with the fleet peer CA under this name.
const SignerName = "fleetset.io/peer"

// AddonName is the OCM add-on whose agents are the members; it is part of
// the subject OCM gives each agent's certificate.
const AddonName = "fleetset"

// CertDir is where OCM's add-on framework mounts the Secret
// <addon>-<signer with / as ->-client-cert of a CustomSigner registration
// (ocm v1.2.0 pkg/addon/templateagent/decorator.go), holding tls.crt and
// tls.key: the add-on's --member-peer-cert-dir.
const CertDir = "/managed/fleetset.io-peer"

// CAConfigMapName and CAConfigMapKey name the hub ConfigMap, in
// CANamespace, that carries the fleet peer CA's certificate (PEM) for the
// members to trust; the Secret that signs (CustomSigner signingCA) lives
// beside it and only the add-on manager reads it.
const (
	CANamespace     = "open-cluster-management-hub"
	CAConfigMapName = "fleetset-peer-ca"
	CAConfigMapKey  = "ca.crt"
)

// AgentPrefix returns the certificate subject common name prefix OCM gives
// the agents of add-on AddonName on cluster (addon-framework
// agent.DefaultUser: system:open-cluster-management:cluster:<cluster>:
// addon:<addon>:agent:<agent name>).
func AgentPrefix(cluster string) string {
	return "system:open-cluster-management:cluster:" + cluster + ":addon:" + AddonName + ":agent:"
}

// ClusterOf returns the cluster a certificate's subject common name names
// as an agent of add-on AddonName, and false for any other subject.
func ClusterOf(cert *x509.Certificate) (string, bool) {
	rest, ok := strings.CutPrefix(cert.Subject.CommonName, "system:open-cluster-management:cluster:")
	if !ok {
		return "", false
	}
	cluster, agent, ok := strings.Cut(rest, ":addon:"+AddonName+":agent:")
	if !ok || cluster == "" || agent == "" || strings.Contains(cluster, ":") {
		return "", false
	}
	return cluster, true
}

// Refused is why an answer or a question was refused; Reason is the
// label of fleetset_member_peer_answers_refused_total.
type Refused struct {
	Reason string
	Err    error
}

func (r *Refused) Error() string { return r.Reason + ": " + r.Err.Error() }
func (r *Refused) Unwrap() error { return r.Err }

// Reasons of Refused.
const (
	// ReasonNoCA: no fleet peer CA is known yet.
	ReasonNoCA = "no-ca"
	// ReasonUntrusted: the certificate does not chain to the fleet peer CA
	// with client authentication, or there is none.
	ReasonUntrusted = "untrusted"
	// ReasonIdentity: the certificate names another cluster than the one
	// asked (or no add-on agent at all).
	ReasonIdentity = "identity"
	// ReasonNonce: the answer does not carry the question's nonce.
	ReasonNonce = "nonce"
	// ReasonCluster: the answer's body names another cluster.
	ReasonCluster = "cluster"
)

// TLS is the mutual TLS of the peer endpoint: each member presents the
// certificate OCM signed for it (CertDir, read again at every handshake,
// so OCM's rotation is picked up) and trusts only the fleet peer CA (CA).
type TLS struct {
	// CertDir holds tls.crt and tls.key.
	CertDir string
	// CA returns the fleet peer CA pool; an error refuses every handshake
	// with ReasonNoCA.
	CA func() (*x509.CertPool, error)
}

func (t *TLS) keyPair() (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(filepath.Join(t.CertDir, "tls.crt"), filepath.Join(t.CertDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("peer certificate: %w", err)
	}
	return &c, nil
}

// verify checks that raw (the peer's chain, leaf first) chains to the fleet
// peer CA for client authentication — the extended key usage OCM puts in
// every certificate it signs (addon-framework utils.signCSR sets server and
// client auth; the kube-apiserver-client signer client auth only), so it is
// also what a server certificate is checked for — and that its subject is
// an add-on agent; it returns the cluster the subject names.
func (t *TLS) verify(raw [][]byte) (string, error) {
	if len(raw) == 0 {
		return "", &Refused{ReasonUntrusted, errors.New("no certificate")}
	}
	pool, err := t.CA()
	if err != nil {
		return "", &Refused{ReasonNoCA, err}
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		if certs[i], err = x509.ParseCertificate(b); err != nil {
			return "", &Refused{ReasonUntrusted, err}
		}
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return "", &Refused{ReasonUntrusted, err}
	}
	cluster, ok := ClusterOf(certs[0])
	if !ok {
		return "", &Refused{ReasonIdentity, fmt.Errorf("subject %q is no %s add-on agent", certs[0].Subject.CommonName, AddonName)}
	}
	return cluster, nil
}

// ServerConfig returns the peer endpoint's TLS configuration: it presents
// CertDir's certificate and requires a client certificate of an add-on
// agent (any member) chained to the fleet peer CA.
func (t *TLS) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		ClientAuth:     tls.RequireAnyClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.keyPair() },
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			_, err := t.verify(raw)
			return err
		},
	}
}

// ClientConfig returns the TLS configuration for asking cluster: it
// presents CertDir's certificate, and accepts only a server certificate
// chained to the fleet peer CA whose subject names cluster (identity
// pinning; the certificate names no IP address, so the usual host name
// check is replaced by this one).
func (t *TLS) ClientConfig(cluster string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain and the subject are checked by VerifyPeerCertificate.
		InsecureSkipVerify:   true, //nolint:gosec
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return t.keyPair() },
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			got, err := t.verify(raw)
			if err != nil {
				return err
			}
			if got != cluster {
				return &Refused{ReasonIdentity, fmt.Errorf("asked %s, the certificate names %s", cluster, got)}
			}
			return nil
		},
	}
}

// Clients returns the HTTP client to ask one cluster with.
type Clients func(cluster string) *http.Client

// Plain returns Clients that ask every cluster with hc (no TLS of its own:
// tests and --member-peer-insecure).
func Plain(hc *http.Client) Clients { return func(string) *http.Client { return hc } }

// Clients returns Clients over mutual TLS, pinned to the cluster asked,
// otherwise as NewClient.
func (t *TLS) Clients() Clients {
	return func(cluster string) *http.Client {
		c := NewClient()
		c.Transport.(*http.Transport).TLSClientConfig = t.ClientConfig(cluster)
		return c
	}
}

// CABundle holds the fleet peer CA pool as last loaded; it keeps the last
// good one when a later load fails (the hub may be the thing that is lost).
type CABundle struct {
	mu   sync.Mutex
	pool *x509.CertPool
}

// ErrNoCA is CABundle.Pool's error before any CA was loaded.
var ErrNoCA = errors.New("no fleet peer CA loaded yet")

// Set parses pemCerts (one or more PEM certificates) into the pool; an
// error (no certificate) keeps the previous pool.
func (b *CABundle) Set(pemCerts []byte) error {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemCerts) {
		return errors.New("fleet peer CA: no PEM certificate")
	}
	b.mu.Lock()
	b.pool = p
	b.mu.Unlock()
	return nil
}

// Pool returns the last pool Set, or ErrNoCA.
func (b *CABundle) Pool() (*x509.CertPool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool == nil {
		return nil, ErrNoCA
	}
	return b.pool, nil
}

// Loaded reports whether a CA was ever set.
func (b *CABundle) Loaded() bool {
	_, err := b.Pool()
	return err == nil
}

// RetryUntilLoaded is how often a CABundle's loader retries before its
// first success; afterwards it reloads every refresh interval.
const RetryUntilLoaded = 10 * time.Second
