//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetset/fleetset/e2e/framework"
)

// echoPort is the port of the echo servers.
const echoPort = 7777

// echoResult is one line of the echo client (e2e/kind/echo).
type echoResult struct {
	Target string `json:"target"`
	Remote string `json:"remote"`
	Local  string `json:"local"`
	Reply  *struct {
		Message, Client, Server string
		// Env is the server's FLEETSET_* environment (echoFleetSet's
		// locality env vars).
		Env map[string]string
	} `json:"reply"`
	Error string `json:"error"`
}

// echoPod is a pod of the echo image: a server (-listen) or, with
// restartPolicy Never, a client run once (-connect).
func echoPod(ns, name string, never bool, args ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "echo", Image: framework.EchoImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
	if never {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	} else {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
			ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(echoPort)}}}
	}
	return p
}

// TestPodsReachAcrossMembers (kind only): the members' pod networks are
// routed to each other (e2e/kind/peers.sh). An echo server pod in every
// member (the spare ones too) and a client pod in every member that
// connects by pod IP to every other member's server: each server echoes the
// message and saw the client's own pod IP (no address translation between
// members).
func TestPodsReachAcrossMembers(t *testing.T) {
	f := theFleet
	if _, ok := f.provider.(framework.ImageLoader); !ok {
		t.Skipf("provider %s runs no pods that talk (kind only)", f.provider.Name())
	}
	members := append(slices.Clone(f.members), f.spare...)
	paths := append(slices.Clone(f.cfg.Members), f.cfg.Spare...)
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.name
	}
	f.loadImage(t, names, framework.EchoArchive(), framework.EchoImage)

	ns := "e2e-reach-" + randSuffix()
	kubes := map[string]kubernetes.Interface{}
	for i, m := range members {
		cfg, err := framework.RESTConfig(paths[i].Path, framework.ClientOptions{QPS: 20, Burst: 40})
		if err != nil {
			t.Fatal(err)
		}
		if kubes[m.name], err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if err := m.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		t.Cleanup(func() {
			_ = m.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		if err := m.c.Create(t.Context(), echoPod(ns, "server-"+m.name, false, fmt.Sprintf("-listen=:%d", echoPort))); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	// Every server Ready, with its pod IP.
	serverIP := map[string]string{}
	for _, m := range members {
		eventually(t, waitTimeout, m.name+"'s echo server Ready", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "server-" + m.name}, p); err != nil {
				return false, "", err
			}
			serverIP[m.name] = p.Status.PodIP
			return echoReady(p) && p.Status.PodIP != "", fmt.Sprintf("%s %s on %s", p.Status.Phase, p.Status.PodIP, p.Spec.NodeName), nil
		})
		t.Logf("%s: echo server %s", m.name, serverIP[m.name])
	}
	// A client in every member, to every other member's server.
	start := time.Now()
	for _, m := range members {
		var targets []string
		for _, o := range members {
			if o.name != m.name {
				targets = append(targets, net.JoinHostPort(serverIP[o.name], fmt.Sprint(echoPort)))
			}
		}
		args := []string{"-connect=" + strings.Join(targets, ","), "-message=from-" + m.name, "-retry=30s"}
		if err := m.c.Create(t.Context(), echoPod(ns, "client-"+m.name, true, args...)); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	checked := 0
	for _, m := range members {
		var clientIP string
		eventually(t, waitTimeout, m.name+"'s echo client done", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := m.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "client-" + m.name}, p); err != nil {
				return false, "", err
			}
			clientIP = p.Status.PodIP
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase), nil
		})
		raw, err := kubes[m.name].CoreV1().Pods(ns).GetLogs("client-"+m.name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			t.Fatalf("%s: client log: %v", m.name, err)
		}
		got := map[string]echoResult{}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			var r echoResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("%s: client line %q: %v", m.name, sc.Text(), err)
				continue
			}
			got[r.Target] = r
		}
		for _, o := range members {
			if o.name == m.name {
				continue
			}
			target := net.JoinHostPort(serverIP[o.name], fmt.Sprint(echoPort))
			r, ok := got[target]
			switch {
			case !ok:
				t.Errorf("%s -> %s (%s): no result; client log:\n%s", m.name, o.name, target, raw)
			case r.Error != "" || r.Reply == nil:
				t.Errorf("%s (pod %s) -> %s (%s): %s", m.name, clientIP, o.name, target, r.Error)
			default:
				host, _, _ := net.SplitHostPort(r.Reply.Client)
				if r.Reply.Message != "from-"+m.name || host != clientIP || r.Reply.Server != "server-"+o.name {
					t.Errorf("%s -> %s: server %s echoed %q and saw client %s; want %q from pod IP %s", m.name, o.name, r.Reply.Server, r.Reply.Message, r.Reply.Client, "from-"+m.name, clientIP)
				} else {
					checked++
				}
			}
		}
	}
	t.Logf("%d member-to-member paths by pod IP, each server saw the client's own pod IP (clients done in %s)", checked, time.Since(start).Round(time.Second))
}

// echoReady: the pod's Ready condition is True.
func echoReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
