package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
	"github.com/fleetset/fleetset/member/internal/wiring"
)

// nextProbe probes one pod and schedules its next probe; false once the
// queue is shut down.
func (c *Controller) nextProbe(ctx context.Context) bool {
	key, quit := c.probes.Get()
	if quit {
		return false
	}
	defer c.probes.Done(key)
	pod, pr, roles := c.probeTarget(ctx, key)
	if pod == nil {
		c.mu.Lock()
		delete(c.state, key)
		c.mu.Unlock()
		return true // its next event brings it back
	}
	c.probeWith(ctx, pod, pr, roles)
	c.probes.AddAfter(key, pr.period)
	return true
}

// prober is one way of probing a pod's role: the HTTP spec.roles.probe or
// the exec (or HTTP) lifecycle action roleProbe.
type prober struct {
	// what describes the probe in events and logs ("GET <url>",
	// "roleProbe action ...").
	what string
	// period between two probes; threshold of failures in a row before a
	// Warning event.
	period    time.Duration
	threshold int32
	// probe asks the pod for its role.
	probe func(ctx context.Context) (string, error)
	// refused, when set, is why the pod may not be probed this way (an
	// HTTP probe of a pod on the node's network): probe returns it, and
	// the Warning event is recorded at the first failure.
	refused error
}

// probeTarget returns the pod of key with its placement's prober and roles,
// or a nil pod when it is no running instance of a placement with a probe
// (spec.roles.probe, or the lifecycle action roleProbe when this controller
// has a Runner).
func (c *Controller) probeTarget(ctx context.Context, key types.NamespacedName) (*v1.Pod, *prober, []fleetv1.Role) {
	pod, err := c.Pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || !Running(pod) || pod.Labels[fleetv1.LabelPlacement] == "" {
		return nil, nil, nil
	}
	sp := &fleetv1.SubsetPlacement{}
	if err := c.Placements.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: pod.Labels[fleetv1.LabelPlacement]}, sp); err != nil {
		return nil, nil, nil
	}
	if sp.Spec.Roles == nil {
		return nil, nil, nil
	}
	sts, _ := wiring.DeliveredStatefulSet(c.StatefulSets, sp)
	if why := c.instances.Check(sts, pod); why != "" {
		// Labelled into the placement, but not one of its StatefulSet's
		// pods: never probed (nor labelled with a role).
		klog.FromContext(ctx).V(2).Info("Not probing a pod that is not an instance of its placement", "pod", klog.KObj(pod), "reason", why)
		return nil, nil, nil
	}
	if pr := c.proberOf(sp, sts, pod); pr != nil {
		return pod, pr, sp.Spec.Roles.Roles
	}
	return nil, nil, nil
}

// proberOf returns how to probe pod, an instance of sp: spec.roles.probe
// (HTTP), else the roleProbe lifecycle action run by c.Actions; nil when sp
// has neither (or no Runner for the action).
func (c *Controller) proberOf(sp *fleetv1.SubsetPlacement, sts *appsv1.StatefulSet, pod *v1.Pod) *prober {
	if probe := sp.Spec.Roles.Probe; probe != nil {
		url := ProbeURL(pod.Status.PodIP, probe)
		timeout := time.Duration(probe.TimeoutSecondsOrDefault()) * time.Second
		pr := &prober{what: "GET " + url, period: time.Duration(probe.PeriodSecondsOrDefault()) * time.Second,
			threshold: probe.FailureThresholdOrDefault(),
			probe:     func(ctx context.Context) (string, error) { return Probe(ctx, c.HTTP, url, timeout) }}
		if pod.Spec.HostNetwork {
			// Its IP is the node's: the GET would reach whatever listens
			// on that port of the node.
			pr.refused = fmt.Errorf("%w: pod %s uses the node's network (spec.hostNetwork): an HTTP role probe to its IP would reach port %d of node %s, not only the workload; "+
				"use the exec lifecycle action roleProbe, or label the pods with %s yourself", actions.ErrRefused, klog.KObj(pod), probe.HTTPGet.Port, pod.Spec.NodeName, fleetv1.LabelRole)
			pr.probe = func(context.Context) (string, error) { return "", pr.refused }
		}
		return pr
	}
	pa := sp.Spec.Actions
	if pa == nil || pa.Actions.RoleProbe == nil || c.Actions == nil {
		return nil
	}
	a := pa.Actions.RoleProbe
	// A probe that fails is tried again at its next period: the action's
	// retries count toward the failure threshold instead.
	once := *a
	once.Retries = new(int32)
	req := actions.Request{Name: fleetv1.ActionRoleProbe, Action: &once, Placement: sp.Name, StatefulSet: sts, Pod: pod,
		Env: actions.ForPod(fleetv1.ActionRoleProbe, pa, pod, c.ClusterDomain).Vars()}
	what := "roleProbe action"
	if a.Exec != nil {
		what = fmt.Sprintf("roleProbe action %q", a.Exec.Command)
	} else if a.HTTPGet != nil {
		what = "roleProbe action GET " + actions.HTTPURL(pod.Status.PodIP, a.HTTPGet, nil)
	}
	threshold := a.RetriesOrDefault() + 1
	return &prober{what: what, period: time.Duration(a.PeriodSecondsOrDefault()) * time.Second, threshold: threshold,
		probe: func(ctx context.Context) (string, error) {
			res, err := c.Actions.Run(ctx, req)
			return res.Stdout, err
		}}
}

