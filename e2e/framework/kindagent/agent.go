// Package kindagent stops, starts and restarts the processes of the kind
// fleet (e2e/kind/kind-up.sh) with client-go: a member's OCM agents are
// stopped by scaling their Deployments (and the klusterlet operator, which
// would bring them back) to 0; fleetset-hub is restarted by patching its
// Deployment, fleetset-scheduler through a per-member copy of the fleetset
// add-on's AddOnTemplate (the work agent would revert a patch).
//
// Files: agent.go (Agent, stop and start), restart.go (restart, the add-on
// copy), patch.go (the patches), wait.go (the waits).
package kindagent

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespaces, names and the annotation prefix of what the agent changed.
const (
	OperatorNS     = "open-cluster-management"
	Operator       = "klusterlet"
	AgentNS        = "open-cluster-management-agent"
	FleetsetNS     = "fleetset-system"
	Addon          = "fleetset"
	Hub            = "hub"
	Ann            = "e2e.fleetset.io"
	annStopped     = Ann + "/stopped-replicas"
	annOrigImage   = Ann + "/original-image"
	annOrigArgs    = Ann + "/original-args"
	annOrigConfigs = Ann + "/original-configs"
)

// Clients are one cluster's clients.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// Agent acts on the kind fleet whose kubeconfigs are Dir/<cluster>/kubeconfig.
type Agent struct {
	Dir string // KIND_FLEET_DIR
	// Wait bounds each wait (default 240 s); Poll is the interval (1 s).
	Wait, Poll time.Duration
	// Clients returns a cluster's clients (default: from its kubeconfig).
	Clients func(cluster string) (Clients, error)
	// Rebuild builds fleetset-<proc> with a version string, loads it into
	// the cluster and returns its image (default: make's image archive and
	// kind load, see Rebuilder).
	Rebuild func(ctx context.Context, proc, version, cluster string) (string, error)
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// New is the agent of the kind fleet in dir.
func New(dir string) *Agent {
	a := &Agent{Dir: dir, Wait: 240 * time.Second, Poll: time.Second}
	a.Clients = a.kubeconfigClients
	return a
}

func (a *Agent) kubeconfigClients(cluster string) (Clients, error) {
	path := filepath.Join(a.Dir, cluster, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return Clients{}, fmt.Errorf("no kubeconfig %s (cluster %s of the kind fleet): %w", path, cluster, err)
	}
	cfg.Timeout = 30 * time.Second
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, err
	}
	d, err := dynamic.NewForConfig(cfg)
	return Clients{Kube: k, Dynamic: d}, err
}

func (a *Agent) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

func (a *Agent) kube(cluster string) (kubernetes.Interface, error) {
	c, err := a.Clients(cluster)
	return c.Kube, err
}

