package netcut

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
