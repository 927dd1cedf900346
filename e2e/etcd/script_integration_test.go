//go:build integration

package etcdcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The script under test and the members of its test cluster: real etcd
// processes on 127.0.0.21-23 (every 127/8 address is the loopback), the
// script's fleet DNS names replaced by FLEETSET_ETCD_HOSTS.
var (
	script  = filepath.Join("..", "kind", "etcd-image", "fleetset-etcd")
	names   = []string{"etcd-a-0", "etcd-b-1000", "etcd-c-2000"}
	addrs   = []string{"127.0.0.21", "127.0.0.22", "127.0.0.23"}
	hostMap = func() string {
		var kv []string
		for i, n := range names {
			kv = append(kv, n+"="+addrs[i])
		}
		return strings.Join(kv, ",")
	}()
)

// scriptCluster runs the script's members: one `fleetset-etcd start` per
// instance, each with its own data root (its "claim").
type scriptCluster struct {
	t     *testing.T
	roots []string
	procs []*exec.Cmd
}

func (c *scriptCluster) env(i int) []string {
	return append(os.Environ(), "POD_NAME="+names[i], "POD_NAMESPACE=test", "FLEETSET_ETCD_SERVICE=etcd",
		"FLEETSET_ETCD_MEMBERS="+strings.Join(names, ","), "FLEETSET_ETCD_HOSTS="+hostMap,
		"FLEETSET_ETCD_LISTEN="+addrs[i], "FLEETSET_ETCD_DATA_ROOT="+c.roots[i])
}

