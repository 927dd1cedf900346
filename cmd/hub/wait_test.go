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
		if r.URL.Path != "/version" || calls.Add(1) <= 3 {
			http.Error(w, "apiserver starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"34","gitVersion":"v1.34.4"}`))
	}))
	defer srv.Close()
	fast := [2]time.Duration{10 * time.Millisecond, 50 * time.Millisecond}
	if err := waitForAPIServer(t.Context(), &rest.Config{Host: srv.URL}, fast, testr.New(t)); err != nil {
		t.Fatalf("waitForAPIServer: %v, want nil once /version answers", err)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("/version asked %d times, want 4 (three refusals, then an answer)", n)
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
