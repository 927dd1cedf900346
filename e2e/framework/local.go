package framework

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Local is the local fleet of e2e/fleet/fleet-up.sh: processes on
// 127.0.0.1 with launchers in Dir/<cluster>/run/, acted on by
// e2e/fleet/agent.sh (which shares fleet-up's Bash helpers).
type Local struct {
	Dir   string // FLEET_DIR
	Agent string // e2e/fleet/agent.sh
}

// NewLocal is the local fleet in dir (default <repo>/.fleet).
func NewLocal(dir, repo string) *Local {
	if dir == "" {
		dir = filepath.Join(repo, ".fleet")
	}
	return &Local{Dir: dir, Agent: filepath.Join(repo, "e2e", "fleet", "agent.sh")}
}

func (l *Local) Name() string { return "local" }

// Supports: any process fleet-up started; a cut or blackhole on a member
// with a hub-link.
func (l *Local) Supports(op Op, cluster, proc string) bool {
	switch op {
	case OpCut, OpHeal, OpBlackhole:
		proc = "hub-link"
	case OpStop, OpStart:
		if proc == "" {
			proc = DefaultAgent
		}
	}
	_, err := os.Stat(filepath.Join(l.Dir, cluster, "run", proc+".sh"))
	return err == nil && proc != ""
}

func (l *Local) Stop(ctx context.Context, cluster, proc string) error {
	return l.run(ctx, nil, "stop", cluster, orDefault(proc))
}

func (l *Local) Start(ctx context.Context, cluster, proc string) error {
	return l.run(ctx, nil, "start", cluster, orDefault(proc))
}

func (l *Local) Kill(ctx context.Context, cluster, proc string) error {
	return l.run(ctx, nil, "kill", cluster, proc)
}

func (l *Local) Pause(ctx context.Context, cluster, proc string) error {
	return l.run(ctx, nil, "pause", cluster, proc)
}

func (l *Local) Resume(ctx context.Context, cluster, proc string) error {
	return l.run(ctx, nil, "resume", cluster, proc)
}

func (l *Local) Cut(ctx context.Context, cluster string) error {
	return l.run(ctx, nil, "cut", cluster)
}

// Blackhole drops the member's hub link silently (agent.sh blackhole).
func (l *Local) Blackhole(ctx context.Context, cluster string) error {
	return l.run(ctx, nil, "blackhole", cluster)
}

func (l *Local) Heal(ctx context.Context, cluster string) error {
	return l.run(ctx, nil, "heal", cluster)
}

func (l *Local) Restart(ctx context.Context, cluster, proc, rebuild string, args ...string) error {
	var env []string
	if rebuild != "" {
		env = []string{"FLEET_REBUILD_VERSION=" + rebuild}
	}
	return l.run(ctx, env, append([]string{"restart", cluster, proc}, args...)...)
}

func (l *Local) Logs() string { return filepath.Join(l.Dir, "<cluster>", "logs", "<process>.log") }

// run runs agent.sh with args; FLEET_REBUILD_VERSION is set only by env.
func (l *Local) run(ctx context.Context, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, l.Agent, args...)
	cmd.Env = append(append(withoutEnv(os.Environ(), "FLEET_REBUILD_VERSION"), "FLEET_DIR="+l.Dir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(l.Agent), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	Log(ctx, "%s %s: %s", filepath.Base(l.Agent), strings.Join(args, " "), strings.TrimSpace(string(out)))
	return nil
}

func orDefault(proc string) string {
	if proc == "" {
		return DefaultAgent
	}
	return proc
}

func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// PeakRSS raises peaks["cluster/proc"] to each running process's VmHWM
// (KiB).
func (l *Local) PeakRSS(peaks map[string]int64) {
	pids, _ := filepath.Glob(filepath.Join(l.Dir, "*", "run", "*.pid"))
	for _, pf := range pids {
		b, err := os.ReadFile(pf)
		if err != nil {
			continue
		}
		pid := strings.TrimSpace(string(b))
		cluster := filepath.Base(filepath.Dir(filepath.Dir(pf)))
		proc := strings.TrimSuffix(filepath.Base(pf), ".pid")
		if kib := vmHWM(pid); kib > 0 {
			k := cluster + "/" + proc
			peaks[k] = max(peaks[k], kib)
		}
	}
}

// vmHWM returns /proc/<pid>/status VmHWM in KiB, 0 if unreadable. The
// launcher execs the binary, so the recorded PID is the process's.
func vmHWM(pid string) int64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// ArchiveLogs writes every cluster's logs (Dir/<cluster>/logs/) to the
// gzipped tar file out.
func (l *Local) ArchiveLogs(out string) error {
	dirs, err := filepath.Glob(filepath.Join(l.Dir, "*", "logs"))
	if err != nil || len(dirs) == 0 {
		return fmt.Errorf("no logs under %s: %v", l.Dir, err)
	}
	args := []string{"-czf", out, "-C", l.Dir}
	for _, d := range dirs {
		rel, err := filepath.Rel(l.Dir, d)
		if err != nil {
			return err
		}
		args = append(args, rel)
	}
	if b, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, b)
	}
	return nil
}

// DNSAddress returns host:port of the CoreDNS the local fleet runs for
// cluster (the dns= entry of Dir/ports, written by fleet-up.sh); an error
// when the fleet has none for it.
func (l *Local) DNSAddress(cluster string) (string, error) {
	b, err := os.ReadFile(filepath.Join(l.Dir, "ports"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != cluster {
			continue
		}
		for _, f := range fields[1:] {
			if port, ok := strings.CutPrefix(f, "dns="); ok {
				return "127.0.0.1:" + port, nil
			}
		}
	}
	return "", fmt.Errorf("%s/ports: no dns= entry for %s (a fleet started before fleet DNS?)", l.Dir, cluster)
}
