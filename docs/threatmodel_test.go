package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testName matches a Go test or benchmark named in a code span.
var testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")

// TestThreatModelNamesTests checks docs/security.md: every table row under
// its "## Boundaries" heading names at least one test in a code span, and
// every test the page names (anywhere) is a func of a _test.go file of the
// repository. A threat-model row is a promise; its test is what keeps it.
func TestThreatModelNamesTests(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := testFuncs(root)
	if err != nil {
		t.Fatal(err)
	}
	inBoundaries, rows := false, 0
	for i, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(line, "## ") {
			inBoundaries = strings.TrimSpace(line) == "## Boundaries"
		}
		names := testName.FindAllStringSubmatch(line, -1)
		for _, m := range names {
			if !funcs[m[1]] {
				t.Errorf("docs/security.md:%d names %s, which no _test.go file defines", i+1, m[1])
			}
		}
		if !inBoundaries || !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| actor |") {
			continue
		}
		rows++
		if len(names) == 0 {
			t.Errorf("docs/security.md:%d: a threat-model row names no test: %s", i+1, line)
		}
	}
	if rows < 20 {
		t.Errorf("docs/security.md has %d threat-model rows under ## Boundaries, want at least 20", rows)
	}
	t.Logf("%d threat-model rows", rows)
}

// testFuncs returns the names of the Test functions of every _test.go file
// under root, but for .git, bin and .cache.
func testFuncs(root string) (map[string]bool, error) {
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", ".cache", ".fleet", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	return out, err
}
