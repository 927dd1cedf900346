package actions

import (
	"context"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Executor runs a command in a container of a pod.
type Executor interface {
	// Exec runs argv in container of pod namespace/name until it exits or
	// ctx ends, copying its stdout and stderr; nil when it exited 0, else
	// an error (a non-zero exit: k8s.io/client-go/util/exec.ExitError).
	Exec(ctx context.Context, namespace, name, container string, argv []string, stdout, stderr io.Writer) error
}

// RemoteExecutor is the Executor over the apiserver's pods/exec
// subresource, as kubectl exec: the websocket protocol (v5), falling back
// to SPDY when the upgrade fails (an apiserver or proxy that does not
// speak it).
type RemoteExecutor struct {
	// Config is the rest config of the member cluster.
	Config *rest.Config
	// Client builds the pods/exec URL.
	Client kubernetes.Interface
}

// NewRemoteExecutor returns the pods/exec Executor over cfg; an error when
// cfg cannot build a clientset.
func NewRemoteExecutor(cfg *rest.Config) (*RemoteExecutor, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &RemoteExecutor{Config: cfg, Client: cs}, nil
}

// Exec implements Executor with POST/GET pods/<name>/exec (no stdin, no
// TTY).
func (e *RemoteExecutor) Exec(ctx context.Context, namespace, name, container string, argv []string, stdout, stderr io.Writer) error {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	u := req.URL()
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, "POST", u)
	if err != nil {
		return fmt.Errorf("SPDY executor: %w", err)
	}
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, "GET", u.String())
	if err != nil {
		return fmt.Errorf("websocket executor: %w", err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}
