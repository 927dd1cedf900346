package actions

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// newHTTPClient returns the HTTP actions' client: no proxy (pod IPs are
// reached directly), no keep-alive, no redirect followed (a 3xx fails).
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext, MaxIdleConnsPerHost: -1},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// HTTPURL returns the URL of an HTTP action to a pod IP: its path with env
// as query parameters (after any the path has).
func HTTPURL(ip string, h *fleetv1.HTTPAction, env []EnvVar) string {
	path, query, _ := strings.Cut(h.PathOrDefault(), "?")
	q, _ := url.ParseQuery(query)
	if q == nil {
		q = url.Values{}
	}
	for _, e := range env {
		q.Set(e.Name, e.Value)
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(ip, strconv.Itoa(int(h.Port))), Path: path, RawQuery: q.Encode()}
	return u.String()
}

// httpOnce sends the HTTP action of req once and returns the trimmed body
// of a 2xx answer (at most MaxActionOutput bytes); any other status is an
// error.
func (r *Runner) httpOnce(ctx context.Context, req Request) (string, error) {
	u := HTTPURL(req.Pod.Status.PodIP, req.Action.HTTPGet, req.Env)
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	hr.Header.Set("User-Agent", "fleetset-member-lifecycle-action")
	resp, err := r.HTTP.Do(hr)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, fleetv1.MaxActionOutput))
	if err != nil {
		return "", fmt.Errorf("reading the answer of GET %s: %w", hr.URL.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return strings.TrimSpace(string(body)), fmt.Errorf("GET %s: HTTP status %d", hr.URL.Path, resp.StatusCode)
	}
	return strings.TrimSpace(string(body)), nil
}
