package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/internal/ownership"
)

// Results of a run, the metric's result label.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultRefused = "refused"
)

// DefaultRetryDelay is the pause between two attempts of an action.
const DefaultRetryDelay = time.Second

// ErrRefused wraps the reason a Runner refused to run an action (a target
// that is not an instance of the placement's StatefulSet, a container its
// template does not declare, an HTTP action to a pod on the node's network,
// no executor).
var ErrRefused = errors.New("refused")

// EnvVar is one variable of an action's environment.
type EnvVar struct{ Name, Value string }

// Request is one action to run.
type Request struct {
	// Name is the action (FLEETSET_ACTION).
	Name fleetv1.ActionName
	// Action is the FleetSet's action.
	Action *fleetv1.LifecycleAction
	// Placement is the name of the SubsetPlacement the action belongs to:
	// Pod must be one of its instances.
	Placement string
	// Pod is the pod the action runs in (resolved from Action's target).
	Pod *v1.Pod
	// StatefulSet is Placement's delivered StatefulSet
	// (wiring.DeliveredStatefulSet): Pod must be one of its instances and
	// an exec action's container one of its template's (Admit); nil
	// refuses the action.
	StatefulSet *appsv1.StatefulSet
	// Env is the action's environment, in order.
	Env []EnvVar
}

// Result is what a run gave.
type Result struct {
	// Stdout (trimmed) and Stderr of the last attempt, each at most
	// v1alpha1.MaxActionOutput bytes; for an HTTP action Stdout is the body.
	Stdout, Stderr string
	// Attempts is the number of attempts made.
	Attempts int
}

// Runner runs actions.
type Runner struct {
	// Exec runs exec actions; nil refuses them.
	Exec Executor
	// HTTP sends HTTP actions; each request carries its own timeout.
	HTTP *http.Client
	// RetryDelay is the pause between two attempts.
	RetryDelay time.Duration
}

// NewRunner returns a Runner over exec (nil: exec actions are refused) with
// an HTTP client like the role probe's (no proxy, no keep-alive, no
// redirect).
func NewRunner(exec Executor) *Runner {
	return &Runner{Exec: exec, HTTP: newHTTPClient(), RetryDelay: DefaultRetryDelay}
}

// Run runs req: up to 1+retries attempts, each bounded by the action's
// timeout, until one succeeds. It returns the last attempt's output and nil
// on success; an error wrapping ErrRefused when req's pod or container may
// not be used (nothing is run); else the last attempt's error. The run is
// counted and timed by action and result.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	res, err := r.run(ctx, req)
	result := ResultSuccess
	switch {
	case errors.Is(err, ErrRefused):
		result = ResultRefused
	case err != nil:
		result = ResultFailure
	}
	runs.WithLabelValues(string(req.Name), result).Inc()
	durations.WithLabelValues(string(req.Name)).Observe(time.Since(start).Seconds())
	logger := klog.FromContext(ctx).WithValues("action", req.Name, "pod", klog.KObj(req.Pod), "attempts", res.Attempts)
	if err != nil {
		logger.V(2).Info("Lifecycle action failed", "err", err, "stderr", res.Stderr)
	} else {
		logger.V(2).Info("Lifecycle action succeeded", "stdout", res.Stdout)
	}
	return res, err
}

func (r *Runner) run(ctx context.Context, req Request) (Result, error) {
	container, err := Admit(req)
	if err != nil {
		return Result{}, err
	}
	if req.Action.Exec != nil && r.Exec == nil {
		return Result{}, fmt.Errorf("%w: exec action %s: this member component has no pods/exec client", ErrRefused, req.Name)
	}
	timeout := time.Duration(req.Action.TimeoutSecondsOrDefault(req.Name)) * time.Second
	attempts := 1 + int(max(req.Action.RetriesOrDefault(), 0))
	var res Result
	for i := range attempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return res, fmt.Errorf("%w (after %d attempts)", err, res.Attempts)
			case <-time.After(r.RetryDelay):
			}
		}
		res.Attempts = i + 1
		actx, cancel := context.WithTimeout(ctx, timeout)
		if req.Action.Exec != nil {
			res.Stdout, res.Stderr, err = r.execOnce(actx, req, container)
		} else {
			res.Stdout, err = r.httpOnce(actx, req)
			res.Stderr = ""
		}
		if err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		cancel()
		if err == nil {
			return res, nil
		}
	}
	return res, err
}

