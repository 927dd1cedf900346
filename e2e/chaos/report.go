package chaos

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Summary is the machine-readable report, summary.json.
type Summary struct {
	Seed           uint64                   `json:"seed"`
	Minutes        float64                  `json:"minutes"`
	MaxFaults      int                      `json:"maxFaults"`
	Start          time.Time                `json:"start"`
	End            time.Time                `json:"end"`
	Samples        int                      `json:"samples"`
	HubSamples     int                      `json:"hubSamples"`
	FaultsByKind   map[FaultKind]int        `json:"faultsByKind"`
	Faults         int                      `json:"faults"`
	FaultErrors    int                      `json:"faultErrors"`
	OpsByKind      map[OpKind]int           `json:"opsByKind"`
	Ops            int                      `json:"ops"`
	OpErrors       int                      `json:"opErrors"`
	Options        Options                  `json:"options"`
	Violations     []Violation              `json:"violations"`
	ByInvariant    map[Invariant]int        `json:"violationsByInvariant"`
	Quiet          time.Time                `json:"quiet"`
	Convergence    map[string]time.Duration `json:"convergence"`
	ConvergenceSec map[string]float64       `json:"convergenceSeconds"`
	RolloutSamples map[string]int           `json:"rolloutSamples"`
	PeakRolloutUnv map[string]int           `json:"peakRolloutUnavailable"`
	PeakFaultUnv   map[string]int           `json:"peakFaultUnavailable"`
	// PeakRSSKiB is, per cluster/process, the largest VmHWM seen of it
	// (a process restarted by a fault starts a new peak; the largest
	// counts).
	PeakRSSKiB map[string]int64 `json:"peakRSSKiB"`
}

// Summarize builds the Summary of a checked history.
func Summarize(h *History, r Result, o Options, rss map[string]int64, end time.Time) Summary {
	s := Summary{Seed: h.Seed, Minutes: h.Schedule.Config.Duration.Minutes(), MaxFaults: h.Schedule.Config.MaxFaults,
		Start: h.Start, End: end, Samples: len(h.Samples), FaultsByKind: map[FaultKind]int{}, OpsByKind: map[OpKind]int{},
		Options: o, Violations: r.Violations, ByInvariant: map[Invariant]int{}, Quiet: r.Quiet, Convergence: r.Convergence,
		ConvergenceSec: map[string]float64{}, RolloutSamples: r.RolloutSamples, PeakRolloutUnv: r.PeakRolloutUnavailable,
		PeakFaultUnv: r.PeakFaultUnavailable, PeakRSSKiB: rss}
	if s.Violations == nil {
		s.Violations = []Violation{}
	}
	for _, x := range h.Samples {
		if x.Hub != nil {
			s.HubSamples++
		}
	}
	for _, f := range h.Faults {
		if f.Injected.IsZero() {
			continue
		}
		s.Faults++
		s.FaultsByKind[f.Kind]++
		if f.Error != "" {
			s.FaultErrors++
		}
	}
	for _, op := range h.Ops {
		s.Ops++
		s.OpsByKind[op.Kind]++
		if op.Error != "" {
			s.OpErrors++
		}
	}
	for _, inv := range Invariants {
		s.ByInvariant[inv] = 0
	}
	for _, v := range r.Violations {
		s.ByInvariant[v.Invariant]++
	}
	for k, d := range r.Convergence {
		s.ConvergenceSec[k] = d.Seconds()
	}
	return s
}

