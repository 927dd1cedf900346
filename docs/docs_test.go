// Package docs_test checks the links of the repository's markdown pages
// (README.md, CHANGELOG.md, docs/*.md and every other *.md in the
// repository): a relative link must name a file or directory that exists
// inside the repository, and a #fragment must name a heading of the target
// page, by GitHub's anchor rules. Links with a scheme (http, https, mailto)
// are not followed, and links in fenced code blocks and code spans are not
// links.
package docs_test

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestMarkdownLinks fails on every broken relative link or anchor in the
// repository's markdown files.
func TestMarkdownLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "CHANGELOG.md", "docs/architecture.md"} {
		if !slices.Contains(files, want) {
			t.Errorf("%s not among the markdown files found (%d files)", want, len(files))
		}
	}
	links := 0
	for _, f := range files {
		problems, n, err := checkFile(root, f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		links += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	t.Logf("%d markdown files, %d relative links", len(files), links)
}

// TestCheckFile runs the checker on a small repository of its own: each
// broken link it must report, and none of the good ones.
func TestCheckFile(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/target.md", "# Target page\n\n## Fencing\n\n## Fencing\n\n## The ordinal → domain map: one seat, hub & member\n\nSetext heading\n--------------\n\n<a id=\"explicit\"></a>\n")
	write("docs/sub/deep.md", "# Deep\n")
	write("manifests/hub/kustomization.yaml", "resources: []\n")
	write("page.md", strings.Join([]string{
		"# Page",
		"",
		"[good](docs/target.md) [good](docs/target.md#fencing) [dup](docs/target.md#fencing-1)",
		"[arrow](docs/target.md#the-ordinal--domain-map-one-seat-hub--member) [setext](docs/target.md#setext-heading)",
		"[explicit](docs/target.md#explicit) [self](#page) [dir](manifests/hub) [file](manifests/hub/kustomization.yaml)",
		"[web](https://example.com/x.md) [mail](mailto:a@b.c) ![img](docs/target.md \"title\") [angle](<docs/target.md>)",
		"[nested [brackets]](docs/sub/deep.md#deep) [root](/docs/target.md#target-page) [ref]: docs/sub/deep.md",
		"",
		"`[code](missing.md)` and ``[code `x`](missing.md)``",
		"",
		"```sh",
		"[fenced](missing.md)",
		"```",
		"~~~~",
		"```",
		"[still fenced](missing.md)",
		"~~~~",
		"",
		"[missing](missing.md) [bad anchor](docs/target.md#nope) [dup too far](docs/target.md#fencing-2)",
		"[self bad](#nowhere) [outside](../outside.md) [outside deep](docs/../../x.md) [scheme](ftp://x/y)",
		"[refdef]: docs/missing.md",
		"[encoded](docs/target.md#fencing%2D1) [case](docs/target.md#Fencing)",
	}, "\n"))
	problems, n, err := checkFile(root, "page.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		// "page.md:19: missing.md: ..." → "19 missing.md"
		f := strings.SplitN(p, ": ", 3)
		got = append(got, strings.TrimPrefix(f[0], "page.md:")+" "+f[1])
	}
	want := []string{
		"19 missing.md", "19 docs/target.md#nope", "19 docs/target.md#fencing-2",
		"20 #nowhere", "20 ../outside.md", "20 docs/../../x.md", "20 ftp://x/y",
		"21 docs/missing.md",
		"22 docs/target.md#Fencing",
	}
	if !slices.Equal(want, got) {
		t.Errorf("problems:\nwant %q\n got %q\nall:\n%s", want, got, strings.Join(problems, "\n"))
	}
	if n != 22 {
		t.Errorf("checked %d relative links, want 22", n)
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"The FleetSet API", "the-fleetset-api"},
		{"The resync lease: contract for in-cluster actors", "the-resync-lease-contract-for-in-cluster-actors"},
		{"The ordinal → domain map: one seat sequence, hub and member", "the-ordinal--domain-map-one-seat-sequence-hub-and-member"},
		{"Losing a cluster: fenced failover", "losing-a-cluster-fenced-failover"},
		{"kubectl fleetset: a kubectl plugin", "kubectl-fleetset-a-kubectl-plugin"},
		{"`make bench-hub` (Go benchmarks)", "make-bench-hub-go-benchmarks"},
		{"See [the docs](docs/x.md) *now*", "see-the-docs-now"},
		{"snake_case and 1.34.4", "snake_case-and-1344"},
		{"Ünïcode Zürich", "ünïcode-zürich"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// markdownFiles returns the repository's markdown files, slash-separated
// and relative to root: those git tracks or would track (untracked files
// not ignored), or, without git, every *.md outside hidden directories,
// bin/ and testdata/.
func markdownFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" || slices.Contains(files, f) {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
				files = append(files, f)
			}
		}
		slices.Sort(files)
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata" || name == "_output") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// link is a link destination found at a line of a page.
type link struct {
	line int
	dest string
}

// checkFile checks the links of page (slash-separated, relative to root)
// and returns a problem per broken one, "page:line: dest: why", and how
// many relative links it checked.
func checkFile(root, page string) ([]string, int, error) {
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		return nil, 0, err
	}
	var problems []string
	n := 0
	anchors := map[string]map[string]bool{} // by page
	anchorsOf := func(target string) (map[string]bool, error) {
		if a, ok := anchors[target]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(target)))
		if err != nil {
			return nil, err
		}
		anchors[target] = headingAnchors(string(b))
		return anchors[target], nil
	}
	for _, l := range links(string(text)) {
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", page, l.line, l.dest, fmt.Sprintf(format, args...)))
		}
		if scheme.MatchString(l.dest) {
			s := strings.ToLower(l.dest[:strings.Index(l.dest, ":")])
			if s != "http" && s != "https" && s != "mailto" {
				bad("scheme %q: only relative links and http(s) or mailto links are allowed", s)
			}
			continue
		}
		n++
		target, fragment, _ := strings.Cut(l.dest, "#")
		target, err := url.PathUnescape(target)
		if err != nil {
			bad("%v", err)
			continue
		}
		if target == "" {
			target = page
		} else if strings.HasPrefix(target, "/") {
			target = path.Clean(strings.TrimLeft(target, "/"))
		} else {
			target = path.Join(path.Dir(page), target)
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			bad("leaves the repository")
			continue
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(target)))
		if err != nil {
			bad("%s does not exist", target)
			continue
		}
		if fragment == "" || info.IsDir() || !strings.HasSuffix(strings.ToLower(target), ".md") {
			continue
		}
		anchor, err := url.PathUnescape(fragment)
		if err != nil {
			bad("%v", err)
			continue
		}
		a, err := anchorsOf(target)
		if err != nil {
			return nil, n, err
		}
		if !a[anchor] {
			bad("no heading of %s has the anchor #%s", target, anchor)
		}
	}
	return problems, n, nil
}