// deployment reads ns/name; (nil, nil) when it does not exist.
func deployment(ctx context.Context, k kubernetes.Interface, ns, name string) (*appsv1.Deployment, error) {
	d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

// AgentDeployment is the Deployment in AgentNS running an OCM agent
// (registration-agent, work-agent), or klusterlet-agent in Singleton mode.
func AgentDeployment(ctx context.Context, k kubernetes.Interface, cluster, proc string) (string, error) {
	var name string
	switch proc {
	case "registration-agent":
		name = "klusterlet-registration-agent"
	case "work-agent":
		name = "klusterlet-work-agent"
	default:
		return "", fmt.Errorf("unknown OCM agent %s (registration-agent, work-agent)", proc)
	}
	for _, n := range []string{name, "klusterlet-agent"} {
		d, err := deployment(ctx, k, AgentNS, n)
		if err != nil {
			return "", err
		}
		if d != nil {
			return n, nil
		}
	}
	return "", fmt.Errorf("%s: no Deployment %s/%s (nor klusterlet-agent)", cluster, AgentNS, name)
}

// Stop stops an OCM agent of a member as a network partition would: the
// klusterlet operator, then the agent's Deployment scaled to 0 (the
// replicas kept in an annotation); it returns once their pods are gone.
//
// On the hub, proc fleetset-hub: its Deployment (applied by fleetset.sh,
// reconciled by nobody) scaled to 0, the hub's controller silent while
// the hub's apiserver keeps serving the members.
func (a *Agent) Stop(ctx context.Context, cluster, proc string) error {
	if cluster == Hub {
		return a.scaleHub(ctx, proc, false)
	}
	k, err := a.kube(cluster)
	if err != nil {
		return err
	}
	name, err := AgentDeployment(ctx, k, cluster, proc)
	if err != nil {
		return err
	}
	op, err := deployment(ctx, k, OperatorNS, Operator)
	if err != nil {
		return err
	}
	if op != nil {
		if err := a.scaleDown(ctx, k, op); err != nil {
			return err
		}
		if err := a.waitGone(ctx, k, cluster, OperatorNS, Operator); err != nil {
			return err
		}
	}
	d, err := k.AppsV1().Deployments(AgentNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := a.scaleDown(ctx, k, d); err != nil {
		return err
	}
	if err := a.waitGone(ctx, k, cluster, AgentNS, name); err != nil {
		return err
	}
	a.logf("%s: %s stopped (%s/%s and %s/%s at 0 replicas)", cluster, proc, AgentNS, name, OperatorNS, Operator)
	return nil
}

// Start undoes Stop: the agent back at its replicas, Ready; the operator
// too once no agent of the member is stopped.
func (a *Agent) Start(ctx context.Context, cluster, proc string) error {
	if cluster == Hub {
		return a.scaleHub(ctx, proc, true)
	}
	k, err := a.kube(cluster)
	if err != nil {
		return err
	}
	name, err := AgentDeployment(ctx, k, cluster, proc)
	if err != nil {
		return err
	}
	d, err := k.AppsV1().Deployments(AgentNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := a.scaleUp(ctx, k, d); err != nil {
		return err
	}
	if err := a.waitReady(ctx, k, cluster, AgentNS, name); err != nil {
		return err
	}
	all, err := k.AppsV1().Deployments(AgentNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var stopped []string
	for _, o := range all.Items {
		if o.Annotations[annStopped] != "" {
			stopped = append(stopped, o.Name)
		}
	}
	if len(stopped) > 0 {
		a.logf("%s: %s started (%s/%s); still stopped: %v, so %s/%s stays at 0", cluster, proc, AgentNS, name, stopped, OperatorNS, Operator)
		return nil
	}
	op, err := deployment(ctx, k, OperatorNS, Operator)
	if err != nil {
		return err
	}
	if op != nil && op.Annotations[annStopped] != "" {
		if err := a.scaleUp(ctx, k, op); err != nil {
			return err
		}
	}
	a.logf("%s: %s started (%s/%s Ready), klusterlet operator restored", cluster, proc, AgentNS, name)
	return nil
}

// Running reports whether an OCM agent has a Ready pod.
func (a *Agent) Running(ctx context.Context, cluster, proc string) (bool, error) {
	k, err := a.kube(cluster)
	if err != nil {
		return false, err
	}
	name, err := AgentDeployment(ctx, k, cluster, proc)
	if err != nil {
		return false, err
	}
	d, err := k.AppsV1().Deployments(AgentNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return d.Status.ReadyReplicas > 0, nil
}

// scaleDown records d's replicas (once) and scales it to 0, in one patch.
func (a *Agent) scaleDown(ctx context.Context, k kubernetes.Interface, d *appsv1.Deployment) error {
	r := replicas(d)
	var ann map[string]*string
	if d.Annotations[annStopped] == "" {
		ann = map[string]*string{annStopped: ptrTo(strconv.Itoa(int(r)))}
	}
	return mergePatch(ctx, k, d, ann, ptrTo[int32](0))
}

// scaleUp scales d back to the recorded replicas (its own if none, at
// least 1) and drops the record.
func (a *Agent) scaleUp(ctx context.Context, k kubernetes.Interface, d *appsv1.Deployment) error {
	r := replicas(d)
	if s := d.Annotations[annStopped]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%s/%s: annotation %s=%q: %w", d.Namespace, d.Name, annStopped, s, err)
		}
		r = int32(n)
	} else if r == 0 {
		r = 1
	}
	return mergePatch(ctx, k, d, map[string]*string{annStopped: nil}, &r)
}

func mergePatch(ctx context.Context, k kubernetes.Interface, d *appsv1.Deployment, ann map[string]*string, replicas *int32) error {
	p, err := DeploymentMergePatch(ann, replicas)
	if err != nil {
		return err
	}
	_, err = k.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, p, metav1.PatchOptions{})
	return err
}

// replicas is d's spec.replicas (1 when unset, as the API defaults it).
func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func ptrTo[T any](v T) *T { return &v }

// scaleHub stops (scales to 0, waits until its pods are gone) or starts
// (back to its replicas, waits until Ready) the hub's fleetset-hub.
func (a *Agent) scaleHub(ctx context.Context, proc string, up bool) error {
	if proc != "fleetset-hub" {
		return fmt.Errorf("the hub's %s cannot be stopped or started on kind (only fleetset-hub)", proc)
	}
	k, err := a.kube(Hub)
	if err != nil {
		return err
	}
	d, err := k.AppsV1().Deployments(FleetsetNS).Get(ctx, proc, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if up {
		if err := a.scaleUp(ctx, k, d); err != nil {
			return err
		}
		if err := a.waitReady(ctx, k, Hub, FleetsetNS, proc); err != nil {
			return err
		}
		a.logf("%s: %s started (%s/%s Ready)", Hub, proc, FleetsetNS, proc)
		return nil
	}
	if err := a.scaleDown(ctx, k, d); err != nil {
		return err
	}
	if err := a.waitGone(ctx, k, Hub, FleetsetNS, proc); err != nil {
		return err
	}
	a.logf("%s: %s stopped (%s/%s at 0 replicas)", Hub, proc, FleetsetNS, proc)
	return nil
}