// Markdown renders report.md.
func (s Summary) Markdown(h *History) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos run, seed %d\n\n", s.Seed)
	fmt.Fprintf(&b, "Replay: `make chaos CHAOS_SEED=%d CHAOS_MINUTES=%g CHAOS_MAX_FAULTS=%d`.\n\n", s.Seed, s.Minutes, s.MaxFaults)
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| start | %s |\n| end | %s (%v) |\n", s.Start.Format(time.RFC3339), s.End.Format(time.RFC3339), s.End.Sub(s.Start).Round(time.Second))
	fmt.Fprintf(&b, "| fault phase | %g min, at most %d faults at once |\n", s.Minutes, s.MaxFaults)
	fmt.Fprintf(&b, "| samples | %d (hub read in %d) |\n", s.Samples, s.HubSamples)
	fmt.Fprintf(&b, "| faults | %d (%d failed to inject or heal) |\n", s.Faults, s.FaultErrors)
	fmt.Fprintf(&b, "| operations | %d (%d failed) |\n", s.Ops, s.OpErrors)
	fmt.Fprintf(&b, "| **violations** | **%d** |\n\n", len(s.Violations))

	b.WriteString("## Faults by kind\n\n| kind | injected |\n|---|---|\n")
	for _, k := range FaultKinds {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.FaultsByKind[k])
	}
	b.WriteString("\n## Operations by kind\n\n| kind | done |\n|---|---|\n")
	for _, k := range OpKinds {
		fmt.Fprintf(&b, "| %s | %d |\n", k, s.OpsByKind[k])
	}
	b.WriteString("\n## Invariants\n\n| invariant | violations |\n|---|---|\n")
	for _, inv := range Invariants {
		fmt.Fprintf(&b, "| %s | %d |\n", inv, s.ByInvariant[inv])
	}
	if len(s.Violations) > 0 {
		b.WriteString("\n### Violations\n\n")
		for _, v := range s.Violations {
			fmt.Fprintf(&b, "- %s\n", v)
		}
	}
	fmt.Fprintf(&b, "\n## Convergence\n\nQuiet point (last fault healed or operation done): %s; bound %v.\n\n", s.Quiet.Format("15:04:05"), s.Options.ConvergeBound)
	b.WriteString("| FleetSet | converged after | rollout samples | peak unavailable by rollout | by faults |\n|---|---|---|---|---|\n")
	for _, fs := range h.FleetSets {
		k := fs.Namespace + "/" + fs.Name
		conv := "**not converged**"
		if d, ok := s.Convergence[k]; ok {
			conv = d.Round(time.Second).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", k, conv, s.RolloutSamples[k], s.PeakRolloutUnv[k], s.PeakFaultUnv[k])
	}
	b.WriteString("\n## Peak RSS (VmHWM)\n\n| process | MiB |\n|---|---|\n")
	keys := make([]string, 0, len(s.PeakRSSKiB))
	for k := range s.PeakRSSKiB {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var total int64
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %.1f |\n", k, float64(s.PeakRSSKiB[k])/1024)
		total += s.PeakRSSKiB[k]
	}
	fmt.Fprintf(&b, "| (sum of peaks) | %.1f |\n", float64(total)/1024)
	b.WriteString("\n## Timeline\n\n")
	type line struct {
		t time.Time
		s string
	}
	var lines []line
	for _, f := range h.Faults {
		if f.Injected.IsZero() {
			continue
		}
		e := ""
		if f.Error != "" {
			e = " — error: " + f.Error
		}
		healed := "never healed"
		if !f.Healed.IsZero() {
			healed = "healed after " + f.Healed.Sub(f.Injected).Round(100*time.Millisecond).String()
		}
		lines = append(lines, line{f.Injected, fmt.Sprintf("fault %v (drawn at +%v, hold %v), %s%s", f.Fault, f.At, f.Hold, healed, e)})
	}
	for _, o := range h.Ops {
		e := ""
		if o.Error != "" {
			e = " — error: " + o.Error
		}
		lines = append(lines, line{o.Done, fmt.Sprintf("op %v (drawn at +%v)%s", o.Op, o.At, e)})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].t.Before(lines[j].t) })
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s +%v %s\n", l.t.Format("15:04:05"), l.t.Sub(h.Start).Round(time.Second), l.s)
	}
	return b.String()
}

// Write writes report.md, summary.json and history.json.gz into dir.
func Write(dir string, h *History, s Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(s.Markdown(h)), 0o644); err != nil {
		return err
	}
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "history.json.gz"))
	if err != nil {
		return err
	}
	defer f.Close()
	z := gzip.NewWriter(f)
	if err := json.NewEncoder(z).Encode(h); err != nil {
		return err
	}
	return z.Close()
}

// ReadHistory reads a history.json.gz that Write wrote, to check it again.
func ReadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	h := &History{}
	return h, json.NewDecoder(z).Decode(h)
}
