package netcut

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestCutHeal: through the proxy a request succeeds; cut, it fails (even on
// a kept-alive connection); healed, it succeeds again on the same address.
func TestCutHeal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	p, err := Start("127.0.0.1:0", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &http.Client{}
	get := func() error {
		resp, err := c.Get("http://" + p.Addr())
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := get(); err != nil {
		t.Fatalf("through the healthy proxy: %v", err)
	}
	p.Cut()
	if err := get(); err == nil {
		t.Fatal("through the cut proxy: no error")
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatalf("through the healed proxy: %v", err)
	}
}

// TestBlackholeHeal: blackholed, a request on a kept-alive connection and
// one on a new connection both hang (no error, no answer) while every
// connection stays open; healed, the held requests are answered.
func TestBlackholeHeal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	p, err := Start("127.0.0.1:0", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(c *http.Client) error {
		resp, err := c.Get("http://" + p.Addr())
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	kept := &http.Client{}
	if err := get(kept); err != nil {
		t.Fatalf("through the healthy proxy: %v", err)
	}
	p.Blackhole()
	if !p.IsBlackholed() {
		t.Fatal("IsBlackholed: false after Blackhole")
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	results := make(chan error, 2)
	go func() { results <- get(kept) }()
	go func() { results <- get(fresh) }()
	select {
	case err := <-results:
		t.Fatalf("through the blackholed proxy: answered (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("held request after Heal: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("held request not answered after Heal")
		}
	}
}
