package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LoadReporter is a Provider that can say how loaded its host was over the
// last minute, so that a failed test's dump tells starvation from a bug.
type LoadReporter interface {
	Load() string
}

// loadSampler reads the CPU counters of the kind fleet's node containers
// (their cgroups: v1 cpuacct.usage, v2 cpu.stat usage_usec) every interval
// and keeps the samples of the last window, from which Load reports each
// container's CPU use over that window, in cores.
type loadSampler struct {
	interval, window time.Duration
	mu               sync.Mutex
	samples          []loadSample
}

type loadSample struct {
	at    time.Time
	usage map[string]int64 // container name -> CPU time in ns
}

// startLoadSampler samples until ctx ends; the first sample is taken now.
func startLoadSampler(ctx context.Context, interval, window time.Duration) *loadSampler {
	s := &loadSampler{interval: interval, window: window}
	go func() {
		for {
			s.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return s
}

func (s *loadSampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "ps", "--no-trunc", "--filter", "label=io.x-k8s.kind.cluster",
		"--format", "{{.ID}} {{.Names}}").Output()
	if err != nil {
		return
	}
	now := loadSample{at: time.Now(), usage: map[string]int64{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, name, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "fleetset-") {
			continue
		}
		if ns, ok := containerCPU(id); ok {
			now.usage[name] = ns
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, now)
	// Keep one sample at least window old, so Load always spans the window.
	for len(s.samples) > 2 && now.at.Sub(s.samples[1].at) >= s.window {
		s.samples = s.samples[1:]
	}
}

// containerCPU is the CPU time in nanoseconds of docker container id.
func containerCPU(id string) (int64, bool) {
	for _, f := range []string{"/sys/fs/cgroup/cpu,cpuacct/docker/" + id + "/cpuacct.usage", "/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage"} {
		if b, err := os.ReadFile(f); err == nil {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
			return n, err == nil
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat", "/sys/fs/cgroup/docker/" + id + "/cpu.stat"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n * 1000, err == nil
			}
		}
	}
	return 0, false
}

// Load is the host's load average and each node container's CPU use, in
// cores, between the oldest kept sample (about window ago) and a sample
// taken now, busiest first, e.g.
//
//	load 3.10 2.50 1.90; CPU over the last 61 s: 1.23 cores in 10 node containers: fleetset-east-control-plane 0.31, ...
func (s *loadSampler) Load() string {
	s.sample(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	load := "load ?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = "load " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if len(s.samples) < 2 {
		return load + "; no CPU samples of the node containers"
	}
	first, last := s.samples[0], s.samples[len(s.samples)-1]
	elapsed := last.at.Sub(first.at)
	type use struct {
		name  string
		cores float64
	}
	var uses []use
	var total float64
	for name, ns := range last.usage {
		before, ok := first.usage[name]
		if !ok {
			continue
		}
		c := float64(ns-before) / float64(elapsed.Nanoseconds())
		uses = append(uses, use{name, c})
		total += c
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].cores > uses[j].cores })
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s %.2f", u.name, u.cores)
	}
	return fmt.Sprintf("%s; CPU over the last %.0f s: %.2f cores in %d node containers: %s",
		load, elapsed.Seconds(), total, len(uses), strings.Join(parts, ", "))
}