// scheme matches a destination with a URL scheme.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// fence matches the opening or closing line of a fenced code block.
var fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// proseLines returns the lines of a page with fenced code blocks blanked
// out, so line numbers stay those of the page.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	open := ""
	for i, line := range lines {
		m := fence.FindStringSubmatch(line)
		switch {
		case open == "" && m != nil:
			open = m[1]
			lines[i] = ""
		case open != "":
			if m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[strings.Index(line, m[1])+len(m[1]):]) == "" {
				open = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// codeSpan matches an inline code span: a run of backticks, then anything up
// to the same run.
var codeSpan = regexp.MustCompile("(`+)")

// stripCode replaces the code spans of a line with spaces.
func stripCode(line string) string {
	var b strings.Builder
	for {
		loc := codeSpan.FindStringIndex(line)
		if loc == nil {
			b.WriteString(line)
			return b.String()
		}
		run := line[loc[0]:loc[1]]
		end := -1
		for i := loc[1]; i < len(line); {
			j := strings.Index(line[i:], run)
			if j < 0 {
				break
			}
			j += i
			k := j + len(run)
			if (j == 0 || line[j-1] != '`') && (k == len(line) || line[k] != '`') {
				end = k
				break
			}
			i = k
			for i < len(line) && line[i] == '`' {
				i++
			}
		}
		if end < 0 {
			// No closing run: the backticks are literal.
			b.WriteString(line[:loc[1]])
			line = line[loc[1]:]
			continue
		}
		b.WriteString(line[:loc[0]])
		b.WriteString(strings.Repeat(" ", end-loc[0]))
		line = line[end:]
	}
}

// refDef matches a link reference definition, [label]: destination (not
// a footnote, [^label]: text).
var refDef = regexp.MustCompile(`^ {0,3}\[[^\]^][^\]]*\]:\s*(<[^>]*>|\S+)`)

// htmlHref matches an HTML link or image in a page.
var htmlHref = regexp.MustCompile(`<(?:a|img)\s[^>]*?(?:href|src)="([^"]*)"`)

// links returns the destinations of a page's inline links and images,
// reference definitions and HTML links, outside code.
func links(text string) []link {
	var out []link
	for i, line := range proseLines(text) {
		line = stripCode(line)
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, strings.Trim(m[1], "<>")})
		}
		for _, m := range htmlHref.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
		for j := 0; j < len(line); j++ {
			if line[j] != '[' {
				continue
			}
			// The matching ']' (brackets nest in link text).
			depth, k := 0, j
			for ; k < len(line); k++ {
				if line[k] == '\\' {
					k++
					continue
				}
				if line[k] == '[' {
					depth++
				} else if line[k] == ']' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if k+1 >= len(line) || line[k+1] != '(' {
				continue
			}
			if dest, ok := destination(line[k+2:]); ok {
				out = append(out, link{i + 1, dest})
			}
			j = k
		}
	}
	return out
}

