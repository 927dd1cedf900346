//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/peers"
)

// TestPeersOverOCMCertificates checks the local fleet's peer endpoints as
// the add-on wires them (docs/failover.md#peers): each member's scheduler
// serves TLS with the certificate OCM's add-on manager signed for it
// (the Secret of the CustomSigner registration fleetset.io/peer, on that
// member), a member asking every peer with its own OCM certificate and the
// hub's fleet peer CA gets every answer, a peer asked under another
// cluster's name is refused (identity), and a client without a certificate
// is refused by the server.
func TestPeersOverOCMCertificates(t *testing.T) {
	dir := os.Getenv("FLEET_DIR")
	if theFleet.cfg.Provider != "local" || dir == "" {
		t.Skip("needs the local fleet (FLEET_DIR): the OCM-signed peer certificates are read from its files")
	}
	f := theFleet
	all := append(append([]member{}, f.members...), f.spare...)
	ctx := context.Background()
	// The hub delivers the peers to the clusters that host a FleetSet (the
	// resync work): one over every member.
	ns := f.newNamespace(t, "e2e-peers")
	fs := f.newFleetSet(ns, "db", int32(2*len(all)))
	for _, o := range f.spare {
		s := fleetv1.Subset{Name: o.name, Cluster: o.name}
		for _, z := range f.zones {
			s.Domains = append(s.Domains, fleetv1.DomainShare{Name: z})
		}
		fs.Spec.Topology.Subsets = append(fs.Spec.Topology.Subsets, s)
	}
	for i := range fs.Spec.Topology.Subsets {
		fs.Spec.Topology.Subsets[i].Replicas = nil
	}
	fs.Spec.Failover = &fleetv1.Failover{Policy: fleetv1.FailoverRelocate}
	f.createFleetSet(t, fs)
	ca := &corev1.ConfigMap{}
	if err := f.hub.Get(ctx, client.ObjectKey{Namespace: peers.CANamespace, Name: peers.CAConfigMapName}, ca); err != nil {
		t.Fatalf("the fleet peer CA on the hub: %v", err)
	}
	bundle := &peers.CABundle{}
	if err := bundle.Set([]byte(ca.Data[peers.CAConfigMapKey])); err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		asker := &peers.TLS{CertDir: filepath.Join(dir, m.name, "peer-cert"), CA: bundle.Pool}
		var urls map[string]string
		eventually(t, waitTimeout, m.name+": the peers ConfigMap lists every other member over https", func(ctx context.Context) (bool, string, error) {
			var err error
			urls, err = deliveredPeers(ctx, m)
			if err != nil {
				return false, err.Error(), nil
			}
			for _, o := range all {
				if u, ok := urls[o.name]; o.name != m.name && (!ok || len(u) < 8 || u[:8] != "https://") {
					return false, fmt.Sprintf("peers %v", urls), nil
				}
			}
			return true, "", nil
		})
		start := time.Now()
		ask := peers.URLs{}
		for c, u := range urls {
			ask[c] = []string{u}
		}
		for _, r := range peers.Ask(ctx, asker.Clients(), ask, 5*time.Second) {
			if r.Err != nil || !r.Answer.InContact || r.Answer.Cluster != r.Cluster {
				t.Errorf("%s asking %s at %s: %+v, want an answer in contact", m.name, r.Cluster, urls[r.Cluster], r)
			}
		}
		t.Logf("%s asked %d peers over mutual TLS in %s", m.name, len(urls), time.Since(start).Round(time.Millisecond))
		for peer, u := range urls {
			checkServedCert(t, m, peer, u, asker, all)
			// The same endpoint asked as another cluster: the pinning refuses.
			for _, o := range all {
				if o.name != peer && o.name != m.name {
					r := peers.Ask(ctx, asker.Clients(), peers.URLs{o.name: {u}}, 5*time.Second)
					if reason := refusedReason(r[0]); reason != peers.ReasonIdentity {
						t.Errorf("%s's endpoint asked as %s: %+v, want refused %s", peer, o.name, r[0], peers.ReasonIdentity)
					}
					break
				}
			}
			noCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the server is tested
			if resp, err := noCert.Get(u + peers.Path); err == nil {
				_ = resp.Body.Close()
				t.Errorf("%s answered a client without a certificate: %s", peer, resp.Status)
			}
		}
	}
}

// deliveredPeers reads the peers the hub delivered to m.
func deliveredPeers(ctx context.Context, m member) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := m.c.Get(ctx, client.ObjectKey{Namespace: fleetv1.ResyncLeaseNamespace, Name: fleetv1.PeersConfigMapName}, cm); err != nil {
		return nil, err
	}
	out := map[string]string{}
	return out, json.Unmarshal([]byte(cm.Data[fleetv1.PeersKey]), &out)
}

// checkServedCert dials peer's endpoint at u with asker's TLS and checks
// that the certificate it serves is the one OCM signed for it, in peer's
// own cluster (Secret fleetset-fleetset.io-peer-client-cert).
func checkServedCert(t *testing.T, m member, peer, u string, asker *peers.TLS, all []member) {
	t.Helper()
	host, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", host.Host, asker.ClientConfig(peer))
	if err != nil {
		t.Errorf("%s dialing %s: %v", m.name, peer, err)
		return
	}
	served := conn.ConnectionState().PeerCertificates[0]
	_ = conn.Close()
	var pm member
	for _, o := range all {
		if o.name == peer {
			pm = o
		}
	}
	secrets := &corev1.SecretList{}
	if err := pm.c.List(context.Background(), secrets); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Name != "fleetset-fleetset.io-peer-client-cert" {
			continue
		}
		b, _ := pem.Decode(s.Data["tls.crt"])
		switch {
		case b != nil && bytes.Equal(b.Bytes, served.Raw):
			t.Logf("%s serves the OCM-signed %q, issued by %q", peer, served.Subject.CommonName, served.Issuer.CommonName)
		case b != nil && certSubject(b.Bytes) == served.Subject.String():
			// The handshake verified it chains to the fleet peer CA and
			// names the cluster; OCM has signed a newer one since the
			// member read its certificate (the local fleet copies it once).
			t.Logf("%s serves an earlier certificate OCM signed for %q (issued by %q); the Secret holds a newer one", peer, served.Subject.CommonName, served.Issuer.CommonName)
		default:
			t.Errorf("%s serves %q, not a certificate OCM signed for it (%s/%s)", peer, served.Subject.CommonName, s.Namespace, s.Name)
		}
		return
	}
	t.Errorf("%s has no Secret fleetset-fleetset.io-peer-client-cert", peer)
}

// refusedReason returns the Refused reason of r ("" none).
func refusedReason(r peers.Result) string {
	var rf *peers.Refused
	if errors.As(r.Err, &rf) {
		return rf.Reason
	}
	return ""
}

// certSubject returns the subject of the DER certificate der ("" when it
// does not parse).
func certSubject(der []byte) string {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return ""
	}
	return c.Subject.String()
}
