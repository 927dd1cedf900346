package roles

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

var testRoles = []fleetv1.Role{
	{Name: "primary", AccessMode: fleetv1.AccessReadWrite, IsLeader: true},
	{Name: "replica", AccessMode: fleetv1.AccessReadOnly},
	{Name: "learner"},
}

func pod(name, role string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name[len(name)-1:]),
		Labels: map[string]string{fleetv1.LabelPlacement: "db"}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"}}
	if role != "" {
		p.Labels[fleetv1.LabelRole] = role
	}
	return p
}

func TestParseRole(t *testing.T) {
	for in, want := range map[string]string{"primary": "primary", " replica\n": "replica", "\r\n\tprimary \r\n": "primary", "": "", "  ": ""} {
		if got := ParseRole([]byte(in)); got != want {
			t.Errorf("ParseRole(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	pods := []*v1.Pod{pod("db-2", "replica"), pod("db-10", "primary"), pod("db-0", "primary"), pod("db-1", ""), pod("db-3", "witness"), pod("db-4", "learner")}
	s, l := Summarize(testRoles, pods)
	if want := "db-0=primary,db-10=primary,db-2=replica,db-4=learner"; s != want {
		t.Errorf("roles = %q, want %q", s, want)
	}
	if want := "db-0,db-10"; l != want {
		t.Errorf("leaders = %q, want %q", l, want)
	}
	if pods[0].Name != "db-2" {
		t.Errorf("Summarize sorted its argument")
	}
	if s, l := Summarize(testRoles, nil); s != "" || l != "" {
		t.Errorf("no pods: %q %q", s, l)
	}
}

func TestLabelsFor(t *testing.T) {
	for _, tt := range []struct {
		role, mode string
		ok         bool
	}{{"primary", "ReadWrite", true}, {"replica", "ReadOnly", true}, {"learner", "None", true}, {"witness", "", false}, {"", "", false}} {
		got, ok := LabelsFor(testRoles, tt.role)
		if ok != tt.ok || (ok && (got[fleetv1.LabelRole] != tt.role || got[fleetv1.LabelAccessMode] != tt.mode)) {
			t.Errorf("LabelsFor(%q) = %v, %v; want mode %q, %v", tt.role, got, ok, tt.mode, tt.ok)
		}
	}
}

func TestStatusPatch(t *testing.T) {
	b, _ := StatusPatch(fleetv1.SubsetPlacementStatus{Roles: "a=primary", Leaders: "a", UpdatedLeaders: "a", ObservedGeneration: 3})
	if want := `{"status":{"leaders":"a","observedGeneration":3,"roles":"a=primary","updatedLeaders":"a"}}`; string(b) != want {
		t.Errorf("patch = %s, want %s", b, want)
	}
	b, _ = StatusPatch(fleetv1.SubsetPlacementStatus{ObservedGeneration: 2})
	if want := `{"status":{"leaders":null,"observedGeneration":2,"roles":null,"updatedLeaders":null}}`; string(b) != want {
		t.Errorf("clearing patch = %s, want %s", b, want)
	}
}

func TestProbeURL(t *testing.T) {
	p := &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: 8080}}
	if got := ProbeURL("10.1.2.3", p); got != "http://10.1.2.3:8080/role" {
		t.Errorf("got %s", got)
	}
	p.HTTPGet.Path = "/v1/role"
	if got := ProbeURL("fd00::1", p); got != "http://[fd00::1]:8080/v1/role" {
		t.Errorf("got %s", got)
	}
}

// roleServer answers the role in answer, with status code, after delay.
type roleServer struct {
	answer atomic.Value
	code   atomic.Int32
	delay  atomic.Int64
}

func (s *roleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := time.Duration(s.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(int(s.code.Load()))
	_, _ = w.Write([]byte(s.answer.Load().(string)))
}

func newRoleServer(t *testing.T, role string) (*roleServer, string, int32) {
	rs := &roleServer{}
	rs.answer.Store(role)
	rs.code.Store(200)
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	n, _ := strconv.Atoi(port)
	return rs, host, int32(n)
}

func TestProbe(t *testing.T) {
	rs, host, port := newRoleServer(t, "primary\n")
	url := ProbeURL(host, &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: port}})
	hc := NewHTTPClient()
	ctx := context.Background()
	if got, err := Probe(ctx, hc, url, time.Second); err != nil || got != "primary" {
		t.Errorf("Probe = %q, %v", got, err)
	}
	rs.code.Store(503)
	if _, err := Probe(ctx, hc, url, time.Second); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("503: err = %v", err)
	}
	rs.code.Store(302)
	if _, err := Probe(ctx, hc, url, time.Second); err == nil {
		t.Errorf("302: no error")
	}
	rs.code.Store(200)
	rs.delay.Store(int64(2 * time.Second))
	start := time.Now()
	if _, err := Probe(ctx, hc, url, 200*time.Millisecond); err == nil {
		t.Errorf("slow: no error")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("slow probe took %s, timeout 200ms", d)
	}
}