// destination parses an inline link's destination from what follows its
// "(": <dest> or dest with balanced parentheses, then an optional title.
func destination(s string) (string, bool) {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "<") {
		end := strings.Index(s, ">")
		if end < 0 {
			return "", false
		}
		return s[1:end], true
	}
	depth := 0
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case r == ')' || r == ' ':
			return s[:i], i > 0
		}
	}
	return "", false
}

// atxHeading matches an ATX heading and captures its text.
var atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)

// setextUnderline matches the line under a setext heading.
var setextUnderline = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)

// htmlAnchor matches an explicit HTML anchor: id="..." or name="...".
var htmlAnchor = regexp.MustCompile(`<[a-zA-Z][^>]*?\s(?:id|name)="([^"]+)"`)

// headingAnchors returns the anchors GitHub gives a page's headings (with
// -1, -2, ... for repeats) and its explicit HTML anchors.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	add := func(heading string) {
		base := slug(heading)
		s := base
		for n := seen[base]; ; n++ {
			if n > 0 {
				s = base + "-" + strconv.Itoa(n)
			}
			if !anchors[s] {
				break
			}
		}
		seen[base]++
		anchors[s] = true
	}
	lines := proseLines(text)
	for i, line := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(stripCode(line), -1) {
			anchors[m[1]] = true
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			add(m[1])
			continue
		}
		if i > 0 && setextUnderline.MatchString(line) && isParagraphLine(lines[i-1]) &&
			(i < 2 || strings.TrimSpace(lines[i-2]) == "" || atxHeading.MatchString(lines[i-2])) {
			add(strings.TrimSpace(lines[i-1]))
		}
	}
	return anchors
}

// isParagraphLine reports whether a line can be a setext heading's text: not
// blank, not a table row, list item, quote, heading or HTML block.
func isParagraphLine(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(line, "    ") {
		return false
	}
	for _, p := range []string{"|", "- ", "* ", "+ ", ">", "#", "<"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return !orderedItem.MatchString(t)
}

// orderedItem matches an ordered list item.
var orderedItem = regexp.MustCompile(`^\d+[.)] `)

// inlineLink matches an inline link or image, to keep only its text.
var inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// htmlTag matches an HTML tag.
var htmlTag = regexp.MustCompile(`<[^>]+>`)

// slug returns GitHub's anchor for a heading: its rendered text (links
// reduced to their text, no HTML tags, no emphasis or code markers)
// lowercased, every character that is not a letter, number, mark,
// connector ('_'), '-' or space dropped, and spaces turned into hyphens.
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