// ProbeOnce probes pod once with the HTTP probe and acts on the answer:
// labels, events, metrics (see the package documentation).
func (c *Controller) ProbeOnce(ctx context.Context, pod *v1.Pod, probe *fleetv1.RoleProbe, roles []fleetv1.Role) {
	sp := &fleetv1.SubsetPlacement{Spec: fleetv1.SubsetPlacementSpec{Roles: &fleetv1.PlacementRoles{Roles: roles, Probe: probe}}}
	c.probeWith(ctx, pod, c.proberOf(sp, nil, pod), roles)
}

// probeWith probes pod once with pr and acts on the answer.
func (c *Controller) probeWith(ctx context.Context, pod *v1.Pod, pr *prober, roles []fleetv1.Role) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	url := pr.what
	role, err := pr.probe(ctx)

	c.mu.Lock()
	st := c.state[key]
	if st == nil || st.uid != pod.UID {
		st = &podState{uid: pod.UID}
		c.state[key] = st
	}
	c.mu.Unlock()

	if err != nil {
		probes.WithLabelValues(resultFailed).Inc()
		st.failures++
		threshold := pr.threshold
		if pr.refused != nil || errors.Is(err, actions.ErrRefused) {
			threshold = 1 // no retry makes it answer
		}
		logger.V(4).Info("Role probe failed", "probe", url, "failures", st.failures, "err", err)
		if st.failures >= threshold && !st.failedWarned {
			st.failedWarned = true
			logger.Info("Role probe failing; the pod keeps its role label", "probe", url, "failures", st.failures, "role", pod.Labels[fleetv1.LabelRole], "err", err)
			c.Recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonRoleProbeFailed, "ProbeRole",
				"Role probe %s failed %d times in a row (%v); the pod keeps its role label %s=%q until it answers",
				url, st.failures, err, fleetv1.LabelRole, pod.Labels[fleetv1.LabelRole])
		}
		return
	}
	if st.failedWarned {
		logger.Info("Role probe answers again", "probe", url, "role", role)
	}
	st.failures, st.failedWarned = 0, false
	want, ok := LabelsFor(roles, role)
	if !ok {
		probes.WithLabelValues(resultUnknownRole).Inc()
		if st.unknown != role {
			st.unknown = role
			names := make([]string, len(roles))
			for i, r := range roles {
				names[i] = r.Name
			}
			logger.Info("Role probe answered an unknown role; label left as it is", "probe", url, "answer", role, "roles", names)
			c.Recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonUnknownRole, "ProbeRole",
				"Role probe %s answered %q, which is none of the roles (%s): label %s left as it is (%q)",
				url, role, strings.Join(names, ", "), fleetv1.LabelRole, pod.Labels[fleetv1.LabelRole])
		}
		return
	}
	probes.WithLabelValues(resultOK).Inc()
	st.unknown = ""
	if pod.Labels[fleetv1.LabelRole] == want[fleetv1.LabelRole] && pod.Labels[fleetv1.LabelAccessMode] == want[fleetv1.LabelAccessMode] {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, "labels": want}})
	_, err = c.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// gone or replaced: its events bring the new one here
	case err != nil:
		logger.Error(err, "Labelling a pod with its role failed; retried at its next probe", "role", role)
	default:
		logger.V(2).Info("Labelled a pod with its role", "role", role, "from", pod.Labels[fleetv1.LabelRole], "accessMode", want[fleetv1.LabelAccessMode])
	}
}

// ProbeURL is the probe's URL for a pod IP.
func ProbeURL(ip string, probe *fleetv1.RoleProbe) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(int(probe.HTTPGet.Port))) + probe.HTTPGet.PathOrDefault()
}

// Probe sends GET url with timeout and returns the trimmed body of a 2xx
// answer; any other answer, an error or a timeout is an error.
func Probe(ctx context.Context, hc *http.Client, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", "fleetset-member-role-probe")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return ParseRole(body), nil
}

// ParseRole returns the role a probe's body names: the body with surrounding
// white space trimmed.
func ParseRole(body []byte) string {
	return strings.TrimSpace(string(body))
}
