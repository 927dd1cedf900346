package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// recordingExecutor answers each Exec with the next of its results and
// records the calls.
type recordingExecutor struct {
	mu      sync.Mutex
	calls   []execCall
	results []execResult
}

type execCall struct {
	Namespace, Pod, Container string
	Argv                      []string
}

type execResult struct {
	stdout, stderr string
	err            error
	block          bool // wait for ctx
}

func (r *recordingExecutor) Exec(ctx context.Context, ns, pod, container string, argv []string, stdout, stderr io.Writer) error {
	r.mu.Lock()
	r.calls = append(r.calls, execCall{ns, pod, container, argv})
	var res execResult
	if len(r.results) > 0 {
		res, r.results = r.results[0], r.results[1:]
	}
	r.mu.Unlock()
	if res.block {
		<-ctx.Done()
		return ctx.Err()
	}
	io.WriteString(stdout, res.stdout)
	io.WriteString(stderr, res.stderr)
	return res.err
}

// instance returns a Running pod labelled into placement and, when its
// name is <placement>-<ordinal>, controlled by statefulSet(placement) (as
// the StatefulSet controller makes them), with containers.
func instance(name, placement string, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pod-" + name), Labels: map[string]string{fleetv1.LabelPlacement: placement}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1"}}
	if placement != "" && strings.HasPrefix(name, placement+"-") {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: placement,
			UID: types.UID("sts-" + placement), Controller: ptr.To(true)}}
		p.Labels[fleetv1.LabelPodIndex] = strings.TrimPrefix(name, placement+"-")
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

// statefulSet returns the delivered StatefulSet name, whose template
// declares containers (default "main", "sidecar").
func statefulSet(name string, containers ...string) *appsv1.StatefulSet {
	if len(containers) == 0 {
		containers = []string{"main", "sidecar"}
	}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("sts-" + name)}}
	for _, c := range containers {
		s.Spec.Template.Spec.Containers = append(s.Spec.Template.Spec.Containers, v1.Container{Name: c})
	}
	return s
}

func execAction(container string, cmd ...string) *fleetv1.LifecycleAction {
	return &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Container: container, Command: cmd}, Retries: ptr.To[int32](0)}
}

