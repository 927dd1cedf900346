// Command agent acts on the kind fleet (make kind-up) as the e2e suite's
// kind provider does (e2e/framework/kindagent):
//
//	agent stop|start|status CLUSTER [PROC]   a member's OCM agent (registration-agent, work-agent)
//	agent restart CLUSTER PROC [ARG...]      fleetset-hub, fleetset-scheduler, registration-agent,
//	                                         work-agent, klusterlet or NAMESPACE/DEPLOYMENT, with
//	                                         ARG... appended (none: as it was)
//
// FLEET_REBUILD_VERSION=V rebuilds fleetset-hub or fleetset-scheduler with
// version V first. Environment: KIND_FLEET_DIR, KIND, LOCALBIN,
// KIND_AGENT_WAIT (each wait, default 240s).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fleetset/fleetset/e2e/framework"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s kind-agent: ERROR: %v\n", time.Now().Format("15:04:05"), err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: agent stop|start|status CLUSTER [PROC] | restart CLUSTER PROC [ARG...]")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	a := framework.KindFromEnv()
	a.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s kind-agent: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	action, cluster := args[0], args[1]
	proc := framework.DefaultAgent
	if len(args) > 2 {
		proc = args[2]
	}
	switch action {
	case "stop":
		return a.Stop(ctx, cluster, proc)
	case "start":
		return a.Start(ctx, cluster, proc)
	case "status":
		ok, err := a.Running(ctx, cluster, proc)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Println("stopped")
			os.Exit(1)
		}
		fmt.Println("running")
		return nil
	case "restart":
		if len(args) < 3 {
			return fmt.Errorf("usage: agent restart CLUSTER PROC [ARG...]")
		}
		return a.Restart(ctx, cluster, proc, os.Getenv("FLEET_REBUILD_VERSION"), args[3:]...)
	}
	return fmt.Errorf("unknown action %s", action)
}
