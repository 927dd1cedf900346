package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRun runs the runner on a small repository of its own: a mutant its
// test catches is killed, one another test lets through SURVIVED, one that
// does not compile BUILD FAILED, and the run fails; the copy holds the
// untracked file and not the ignored one, and the working tree is left as
// it was. A snippet that moved, and a named test failing on the unmutated
// copy, stop the run before any mutant.
func TestRun(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	files := map[string]string{
		"go.mod":     "module example.com/m\n\ngo 1.25\n",
		".gitignore": "/.cache/\n/ignored.go\n",
		"m.go":       "package m\n\n// Majority reports whether votes are more than half of members.\nfunc Majority(votes, members int) bool { return 2*votes > members }\n",
		// Untracked: copied all the same.
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestMajority(t *testing.T) {\n\tif Majority(2, 4) || !Majority(3, 4) {\n\t\tt.Error(\"wrong majority\")\n\t}\n}\n\nfunc TestOther(t *testing.T) {}\n",
		// Ignored: not copied (it would not compile).
		"ignored.go": "package m\n\nthis does not compile\n",
		"mutants.yaml": `- name: killed
  file: m.go
  original: "2*votes > members"
  mutated: "2*votes >= members"
  package: .
  test: TestMajority
  why: half is a majority
- name: survivor
  file: m.go
  original: "2*votes > members"
  mutated: "2*votes >= members"
  package: .
  test: TestOther
  why: a test that checks nothing
- name: broken
  file: m.go
  original: "return 2*votes > members"
  mutated: "return 2*votes >"
  package: .
  test: TestMajority
  why: does not compile
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "go.mod", ".gitignore", "m.go", "mutants.yaml"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	var out bytes.Buffer
	err := run(&out, repo, "mutants.yaml", ".cache/mutants", "", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 mutants not killed") {
		t.Errorf("run: %v, want 2 of 3 mutants not killed", err)
	}
	results := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[1] == "m.go" {
			results[f[0]+" "+f[2]] = strings.Join(f[3:len(f)-1], " ")
		}
	}
	for mutant, want := range map[string]string{"killed TestMajority": "killed", "survivor TestOther": "SURVIVED", "broken TestMajority": "BUILD FAILED"} {
		if results[mutant] != want {
			t.Errorf("mutant %s: %q, want %q; table:\n%s", mutant, results[mutant], want, out.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "m.go")); string(b) != files["m.go"] {
		t.Errorf("the working tree's m.go changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(repo, ".cache/mutants/src/ignored.go")); err == nil {
		t.Error("the ignored file was copied")
	}

	if err := run(&out, repo, "mutants.yaml", ".cache/mutants", "^killed$", time.Minute); err != nil {
		t.Errorf("run -only ^killed$: %v, want it killed", err)
	}
	moved := strings.ReplaceAll(files["m.go"], "2*votes > members", "votes*2 > members")
	if err := os.WriteFile(filepath.Join(repo, "m.go"), []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(&out, repo, "mutants.yaml", ".cache/mutants", "", time.Minute); err == nil || !strings.Contains(err.Error(), "occurs 0 times in m.go") {
		t.Errorf("run after the code moved: %v, want the snippet reported missing", err)
	}
	failing := strings.ReplaceAll(files["m.go"], "2*votes > members", "2*votes > members-1")
	if err := os.WriteFile(filepath.Join(repo, "m.go"), []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(&out, repo, "mutants.yaml", ".cache/mutants", "^killed$", time.Minute); err == nil || !strings.Contains(err.Error(), "baseline: TestMajority") {
		t.Errorf("run with TestMajority failing unmutated: %v, want a baseline error", err)
	}
}