func TestProbeOnce(t *testing.T) {
	rs, host, port := newRoleServer(t, "primary")
	p := pod("db-0", "")
	p.Status.PodIP = host
	cs := fake.NewClientset(p)
	rec := events.NewFakeRecorder(10)
	c := New(nil, nil, cs, nil, rec)
	probe := &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: port}, TimeoutSeconds: 1, FailureThreshold: 2}
	ctx := context.Background()
	patches := func() []string {
		var out []string
		for _, a := range cs.Actions() {
			if pa, ok := a.(k8stesting.PatchAction); ok {
				out = append(out, string(pa.GetPatch()))
			}
		}
		return out
	}
	c.ProbeOnce(ctx, p, probe, testRoles)
	if got := patches(); len(got) != 1 || got[0] != `{"metadata":{"labels":{"fleetset.io/access-mode":"ReadWrite","fleetset.io/role":"primary"},"uid":"uid-0"}}` {
		t.Fatalf("patches = %v", got)
	}
	// Labelled already: no patch.
	p.Labels[fleetv1.LabelRole], p.Labels[fleetv1.LabelAccessMode] = "primary", "ReadWrite"
	c.ProbeOnce(ctx, p, probe, testRoles)
	if got := patches(); len(got) != 1 {
		t.Fatalf("patches after a probe with the same role = %v", got)
	}
	// An unknown role: one event, no patch, however often it is answered.
	rs.answer.Store("witness")
	c.ProbeOnce(ctx, p, probe, testRoles)
	c.ProbeOnce(ctx, p, probe, testRoles)
	if got := patches(); len(got) != 1 {
		t.Fatalf("patches after an unknown role = %v", got)
	}
	expectEvents(t, rec, "Warning UnknownRole")
	// Failures: an event at the threshold, once.
	rs.code.Store(500)
	for range 4 {
		c.ProbeOnce(ctx, p, probe, testRoles)
	}
	expectEvents(t, rec, "Warning RoleProbeFailed")
	// Answering again resets both; a new run of failures warns again.
	rs.code.Store(200)
	rs.answer.Store("replica")
	c.ProbeOnce(ctx, p, probe, testRoles)
	if got := patches(); len(got) != 2 || !strings.Contains(got[1], `"fleetset.io/role":"replica"`) || !strings.Contains(got[1], `"fleetset.io/access-mode":"ReadOnly"`) {
		t.Fatalf("patches after a role change = %v", got)
	}
	rs.code.Store(500)
	c.ProbeOnce(ctx, p, probe, testRoles)
	c.ProbeOnce(ctx, p, probe, testRoles)
	rs.code.Store(200)
	rs.answer.Store("witness")
	c.ProbeOnce(ctx, p, probe, testRoles)
	expectEvents(t, rec, "Warning RoleProbeFailed", "Warning UnknownRole")
}

func expectEvents(t *testing.T, rec *events.FakeRecorder, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case e := <-rec.Events:
			if !strings.HasPrefix(e, w+" ") {
				t.Errorf("event %q, want %q", e, w)
			}
		default:
			t.Errorf("no event, want %q", w)
		}
	}
	select {
	case e := <-rec.Events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func TestUpdatedLeaders(t *testing.T) {
	pod := func(name, rev string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}}}
	}
	pods := []*v1.Pod{pod("a", "r1"), pod("b", "r2"), pod("c", "r2")}
	for _, tc := range []struct{ leaders, rev, want string }{
		{"a", "r2", ""}, {"b", "r2", "b"}, {"a,b,c", "r2", "b,c"}, {"b", "", ""}, {"", "r2", ""},
	} {
		if got := UpdatedLeaders(tc.leaders, pods, tc.rev); got != tc.want {
			t.Errorf("UpdatedLeaders(%q, %q) = %q, want %q", tc.leaders, tc.rev, got, tc.want)
		}
	}
}

// TestHostNetworkPodIsNotProbed (issue 48): a pod on the node's network
// (spec.hostNetwork: its IP is the node's) is never sent the HTTP role
// probe, which would reach whatever listens on that port of the node: no
// request, no label, one Warning RoleProbeFailed at once saying why.
func TestHostNetworkPodIsNotProbed(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("primary"))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	n, _ := strconv.Atoi(port)
	p := pod("db-0", "")
	p.Status.PodIP, p.Spec.HostNetwork, p.Spec.NodeName = host, true, "node-1"
	cs := fake.NewClientset(p)
	rec := events.NewFakeRecorder(10)
	c := New(nil, nil, cs, nil, rec)
	probe := &fleetv1.RoleProbe{HTTPGet: fleetv1.RoleProbeHTTPGet{Port: int32(n)}, TimeoutSeconds: 1, FailureThreshold: 3}
	c.ProbeOnce(context.Background(), p, probe, testRoles)
	c.ProbeOnce(context.Background(), p, probe, testRoles)
	if hits.Load() != 0 {
		t.Errorf("the probe reached the node's port %d times", hits.Load())
	}
	for _, a := range cs.Actions() {
		if _, ok := a.(k8stesting.PatchAction); ok {
			t.Errorf("the pod was labelled: %v", a)
		}
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning RoleProbeFailed ") || !strings.Contains(e, "spec.hostNetwork") || !strings.Contains(e, "node node-1") {
			t.Errorf("event %q, want a RoleProbeFailed naming spec.hostNetwork and the node", e)
		}
	default:
		t.Error("no event at the first refused probe")
	}
	expectEvents(t, rec) // once
}