func TestAdmit(t *testing.T) {
	deleting := instance("db-east-0", "db-east", "main")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pending := instance("db-east-0", "db-east", "main")
	pending.Status.Phase = v1.PodPending
	withInit := instance("db-east-0", "db-east", "main")
	withInit.Spec.InitContainers = []v1.Container{{Name: "init"}}
	withInit.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	forged := instance("db-east-7", "x", "main") // every label, no owner
	forged.Labels[fleetv1.LabelPlacement], forged.Labels[fleetv1.LabelPodIndex] = "db-east", "7"
	wrongUID := instance("db-east-0", "db-east", "main")
	wrongUID.OwnerReferences[0].UID = "fake"
	badName := instance("db-east-0", "db-east", "main")
	badName.Name = "db-east-00"
	badIndex := instance("db-east-0", "db-east", "main")
	badIndex.Labels[fleetv1.LabelPodIndex] = "1"
	hostNet := instance("db-east-0", "db-east", "main")
	hostNet.Spec.HostNetwork = true
	tests := []struct {
		name          string
		req           Request
		wantContainer string
		wantRefused   string
	}{
		{name: "the first container by default",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("db-east-0", "db-east", "main", "sidecar")}, wantContainer: "main"},
		{name: "a named container of the template",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("sidecar", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("db-east-0", "db-east", "main", "sidecar")}, wantContainer: "sidecar"},
		{name: "a pod of another placement is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("other-0", "other", "main")}, wantRefused: "not an instance of SubsetPlacement db-east"},
		{name: "a pod of no placement is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("x", "", "main")}, wantRefused: "not an instance"},
		{name: "an init container is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("init", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: withInit}, wantRefused: `container "init" is not one of StatefulSet db-east's pod template`},
		{name: "an ephemeral container is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("debug", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: withInit}, wantRefused: `container "debug" is not one of StatefulSet db-east's pod template`},
		{name: "a template container the pod does not run is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("sidecar", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"),
				Pod: instance("db-east-0", "db-east", "main")}, wantRefused: `has no container "sidecar"`},
		{name: "a pod being deleted is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: deleting}, wantRefused: "not running"},
		{name: "a pending pod is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: pending}, wantRefused: "not running"},
		// Issue 48: a pod labelled into the placement is a candidate,
		// never an instance by its labels alone.
		{name: "a forged pod with every label and no owner is refused",
			req:         Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: forged},
			wantRefused: "no controller ownerReference"},
		{name: "a forged pod naming the StatefulSet with another UID is refused",
			req:         Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: wrongUID},
			wantRefused: "uid fake"},
		{name: "an owned pod whose name is not <statefulset>-<ordinal> is refused",
			req:         Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: badName},
			wantRefused: "is not named db-east-<ordinal>"},
		{name: "an owned pod whose pod-index is not its name's is refused",
			req:         Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: badIndex},
			wantRefused: "not its name's ordinal 0"},
		{name: "no delivered StatefulSet: refused",
			req:         Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", Pod: instance("db-east-0", "db-east", "main")},
			wantRefused: "StatefulSet of SubsetPlacement db-east is not known"},
		// A container a webhook injected is in the pod, not the template.
		{name: "the template's first container by default, not an injected first one",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east", "main"),
				Pod: instance("db-east-0", "db-east", "injected", "main")}, wantContainer: "main"},
		{name: "an injected sidecar is refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: execAction("injected", "true"), Placement: "db-east", StatefulSet: statefulSet("db-east", "main"),
				Pod: instance("db-east-0", "db-east", "injected", "main")}, wantRefused: `container "injected" is not one of StatefulSet db-east's pod template (main)`},
		{name: "an HTTP action to a pod on the node's network is refused",
			req: Request{Name: fleetv1.ActionRoleProbe, Action: &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: 8080}}, Placement: "db-east",
				StatefulSet: statefulSet("db-east"), Pod: hostNet}, wantRefused: "spec.hostNetwork"},
		{name: "an HTTP action to a pod on its own network",
			req: Request{Name: fleetv1.ActionRoleProbe, Action: &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: 8080}}, Placement: "db-east",
				StatefulSet: statefulSet("db-east"), Pod: instance("db-east-0", "db-east", "main")}, wantContainer: ""},
		{name: "both exec and httpGet are refused",
			req: Request{Name: fleetv1.ActionMemberJoin, Action: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"true"}}, HTTPGet: &fleetv1.HTTPAction{Port: 80}},
				Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("db-east-0", "db-east", "main")}, wantRefused: "exactly one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Admit(tc.req)
			if tc.wantRefused != "" {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.wantRefused) {
					t.Fatalf("Admit: want a refusal saying %q, got %v", tc.wantRefused, err)
				}
				return
			}
			if err != nil || c != tc.wantContainer {
				t.Fatalf("Admit: want container %q, got %q, %v", tc.wantContainer, c, err)
			}
		})
	}
}

