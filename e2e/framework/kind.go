package framework

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fleetset/fleetset/e2e/framework/kindagent"
)

// Kind is the kind fleet of e2e/kind/kind-up.sh: a member's OCM agents and
// the hub's fleetset-hub are stopped and started, fleetset's Deployments
// restarted (kindagent), images loaded into the nodes (LoadImage). A kind
// fleet has no way to kill one process; a member is cut off by iptables on
// its nodes (kindcut.go) and frozen by pausing its node containers
// (kindfreeze.go).
type Kind struct {
	Agent *kindagent.Agent

	// mu orders Pause and Resume with NodeRunningPods: a `docker exec`
	// into a node being frozen never returns and holds the container in
	// dockerd (every later inspect or unpause of it hangs).
	mu sync.Mutex
	// frozen: the node containers Pause froze and Resume has not thawed.
	frozen map[string]bool
	// load samples the node containers' CPU every 10 s for Load.
	load *loadSampler
}

// KindFromEnv is the kind agent of KIND_FLEET_DIR (default
// <repo>/.fleet/kind), rebuilding images with make and loading them with
// kind (KIND, LOCALBIN); KIND_AGENT_WAIT bounds each wait.
func KindFromEnv() *kindagent.Agent {
	repo := RepoRoot()
	dir := EnvString("KIND_FLEET_DIR", filepath.Join(repo, ".fleet", "kind"))
	a := kindagent.New(dir)
	a.Wait = EnvDuration("KIND_AGENT_WAIT", a.Wait)
	a.Rebuild = kindagent.Rebuilder(repo, dir)
	return a
}

// NewKind is the provider of agent a.
// It samples the node containers' CPU for Load from now on.
func NewKind(a *kindagent.Agent) *Kind {
	return &Kind{Agent: a, load: startLoadSampler(context.Background(), 10*time.Second, time.Minute)}
}

// Load is the host's load average and each kind node container's CPU use
// over the last minute (LoadReporter), for a failed test's dump.
func (k *Kind) Load() string { return k.load.Load() }

func (k *Kind) Name() string { return "kind" }

// Supports: stop and start of a member's OCM agents and of the hub's
// fleetset-hub, restart of fleetset's and OCM's Deployments, a member's cut
// and heal, and the freeze of a member's nodes (pause and resume: "" every
// node, KindControlPlane its control-plane node only).
func (k *Kind) Supports(op Op, cluster, proc string) bool {
	switch op {
	case OpStop, OpStart:
		proc = orDefault(proc)
		if cluster == kindagent.Hub {
			return proc == "fleetset-hub"
		}
		return proc == "registration-agent" || proc == "work-agent"
	case OpCut, OpHeal:
		return cluster != kindagent.Hub
	case OpPause, OpResume:
		return cluster != kindagent.Hub && (proc == "" || proc == KindControlPlane)
	case OpRestart:
		switch proc {
		case "fleetset-hub", "fleetset-scheduler", "registration-agent", "work-agent", "klusterlet":
			return true
		}
		ns, name, ok := strings.Cut(proc, "/")
		return ok && ns != "" && name != ""
	}
	return false
}

func (k *Kind) agent(ctx context.Context) *kindagent.Agent {
	a := *k.Agent
	a.Logf = func(format string, args ...any) { Log(ctx, format, args...) }
	return &a
}

func (k *Kind) Stop(ctx context.Context, cluster, proc string) error {
	return k.agent(ctx).Stop(ctx, cluster, orDefault(proc))
}

func (k *Kind) Start(ctx context.Context, cluster, proc string) error {
	return k.agent(ctx).Start(ctx, cluster, orDefault(proc))
}

func (k *Kind) Restart(ctx context.Context, cluster, proc, rebuild string, args ...string) error {
	return k.agent(ctx).Restart(ctx, cluster, proc, rebuild, args...)
}

func (k *Kind) Kill(context.Context, string, string) error { return ErrUnsupported }

func (k *Kind) Logs() string {
	return "kubectl --kubeconfig " + filepath.Join(k.Agent.Dir, "<cluster>", "kubeconfig") +
		" logs -n fleetset-system deploy/<process> (OCM agents: -n open-cluster-management-agent deploy/klusterlet-<registration|work>-agent)"
}
