// Command mutants shows that fleetset's safety tests fail on broken code:
// for each mutant of a list (mutants.yaml: a file, an exact snippet of it,
// its replacement, the package and the test that must catch it) it applies
// the mutation to a scratch copy of the repository and runs the named test
// there (go test -c, then the test binary with -test.count=1
// -test.run='^Test$'); the mutant is killed when that test fails. It prints a table (mutant, file, test, killed or SURVIVED)
// and exits 1 if a mutant survived, did not build, or the run could not be
// judged (`make test-mutants`).
//
// The scratch copy is <work>/src: the repository's working tree as it is
// (tracked files and untracked files that are not ignored, uncommitted
// changes included), copied anew on every run; the working tree itself is
// never written. Before any mutant, each named test must pass on the
// unmutated copy, so a mutant is never "killed" by a test that fails
// anyway. A snippet found zero or several times in its file is an error:
// the code moved on and the list must follow it. Each run's output is kept
// in <work>/logs/<mutant>.log, the test binaries in <work>/bin.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// Mutant is one entry of the list.
type Mutant struct {
	// Name identifies the mutant (a file name: letters, digits, '-').
	Name string `json:"name"`
	// File is the path of the mutated file, relative to the repository.
	File string `json:"file"`
	// Original is the exact text replaced; it must occur once in File.
	Original string `json:"original"`
	// Mutated replaces it.
	Mutated string `json:"mutated"`
	// Package is the go test package pattern, relative to the repository
	// (./member/fence).
	Package string `json:"package"`
	// Test is the name of the top-level test that must fail (TestDecide).
	Test string `json:"test"`
	// Tags are the build tags of the test (integration), comma-separated.
	Tags string `json:"tags,omitempty"`
	// Why says what the mutation breaks.
	Why string `json:"why"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
var testPattern = regexp.MustCompile(`^Test[A-Za-z0-9_]*$`)

func main() {
	repo := flag.String("repo", ".", "the repository to copy")
	list := flag.String("mutants", "e2e/tools/mutants/mutants.yaml", "the mutant list, relative to -repo")
	work := flag.String("work", ".cache/mutants", "the scratch directory (relative to -repo), git-ignored; <work>/src is replaced")
	only := flag.String("only", "", "run only the mutants whose name matches this regular expression")
	timeout := flag.Duration("timeout", 5*time.Minute, "go test -timeout of each run")
	flag.Parse()
	if err := run(os.Stdout, *repo, *list, *work, *only, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

// run runs the mutants of list (those matching only) on a copy of repo in
// work and prints the table to w.
func run(w io.Writer, repo, list, work, only string, timeout time.Duration) error {
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(list) {
		list = filepath.Join(repo, list)
	}
	if !filepath.IsAbs(work) {
		work = filepath.Join(repo, work)
	}
	mutants, err := load(list, only)
	if err != nil {
		return err
	}
	src, logs := filepath.Join(work, "src"), filepath.Join(work, "logs")
	start := time.Now()
	if err := copyTree(repo, src); err != nil {
		return fmt.Errorf("copying %s to %s: %w", repo, src, err)
	}
	if err := os.RemoveAll(logs); err != nil {
		return err
	}
	for _, d := range []string{logs, filepath.Join(work, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	originals := map[string][]byte{}
	for _, m := range mutants {
		b, err := os.ReadFile(filepath.Join(src, m.File))
		if err != nil {
			return fmt.Errorf("mutant %s: %w", m.Name, err)
		}
		if n := bytes.Count(b, []byte(m.Original)); n != 1 {
			return fmt.Errorf("mutant %s: its original snippet occurs %d times in %s, want once: update %s to the code\n  snippet: %q", m.Name, n, m.File, list, m.Original)
		}
		originals[m.File] = b
	}
	// KUBEBUILDER_ASSETS: the copy has no bin/; integration tests use the
	// repository's.
	env := os.Environ()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env = append(env, "KUBEBUILDER_ASSETS="+filepath.Join(repo, "bin"))
	}

	// Baseline: every named test passes on the unmutated copy.
	type group struct{ pkg, tags string }
	tests := map[group][]string{}
	var order []group
	for _, m := range mutants {
		g := group{m.Package, m.Tags}
		if _, ok := tests[g]; !ok {
			order = append(order, g)
		}
		if !slices.Contains(tests[g], m.Test) {
			tests[g] = append(tests[g], m.Test)
		}
	}
	bins := map[group]string{}
	for i, g := range order {
		bins[g] = filepath.Join(work, "bin", fmt.Sprintf("%d.test", i))
		log := filepath.Join(logs, fmt.Sprintf("baseline-%d.log", i))
		out, built, _, err := goTest(src, env, g.pkg, g.tags, tests[g], bins[g], timeout, log)
		switch {
		case err != nil:
			return err
		case !built:
			return fmt.Errorf("baseline: %s (tags %q) does not build on the unmutated copy; see %s", g.pkg, g.tags, log)
		}
		for _, t := range tests[g] {
			if !passed(out, t) {
				return fmt.Errorf("baseline: %s in %s (tags %q) does not pass on the unmutated copy; see %s", t, g.pkg, g.tags, log)
			}
		}
	}
	baseline := time.Since(start)

	type row struct {
		m       Mutant
		result  string
		elapsed time.Duration
	}
	var rows []row
	bad := 0
	for _, m := range mutants {
		path := filepath.Join(src, m.File)
		mutated := bytes.Replace(originals[m.File], []byte(m.Original), []byte(m.Mutated), 1)
		if err := os.WriteFile(path, mutated, 0o644); err != nil {
			return err
		}
		t0 := time.Now()
		out, built, exit, err := goTest(src, env, m.Package, m.Tags, []string{m.Test}, bins[group{m.Package, m.Tags}], timeout, filepath.Join(logs, m.Name+".log"))
		if rerr := os.WriteFile(path, originals[m.File], 0o644); rerr != nil {
			return errors.Join(err, rerr)
		}
		if err != nil {
			return err
		}
		r := row{m: m, elapsed: time.Since(t0).Round(100 * time.Millisecond)}
		switch {
		case !built:
			r.result = "BUILD FAILED" // a mutant must compile to mean anything
		case failed(out, m.Test):
			r.result = "killed"
		case exit == 0:
			r.result = "SURVIVED"
		default:
			r.result = fmt.Sprintf("ERROR (exit %d, %s did not fail)", exit, m.Test)
		}
		if r.result != "killed" {
			bad++
		}
		rows = append(rows, r)
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MUTANT\tFILE\tTEST\tRESULT\tTIME")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.m.Name, r.m.File, r.m.Test, r.result, r.elapsed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d mutants, %d killed; baseline and copy %s, total %s; logs in %s\n",
		len(rows), len(rows)-bad, baseline.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), logs)
	for _, r := range rows {
		if r.result != "killed" {
			fmt.Fprintf(w, "\n%s %s: %s\n  %s: %q -> %q\n  log: %s\n", r.m.Name, r.result, r.m.Why, r.m.File, r.m.Original, r.m.Mutated, filepath.Join(logs, r.m.Name+".log"))
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d mutants not killed by their test", bad, len(rows))
	}
	return nil
}

// load reads the list and checks its entries; only, when set, keeps the
// mutants whose name matches it.
func load(path, only string) ([]Mutant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mutants []Mutant
	if err := yaml.UnmarshalStrict(b, &mutants); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var re *regexp.Regexp
	if only != "" {
		if re, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("-only: %w", err)
		}
	}
	seen := map[string]bool{}
	var out []Mutant
	for i, m := range mutants {
		switch {
		case !namePattern.MatchString(m.Name):
			return nil, fmt.Errorf("%s: entry %d: name %q: want lower-case letters, digits and '-'", path, i, m.Name)
		case seen[m.Name]:
			return nil, fmt.Errorf("%s: mutant %s listed twice", path, m.Name)
		case m.File == "" || filepath.IsAbs(m.File) || strings.HasPrefix(filepath.Clean(m.File), ".."):
			return nil, fmt.Errorf("%s: mutant %s: file %q: want a path inside the repository", path, m.Name, m.File)
		case m.Original == "" || m.Original == m.Mutated:
			return nil, fmt.Errorf("%s: mutant %s: original must be set and differ from mutated", path, m.Name)
		case m.Package != "." && !strings.HasPrefix(m.Package, "./") || strings.Contains(m.Package, "..."):
			return nil, fmt.Errorf("%s: mutant %s: package %q: want one package, ./<dir>", path, m.Name, m.Package)
		case !testPattern.MatchString(m.Test):
			return nil, fmt.Errorf("%s: mutant %s: test %q: want the name of one top-level test", path, m.Name, m.Test)
		case m.Why == "":
			return nil, fmt.Errorf("%s: mutant %s: say why (what the mutation breaks)", path, m.Name)
		}
		seen[m.Name] = true
		if re == nil || re.MatchString(m.Name) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no mutant to run", path)
	}
	return out, nil
}

// goTest builds pkg's test binary in dir with tags into bin (go test -c;
// go leaves an up-to-date binary alone, so a mutant of a file that is no Go
// source costs no link) and runs tests in it, from the package's
// directory, as go test does. It writes what both printed to log and
// returns it, whether the binary built, and the test's exit code; err is
// set only when go or the binary could not be run at all.
func goTest(dir string, env []string, pkg, tags string, tests []string, bin string, timeout time.Duration, log string) ([]byte, bool, int, error) {
	var buf bytes.Buffer
	built, exit, err := buildAndRun(dir, env, pkg, tags, tests, bin, timeout, &buf)
	if werr := os.WriteFile(log, buf.Bytes(), 0o644); werr != nil && err == nil {
		err = werr
	}
	return buf.Bytes(), built, exit, err
}

func buildAndRun(dir string, env []string, pkg, tags string, tests []string, bin string, timeout time.Duration, buf *bytes.Buffer) (built bool, exit int, err error) {
	// No vet (make verify runs it) and no symbol tables or DWARF: the link
	// of the big integration test binaries is most of a mutant's time.
	args := []string{"test", "-c", "-o", bin, "-vet=off", "-ldflags=-s -w"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, pkg)
	if exit, err = runLogged(dir, env, buf, "go", args...); err != nil || exit != 0 {
		return false, exit, err
	}
	if _, err := os.Stat(bin); err != nil {
		return false, 0, fmt.Errorf("go test -c %s wrote no test binary (no test files?): %w", pkg, err)
	}
	exit, err = runLogged(filepath.Join(dir, pkg), env, buf, bin,
		"-test.count=1", "-test.v", "-test.timeout="+timeout.String(), "-test.run=^("+strings.Join(tests, "|")+")$")
	return true, exit, err
}

// runLogged runs name with args in dir, its output appended to w, and
// returns its exit code; err only when it could not be run.
func runLogged(dir string, env []string, w *bytes.Buffer, name string, args ...string) (int, error) {
	fmt.Fprintf(w, "$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, w, w
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return 0, nil
}

// passed and failed report whether go test -v's output has test's
// top-level result line.
func passed(out []byte, test string) bool { return hasLine(out, "--- PASS: "+test+" (") }
func failed(out []byte, test string) bool { return hasLine(out, "--- FAIL: "+test+" (") }

func hasLine(out []byte, prefix string) bool {
	s := bufio.NewScanner(bytes.NewReader(out))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), prefix) {
			return true
		}
	}
	return false
}

// copyTree replaces dst with the files of repo's working tree that git
// knows or would add: tracked ones as they are now (a tracked file deleted
// in the tree is left out) and untracked ones that are not ignored.
func copyTree(repo, dst string) error {
	cmd := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w: %s", err, stderr.String())
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if err := copyFile(filepath.Join(repo, f), filepath.Join(dst, f)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return nil // a submodule
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