// Admit checks that req may run, trusting no label alone:
//   - req.Pod is labelled into req.Placement (fleetset.io/placement) and is
//     an instance of req.StatefulSet, the placement's delivered
//     StatefulSet: controlled by it (ownerReference controller=true with
//     its UID), named <statefulset>-<ordinal> matching its
//     apps.kubernetes.io/pod-index (ownership.NotInstance);
//   - it is Running and not being deleted;
//   - an HTTP action: the pod has an IP and does not use the node's
//     network (spec.hostNetwork: its IP is the node's, so the GET would
//     reach whatever listens on that port of the node, not the workload);
//   - an exec action: the container is one the StatefulSet's pod template
//     declares (by name; the template's first when the action names none)
//     and the pod runs it: never a container a mutating webhook injected
//     (a sidecar), an init or an ephemeral one.
//
// It returns the container to exec in ("" for HTTP), or an error wrapping
// ErrRefused that says which rule refused.
func Admit(req Request) (string, error) {
	p := req.Pod
	switch {
	case req.Action == nil || (req.Action.Exec == nil) == (req.Action.HTTPGet == nil):
		return "", fmt.Errorf("%w: action %s must have exactly one of exec and httpGet", ErrRefused, req.Name)
	case p == nil:
		return "", fmt.Errorf("%w: action %s has no target pod", ErrRefused, req.Name)
	case req.Placement == "" || p.Labels[fleetv1.LabelPlacement] != req.Placement:
		return "", fmt.Errorf("%w: pod %s is not an instance of SubsetPlacement %s", ErrRefused, klog.KObj(p), req.Placement)
	case req.StatefulSet == nil:
		return "", fmt.Errorf("%w: the StatefulSet of SubsetPlacement %s is not known: pod %s cannot be checked to be one of its instances", ErrRefused, req.Placement, klog.KObj(p))
	}
	if why := ownership.NotInstance(req.StatefulSet, p); why != "" {
		return "", fmt.Errorf("%w: pod %s is not an instance of StatefulSet %s: %s", ErrRefused, klog.KObj(p), req.StatefulSet.Name, why)
	}
	if p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning {
		return "", fmt.Errorf("%w: pod %s is not running (phase %s, deleting %t)", ErrRefused, klog.KObj(p), p.Status.Phase, p.DeletionTimestamp != nil)
	}
	if req.Action.HTTPGet != nil {
		if p.Spec.HostNetwork {
			return "", fmt.Errorf("%w: pod %s uses the node's network (spec.hostNetwork): an HTTP action to its IP would reach port %d of node %s, not only the workload; use an exec action",
				ErrRefused, klog.KObj(p), req.Action.HTTPGet.Port, p.Spec.NodeName)
		}
		if p.Status.PodIP == "" {
			return "", fmt.Errorf("%w: pod %s has no IP", ErrRefused, klog.KObj(p))
		}
		return "", nil
	}
	declared := req.StatefulSet.Spec.Template.Spec.Containers
	if len(declared) == 0 {
		return "", fmt.Errorf("%w: StatefulSet %s declares no container", ErrRefused, req.StatefulSet.Name)
	}
	name := req.Action.Exec.Container
	if name == "" {
		name = declared[0].Name
	} else if !slices.ContainsFunc(declared, func(c v1.Container) bool { return c.Name == name }) {
		return "", fmt.Errorf("%w: container %q is not one of StatefulSet %s's pod template (%s): an action never runs in a container the template does not declare",
			ErrRefused, name, req.StatefulSet.Name, containerNames(declared))
	}
	if !slices.ContainsFunc(p.Spec.Containers, func(c v1.Container) bool { return c.Name == name }) {
		return "", fmt.Errorf("%w: pod %s has no container %q", ErrRefused, klog.KObj(p), name)
	}
	return name, nil
}

// containerNames is the containers' names, comma-separated.
func containerNames(cs []v1.Container) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// Argv returns the argv an exec action runs: env, the variables as
// NAME=VALUE, then command.
func Argv(env []EnvVar, command []string) []string {
	out := make([]string, 0, 1+len(env)+len(command))
	out = append(out, "env")
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return append(out, command...)
}

func (r *Runner) execOnce(ctx context.Context, req Request, container string) (string, string, error) {
	var stdout, stderr limitedBuffer
	err := r.Exec.Exec(ctx, req.Pod.Namespace, req.Pod.Name, container, Argv(req.Env, req.Action.Exec.Command), &stdout, &stderr)
	out, errOut := strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String())
	if err != nil {
		if errOut != "" {
			return out, errOut, fmt.Errorf("exec %q in %s/%s: %w: %s", req.Action.Exec.Command, klog.KObj(req.Pod), container, err, firstLine(errOut))
		}
		return out, errOut, fmt.Errorf("exec %q in %s/%s: %w", req.Action.Exec.Command, klog.KObj(req.Pod), container, err)
	}
	return out, errOut, nil
}

// firstLine is s's first line, at most 256 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	return s
}

// limitedBuffer keeps the first MaxActionOutput bytes written to it and
// discards the rest (a writer that never blocks the stream).
type limitedBuffer struct{ b bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := fleetv1.MaxActionOutput - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.b.String() }

var _ io.Writer = &limitedBuffer{}
