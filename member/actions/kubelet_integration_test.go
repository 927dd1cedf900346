//go:build integration

package actions_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/utils/ptr"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
	"github.com/fleetset/fleetset/member/actions"
)

// TestRemoteExecutorOnKubelet runs exec actions through a real apiserver and
// kubelet (pods/exec, websocket with SPDY fallback), in a throwaway pod of
// its own namespace: the environment and stdout/stderr come back, a
// non-zero exit is an ExitError with its code, and a command that outlasts
// the timeout ends the attempt. It needs a cluster with nodes: set
// FLEETSET_EXEC_KUBECONFIG (e.g. a kind member's kubeconfig) and, if the
// nodes lack it, FLEETSET_EXEC_IMAGE, an image with env, sh and sleep
// (default registry.k8s.io/kube-proxy:v1.34.4, which kind nodes carry);
// skipped otherwise.
func TestRemoteExecutorOnKubelet(t *testing.T) {
	path := os.Getenv("FLEETSET_EXEC_KUBECONFIG")
	if path == "" {
		t.Skip("FLEETSET_EXEC_KUBECONFIG not set: no cluster with a kubelet")
	}
	image := os.Getenv("FLEETSET_EXEC_IMAGE")
	if image == "" {
		image = "registry.k8s.io/kube-proxy:v1.34.4"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fleetset-exec-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-east-0", Labels: map[string]string{fleetv1.LabelPlacement: "db-east"}},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []v1.Container{{Name: "db", Image: image,
			ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sleep", "3600"}}}}}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pod, err = cs.CoreV1().Pods(ns.Name).Get(ctx, "db-east-0", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == v1.PodRunning, nil
	}); err != nil {
		t.Fatalf("pod not running: %v (%+v)", err, pod.Status)
	}
	ex, err := actions.NewRemoteExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := actions.NewRunner(ex)
	run := func(timeout int32, cmd ...string) (actions.Result, error) {
		return r.Run(ctx, actions.Request{Name: fleetv1.ActionMemberJoin, Placement: "db-east", Pod: pod,
			Action: &fleetv1.LifecycleAction{Exec: &fleetv1.ExecAction{Command: cmd}, Retries: ptr.To[int32](0), TimeoutSeconds: timeout},
			Env:    []actions.EnvVar{{Name: fleetv1.EnvInstanceName, Value: "db-east-0"}, {Name: fleetv1.EnvJoinReason, Value: "FirstStart"}}})
	}
	res, err := run(10, "sh", "-c", `echo "$FLEETSET_INSTANCE_NAME $FLEETSET_JOIN_REASON"; echo warn >&2`)
	if err != nil || res.Stdout != "db-east-0 FirstStart" || res.Stderr != "warn" {
		t.Errorf("env and output: stdout %q stderr %q err %v", res.Stdout, res.Stderr, err)
	}
	_, err = run(10, "sh", "-c", "exit 3")
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("exit 3: got %v", err)
	}
	start := time.Now()
	_, err = run(1, "sleep", "30")
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: got %v after %s", err, time.Since(start))
	}
}
