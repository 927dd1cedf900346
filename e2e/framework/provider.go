package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Provider acts on the processes of a fleet and on the members' links to
// the hub. cluster is "hub" or a member's name; proc names a process
// (fleetset-hub, fleetset-scheduler, kube-apiserver, registration-agent,
// work-agent, ...); "" is the member's OCM registration agent.
type Provider interface {
	Name() string
	// Supports reports whether op on cluster/proc can be done, so that a
	// test skips rather than fails on a fleet that cannot.
	Supports(op Op, cluster, proc string) bool
	// Stop stops proc, Start starts it again (also after Kill).
	Stop(ctx context.Context, cluster, proc string) error
	Start(ctx context.Context, cluster, proc string) error
	// Kill crashes proc (SIGKILL, no graceful shutdown).
	Kill(ctx context.Context, cluster, proc string) error
	// Pause hangs proc with its sockets open (SIGSTOP); Resume undoes it.
	Pause(ctx context.Context, cluster, proc string) error
	Resume(ctx context.Context, cluster, proc string) error
	// Cut breaks the member's network link to the hub, every process of it
	// still running; Heal mends it.
	Cut(ctx context.Context, cluster string) error
	Heal(ctx context.Context, cluster string) error
	// Restart restarts proc with args appended to its command line (no
	// args: its original one), first rebuilt with version string rebuild
	// if that is not empty; it returns once proc is ready.
	Restart(ctx context.Context, cluster, proc, rebuild string, args ...string) error
	// Logs says where the processes' logs are, for a failed test.
	Logs() string
}

// Op is one operation of a Provider.
type Op string

// The operations.
const (
	OpStop    Op = "stop"
	OpStart   Op = "start"
	OpKill    Op = "kill"
	OpPause   Op = "pause"
	OpResume  Op = "resume"
	OpCut     Op = "cut"
	OpHeal    Op = "heal"
	OpRestart Op = "restart"
	// OpBlackhole cuts a member's link to the hub silently (packets
	// dropped, connections left hanging); OpHeal mends it. Only providers
	// with a Blackhole method (Blackholer) do it.
	OpBlackhole Op = "blackhole"
)

// Blackholer is a Provider that can cut a member's link silently.
type Blackholer interface {
	Blackhole(ctx context.Context, cluster string) error
}

// DefaultAgent is the process Stop and Start act on when proc is "".
const DefaultAgent = "registration-agent"

// ErrUnsupported is returned by a provider for what it cannot do.
var ErrUnsupported = errors.New("not supported by this fleet's provider")

// Action is one operation on cluster/proc, as data (the chaos schedule).
type Action struct {
	Op      Op
	Cluster string
	Proc    string
	Args    []string // Restart only
}

func (a Action) String() string {
	return strings.TrimSpace(strings.Join(append([]string{string(a.Op), a.Cluster, a.Proc}, a.Args...), " "))
}

// Do runs a on p.
func Do(ctx context.Context, p Provider, a Action) error {
	var err error
	switch a.Op {
	case OpStop:
		err = p.Stop(ctx, a.Cluster, a.Proc)
	case OpStart:
		err = p.Start(ctx, a.Cluster, a.Proc)
	case OpKill:
		err = p.Kill(ctx, a.Cluster, a.Proc)
	case OpPause:
		err = p.Pause(ctx, a.Cluster, a.Proc)
	case OpResume:
		err = p.Resume(ctx, a.Cluster, a.Proc)
	case OpCut:
		err = p.Cut(ctx, a.Cluster)
	case OpHeal:
		err = p.Heal(ctx, a.Cluster)
	case OpBlackhole:
		if b, ok := p.(Blackholer); ok {
			err = b.Blackhole(ctx, a.Cluster)
		} else {
			err = ErrUnsupported
		}
	case OpRestart:
		err = p.Restart(ctx, a.Cluster, a.Proc, "", a.Args...)
	default:
		err = fmt.Errorf("unknown operation %q", a.Op)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", p.Name(), a, err)
	}
	return nil
}

// NewProvider returns the provider called name: local, kind or none.
func NewProvider(name string) (Provider, error) {
	switch name {
	case "local":
		return NewLocal(EnvString("FLEET_DIR", ""), RepoRoot()), nil
	case "kind":
		return NewKind(KindFromEnv()), nil
	case "none", "":
		return None{}, nil
	}
	return nil, fmt.Errorf("FLEETSET_E2E_PROVIDER: unknown provider %q (local, kind, none)", name)
}

// None is a fleet nothing can act on (real clusters): every test that
// needs an operation skips.
type None struct{}

func (None) Name() string                                                     { return "none" }
func (None) Supports(Op, string, string) bool                                 { return false }
func (None) Stop(context.Context, string, string) error                       { return ErrUnsupported }
func (None) Start(context.Context, string, string) error                      { return ErrUnsupported }
func (None) Kill(context.Context, string, string) error                       { return ErrUnsupported }
func (None) Pause(context.Context, string, string) error                      { return ErrUnsupported }
func (None) Resume(context.Context, string, string) error                     { return ErrUnsupported }
func (None) Cut(context.Context, string) error                                { return ErrUnsupported }
func (None) Heal(context.Context, string) error                               { return ErrUnsupported }
func (None) Restart(context.Context, string, string, string, ...string) error { return ErrUnsupported }
func (None) Logs() string                                                     { return "" }

// Logf is where providers report what they did; WithLogf puts one in a
// context.
type Logf func(format string, args ...any)

type logfKey struct{}

// WithLogf returns ctx with logf, which providers log to.
func WithLogf(ctx context.Context, logf Logf) context.Context {
	return context.WithValue(ctx, logfKey{}, logf)
}

// Log logs to ctx's Logf, if any.
func Log(ctx context.Context, format string, args ...any) {
	if l, ok := ctx.Value(logfKey{}).(Logf); ok && l != nil {
		l(format, args...)
	}
}