// start runs instance i's start script in its own process group.
func (c *scriptCluster) start(i int) {
	cmd := exec.Command("sh", script, "start", "--heartbeat-interval=50", "--election-timeout=500")
	cmd.Env = c.env(i)
	log, err := os.OpenFile(filepath.Join(c.roots[i], "..", names[i]+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.procs[i] = cmd
}

// stop kills instance i's process group and waits for it.
func (c *scriptCluster) stop(i int) {
	if p := c.procs[i]; p != nil {
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		_ = p.Wait()
		c.procs[i] = nil
	}
}

// action runs `fleetset-etcd action` for instance i with the contract's
// environment plus extra, and returns its stdout and error.
func (c *scriptCluster) action(i int, action string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script, action)
	cmd.Env = append(c.env(i), "FLEETSET_INSTANCE_NAME="+names[i], "FLEETSET_INSTANCE_FQDN="+addrs[i],
		"FLEETSET_MEMBERS="+strings.Join(names, ","), "FLEETSET_MEMBER_FQDNS="+strings.Join(addrs, ","))
	cmd.Env = append(cmd.Env, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %v: %s", names[i], action, err, errb.String())
	}
	return strings.TrimSpace(out.String()), err
}

// members returns the member list (etcdctl -w simple lines), asked of
// every address.
func (c *scriptCluster) members() (string, error) {
	var eps []string
	for _, a := range addrs {
		eps = append(eps, "http://"+a+":2379")
	}
	out, err := exec.Command("etcdctl", "--endpoints="+strings.Join(eps, ","), "--dial-timeout=1s", "--command-timeout=3s",
		"member", "list", "-w", "simple").CombinedOutput()
	return string(out), err
}

// waitStarted waits until the member list has the three members, all
// started, and returns the ID of each name.
func (c *scriptCluster) waitStarted(what string) map[string]string {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.members()
		last = out
		ids := map[string]string{}
		if err == nil {
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Split(l, ", ")
				if len(f) >= 5 && f[4] != "" {
					ids[f[2]] = f[0]
				}
			}
			if len(ids) == 3 && len(strings.Split(strings.TrimSpace(out), "\n")) == 3 {
				return ids
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("%s: the three members never all started; last member list:\n%s", what, last)
	return nil
}

// roles returns each instance's roleProbe output.
func (c *scriptCluster) roles() []string {
	var r []string
	for i := range names {
		out, err := c.action(i, "role")
		if err != nil {
			out = "error"
		}
		r = append(r, out)
	}
	return r
}

func (c *scriptCluster) leader() int {
	c.t.Helper()
	for try := 0; try < 40; try++ {
		for i, r := range c.roles() {
			if r == "leader" {
				return i
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.t.Fatal("no leader")
	return -1
}

// TestScriptLifecycle runs e2e/kind/etcd-image/fleetset-etcd against real
// etcd processes (etcd and etcdctl on PATH, make test-integration builds
// them): the first start through memberJoin FirstStart; roleProbe and
// switchover; a relocation (a fresh claim: memberLeave Relocated then
// memberJoin); a fresh claim with memberJoin alone (the stale member is
// replaced); a scale-down and rejoin on the kept claim (memberLeave
// ScaledDown, the old data wiped only after memberJoin Rejoin). Every
// member ID that loses its data is replaced by a new one, never started
// again.
func TestScriptLifecycle(t *testing.T) {
	for _, b := range []string{"etcd", "etcdctl"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not on PATH (make test-integration builds it into bin/)", b)
		}
	}
	dir := t.TempDir()
	c := &scriptCluster{t: t, procs: make([]*exec.Cmd, len(names))}
	for _, n := range names {
		r := filepath.Join(dir, n, "claim")
		if err := os.MkdirAll(r, 0o755); err != nil {
			t.Fatal(err)
		}
		c.roots = append(c.roots, r)
	}
	t.Cleanup(func() {
		for i := range names {
			c.stop(i)
		}
		if t.Failed() {
			for _, n := range names {
				b, _ := os.ReadFile(filepath.Join(dir, n, n+".log"))
				t.Logf("%s log:\n%s", n, lastLines(string(b), 15))
			}
		}
	})

	// First start: nobody answers; memberJoin FirstStart marks the claims
	// to bootstrap the static initial cluster.
	for i := range names {
		c.start(i)
	}
	for i := range names {
		if out, err := c.action(i, "member-join", "FLEETSET_JOIN_REASON=FirstStart"); err != nil {
			t.Fatal(err)
		} else {
			t.Logf("%s memberJoin FirstStart: %s", names[i], out)
		}
	}
	ids := c.waitStarted("first start")
	if out, err := c.action(0, "member-join", "FLEETSET_JOIN_REASON=FirstStart"); err != nil || !strings.HasPrefix(out, "member ") {
		t.Errorf("memberJoin again on a joined member: %q, %v; want member <id>", out, err)
	}

	// roleProbe: one leader; switchover hands the role to the candidate.
	l := c.leader()
	cand := (l + 1) % len(names)
	if out, err := c.action(l, "switchover", "FLEETSET_CANDIDATE_NAME="+names[cand], "FLEETSET_CANDIDATE_FQDN="+addrs[cand]); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("switchover: %s", out)
	}
	if got := c.leader(); got != cand {
		t.Fatalf("leader after switchover: %s, want %s", names[got], names[cand])
	}

	// A relocation: instance 2 on a fresh claim, memberLeave Relocated then
	// memberJoin Relocated.
	c.stop(2)
	if err := os.RemoveAll(c.roots[2]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.roots[2], 0o755); err != nil {
		t.Fatal(err)
	}
	c.start(2)
	if _, err := c.action(2, "member-leave", "FLEETSET_LEAVE_REASON=Relocated"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.action(2, "member-leave", "FLEETSET_LEAVE_REASON=Relocated"); err != nil {
		t.Errorf("memberLeave of a member already gone: %v", err)
	}
	if _, err := c.action(2, "member-join", "FLEETSET_JOIN_REASON=Relocated"); err != nil {
		t.Fatal(err)
	}
	after := c.waitStarted("relocation")
	if after[names[2]] == ids[names[2]] {
		t.Errorf("relocated %s runs as its old ID %s", names[2], ids[names[2]])
	}
	ids = after

	// A fresh claim with memberJoin alone: the started member of its peer
	// URL, whose data is gone, is removed and a new one added.
	c.stop(1)
	if err := os.RemoveAll(c.roots[1]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.roots[1], 0o755); err != nil {
		t.Fatal(err)
	}
	c.start(1)
	time.Sleep(3 * time.Second)
	if out, _ := c.members(); !strings.Contains(out, ids[names[1]]) {
		t.Fatalf("the old member of %s was removed without memberJoin:\n%s", names[1], out)
	}
	if _, err := c.action(1, "member-join", "FLEETSET_JOIN_REASON=FreshVolume"); err != nil {
		t.Fatal(err)
	}
	after = c.waitStarted("fresh volume")
	if after[names[1]] == ids[names[1]] {
		t.Errorf("%s on a fresh claim runs as its old ID %s", names[1], ids[names[1]])
	}
	ids = after

	// Scale-down and rejoin on the kept claim: memberLeave ScaledDown, the
	// instance stops; started again on its old data it waits until
	// memberJoin Rejoin has added it anew, then wipes the data and joins.
	if _, err := c.action(0, "member-leave", "FLEETSET_LEAVE_REASON=ScaledDown"); err != nil {
		t.Fatal(err)
	}
	c.stop(0)
	c.start(0)
	time.Sleep(3 * time.Second)
	if out, _ := c.members(); strings.Contains(out, ids[names[0]]) {
		t.Fatalf("the removed member %s is back without memberJoin:\n%s", ids[names[0]], out)
	}
	if _, err := c.action(0, "member-join", "FLEETSET_JOIN_REASON=Rejoin"); err != nil {
		t.Fatal(err)
	}
	after = c.waitStarted("rejoin")
	if after[names[0]] == ids[names[0]] {
		t.Errorf("rejoined %s runs as its removed ID %s", names[0], ids[names[0]])
	}
	if out, err := c.action(0, "rollout-complete", "FLEETSET_REVISION=r1"); err != nil || !strings.Contains(out, "is healthy") {
		t.Errorf("rolloutComplete: %q, %v", out, err)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