func TestRunExec(t *testing.T) {
	env := []EnvVar{{fleetv1.EnvAction, "memberJoin"}, {fleetv1.EnvJoinReason, "FirstStart"}}
	pod := instance("db-east-0", "db-east", "main")
	tests := []struct {
		name         string
		action       *fleetv1.LifecycleAction
		results      []execResult
		wantStdout   string
		wantAttempts int
		wantErr      string
	}{
		{name: "success at once: stdout trimmed",
			action: execAction("", "join.sh", "--x"), results: []execResult{{stdout: " leader\n"}},
			wantStdout: "leader", wantAttempts: 1},
		{name: "fails twice, retries 3: success at the third attempt",
			action:  &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"join.sh", "--x"}}},
			results: []execResult{{err: errors.New("exit 1"), stderr: "no quorum"}, {err: errors.New("exit 1")}, {stdout: "ok"}}, wantStdout: "ok", wantAttempts: 3},
		{name: "fails every attempt: the last error with stderr's first line",
			action:       &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"join.sh", "--x"}}, Retries: ptr.To[int32](1)},
			results:      []execResult{{err: errors.New("exit 1")}, {err: errors.New("exit 2"), stderr: "member not found\nmore"}},
			wantAttempts: 2, wantErr: "exit 2: member not found"},
		{name: "timeout of an attempt",
			action:  &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: []string{"join.sh", "--x"}}, TimeoutSeconds: 1, Retries: ptr.To[int32](0)},
			results: []execResult{{block: true}}, wantAttempts: 1, wantErr: "timed out after 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := &recordingExecutor{results: tc.results}
			r := NewRunner(ex)
			r.RetryDelay = time.Millisecond
			res, err := r.Run(context.Background(), Request{Name: fleetv1.ActionMemberJoin, Action: tc.action, Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: pod, Env: env})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error saying %q, got %v", tc.wantErr, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if res.Stdout != tc.wantStdout || res.Attempts != tc.wantAttempts {
				t.Errorf("want stdout %q after %d attempts, got %q after %d", tc.wantStdout, tc.wantAttempts, res.Stdout, res.Attempts)
			}
			want := execCall{"ns", "db-east-0", "main", []string{"env", "FLEETSET_ACTION=memberJoin", "FLEETSET_JOIN_REASON=FirstStart", "join.sh", "--x"}}
			if diff := cmp.Diff(want, ex.calls[0]); diff != "" {
				t.Errorf("exec call (-want,+got):\n%s", diff)
			}
			if len(ex.calls) != tc.wantAttempts {
				t.Errorf("want %d exec calls, got %d", tc.wantAttempts, len(ex.calls))
			}
		})
	}
}

func TestRunRefusedRunsNothing(t *testing.T) {
	refused := counter(t, "memberLeave", ResultRefused)
	ex := &recordingExecutor{}
	_, err := NewRunner(ex).Run(context.Background(), Request{Name: fleetv1.ActionMemberLeave, Action: execAction("", "leave.sh"),
		Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("tenant-b-0", "tenant-b", "main")})
	if !errors.Is(err, ErrRefused) || len(ex.calls) != 0 {
		t.Fatalf("want a refusal and no exec, got %v and %d calls", err, len(ex.calls))
	}
	if _, err := NewRunner(nil).Run(context.Background(), Request{Name: fleetv1.ActionMemberLeave, Action: execAction("", "leave.sh"),
		Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: instance("db-east-0", "db-east", "main")}); !errors.Is(err, ErrRefused) {
		t.Fatalf("no executor: want a refusal, got %v", err)
	}
	if got := counter(t, "memberLeave", ResultRefused) - refused; got != 2 {
		t.Errorf("fleetset_member_lifecycle_actions_total{action=memberLeave,result=refused} grew by %v, want 2", got)
	}
}

func TestLimitedBuffer(t *testing.T) {
	var b limitedBuffer
	big := strings.Repeat("x", fleetv1.MaxActionOutput-10)
	for _, s := range []string{big, strings.Repeat("y", 100), "z"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write: want %d, nil; got %d, %v", len(s), n, err)
		}
	}
	if want := big + strings.Repeat("y", 10); b.String() != want {
		t.Errorf("kept %d bytes, want the first %d", len(b.String()), len(want))
	}
}

