package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/rest"
)

// TestWaitForAPIServer: fleetset-hub started while the hub's apiserver
// does not answer waits for it, instead of exiting, and gives up only when
// its context ends.
func TestWaitForAPIServer(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || calls.Add(1) <= 3 {
			// What a starting kube-apiserver's /readyz says while its
			// custom resources are not served yet.
			http.Error(w, "[-]poststarthook/crd-informer-synced failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	fast := [2]time.Duration{10 * time.Millisecond, 50 * time.Millisecond}
	if err := waitForAPIServer(t.Context(), &rest.Config{Host: srv.URL}, fast, testr.New(t)); err != nil {
		t.Fatalf("waitForAPIServer: %v, want nil once /readyz answers ok", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("/readyz asked %d times, want 4 (three refusals, then ok)", n)
	}

	// Nothing answers: it waits until the context ends.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := waitForAPIServer(ctx, &rest.Config{Host: down.URL}, fast, testr.New(t)); err == nil {
		t.Fatal("waitForAPIServer returned nil although the apiserver never answered")
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("gave up after %v, want to wait until the context ends (300ms)", waited)
	}
}
