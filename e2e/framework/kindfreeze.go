package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// KindControlPlane is the proc of Kind.Pause and Kind.Resume that freezes
// only a member's control-plane node (its apiserver, etcd, controllers, and
// whatever else runs on that node) while its worker nodes' kubelets keep
// their containers running: a control plane down under live workers.
const KindControlPlane = "control-plane"

// Pause freezes a member of the kind fleet with `docker pause` (the cgroup
// freezer: every process of the node container stops where it is, no
// signal, no exit): proc KindControlPlane freezes the control-plane node
// only; proc "" every node of the member, a member frozen whole (a
// suspended VM, a hypervisor stall). Resume thaws what Pause froze.
// Idempotent.
func (k *Kind) Pause(ctx context.Context, cluster, proc string) error {
	return k.freeze(ctx, "pause", cluster, proc)
}

// Resume undoes Pause (docker unpause). Idempotent.
func (k *Kind) Resume(ctx context.Context, cluster, proc string) error {
	return k.freeze(ctx, "unpause", cluster, proc)
}

func (k *Kind) freeze(ctx context.Context, verb, cluster, proc string) error {
	if !k.Supports(OpPause, cluster, proc) {
		return fmt.Errorf("%s %s %q: %w", verb, cluster, proc, ErrUnsupported)
	}
	nodes, err := kindNodes(ctx, cluster)
	if err != nil {
		return err
	}
	if proc == KindControlPlane {
		nodes = []string{"fleetset-" + cluster + "-control-plane"}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.frozen == nil {
		k.frozen = map[string]bool{}
	}
	for _, n := range nodes {
		ictx, cancel := context.WithTimeout(ctx, time.Minute)
		st, err := run(ictx, "docker", "inspect", "-f", "{{.State.Paused}}", n)
		cancel()
		if err != nil {
			return fmt.Errorf("%s %s: node %s: %w", verb, cluster, n, err)
		}
		if (strings.TrimSpace(st) == "true") == (verb == "pause") {
			k.frozen[n] = verb == "pause"
			continue
		}
		// The cgroup freezer gives up ("unable to freeze") when a task of
		// the node does not stop in time (forking, in the kernel): retry.
		for try := 1; ; try++ {
			vctx, cancel := context.WithTimeout(ctx, time.Minute)
			out, err := run(vctx, "docker", verb, n)
			cancel()
			if err == nil {
				break
			}
			if try == 5 || ctx.Err() != nil {
				return fmt.Errorf("%s %s: node %s, %d tries: %w (%s)", verb, cluster, n, try, err, strings.TrimSpace(out))
			}
			Log(ctx, "kind: %s %s: %v; again in 2s", verb, n, strings.TrimSpace(out))
			time.Sleep(2 * time.Second)
		}
		k.frozen[n] = verb == "pause"
	}
	Log(ctx, "kind: %s %sd (%s)", cluster, verb, strings.Join(nodes, " "))
	return nil
}

// NodeRunningPods lists, by pod name, the pods of namespace ns whose
// containers are running on the nodes of member cluster, as containerd on
// each node sees them (`ctr tasks`), not as the apiserver says: it answers
// while the member's control plane is down. The nodes Pause froze are not
// asked (an exec into a frozen node hangs), and named in frozen; it waits
// for a Pause or Resume under way.
func (k *Kind) NodeRunningPods(ctx context.Context, cluster, ns string) (pods map[string]string, frozen []string, err error) {
	nodes, err := kindNodes(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	pods = map[string]string{}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range nodes {
		if k.frozen[n] {
			frozen = append(frozen, n)
			continue
		}
		// The namespace's containers (not sandboxes) whose task runs, with
		// their labels.
		script := fmt.Sprintf(`run=$(ctr -n k8s.io tasks ls | awk 'NR>1 && $3=="RUNNING"{print $1}')
for id in $(ctr -n k8s.io containers ls -q 'labels."io.kubernetes.pod.namespace"==%s,labels."io.cri-containerd.kind"==container'); do
  case " $(echo $run) " in *" $id "*) ctr -n k8s.io containers info "$id" | tr -d '\n'; echo;; esac
done`, ns)
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := run(ectx, "docker", "exec", n, "sh", "-c", script)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("node %s: %w (%s)", n, err, strings.TrimSpace(out))
		}
		for _, line := range strings.Split(out, "\n") {
			var c struct {
				Labels map[string]string `json:"Labels"`
			}
			if strings.TrimSpace(line) == "" || json.Unmarshal([]byte(line), &c) != nil {
				continue
			}
			if c.Labels["io.kubernetes.pod.namespace"] == ns && c.Labels["io.cri-containerd.kind"] == "container" {
				pods[c.Labels["io.kubernetes.pod.name"]] = n
			}
		}
	}
	return pods, frozen, nil
}