func TestRunHTTP(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery)
		if r.URL.Query().Get(fleetv1.EnvAction) == string(fleetv1.ActionMemberLeave) {
			http.Error(w, "no quorum", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, " leader ")
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var p int32
	fmt.Sscan(port, &p)
	pod := instance("db-east-0", "db-east", "main")
	pod.Status.PodIP = host
	r := NewRunner(nil)
	r.RetryDelay = time.Millisecond
	action := &fleetv1.LifecycleAction{HTTPGet: &fleetv1.HTTPAction{Port: p, Path: "/role?fmt=text"}, Retries: ptr.To[int32](1)}
	res, err := r.Run(context.Background(), Request{Name: fleetv1.ActionRoleProbe, Action: action, Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: pod,
		Env: []EnvVar{{fleetv1.EnvAction, "roleProbe"}, {fleetv1.EnvInstanceName, "db-east-0"}}})
	if err != nil || res.Stdout != "leader" {
		t.Fatalf("want leader, got %q, %v", res.Stdout, err)
	}
	_, err = r.Run(context.Background(), Request{Name: fleetv1.ActionMemberLeave, Action: action, Placement: "db-east", StatefulSet: statefulSet("db-east"), Pod: pod,
		Env: []EnvVar{{fleetv1.EnvAction, "memberLeave"}}})
	if err == nil || !strings.Contains(err.Error(), "HTTP status 503") {
		t.Fatalf("want HTTP status 503, got %v", err)
	}
	want := []string{"/role?FLEETSET_ACTION=roleProbe&FLEETSET_INSTANCE_NAME=db-east-0&fmt=text",
		"/role?FLEETSET_ACTION=memberLeave&fmt=text", "/role?FLEETSET_ACTION=memberLeave&fmt=text"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want,+got):\n%s", diff)
	}
}

func TestEnvVars(t *testing.T) {
	pa := &fleetv1.PlacementActions{FleetSet: "db", ServiceName: "db", Members: []string{"db-east-0", "db-east-1", "db-west-1000"},
		Leader: "db-east-1", Leave: []fleetv1.PlacementLeave{{Ordinal: 1, Reason: fleetv1.LeaveScaledDown}}}
	pod := instance("db-east-1", "db-east", "main")
	pod.Labels["apps.kubernetes.io/pod-index"] = "1"
	e := ForPod(fleetv1.ActionMemberLeave, pa, pod, "")
	e.LeaveReason = fleetv1.LeaveScaledDown
	want := []EnvVar{
		{"FLEETSET_ACTION", "memberLeave"},
		{"FLEETSET_INSTANCE_NAME", "db-east-1"},
		{"FLEETSET_INSTANCE_ORDINAL", "1"},
		{"FLEETSET_INSTANCE_FQDN", "db-east-1.db.ns.svc.cluster.local"},
		{"FLEETSET_MEMBERS", "db-east-0,db-west-1000"},
		{"FLEETSET_MEMBER_FQDNS", "db-east-0.db.ns.svc.cluster.local,db-west-1000.db.ns.svc.cluster.local"},
		{"FLEETSET_LEADER_NAME", "db-east-1"},
		{"FLEETSET_LEADER_FQDN", "db-east-1.db.ns.svc.cluster.local"},
		{"FLEETSET_LEAVE_REASON", "ScaledDown"},
	}
	if diff := cmp.Diff(want, e.Vars()); diff != "" {
		t.Errorf("memberLeave env (-want,+got):\n%s", diff)
	}
	sw := ForPod(fleetv1.ActionSwitchover, pa, pod, "example.org")
	sw.Candidate = "db-east-0"
	got := sw.Vars()
	if diff := cmp.Diff([]EnvVar{{"FLEETSET_CANDIDATE_NAME", "db-east-0"}, {"FLEETSET_CANDIDATE_FQDN", "db-east-0.db.ns.svc.example.org"}}, got[len(got)-2:]); diff != "" {
		t.Errorf("switchover env (-want,+got):\n%s", diff)
	}
}

// counter returns fleetset_member_lifecycle_actions_total{action,result}.
func counter(t *testing.T, action, result string) float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fleetset_member_lifecycle_actions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["action"] == action && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
