package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary is a tiny static Go program built once by TestMain, standing
// in for fleetset-hub and fleetset-scheduler (built the way `make images`
// builds them: CGO_ENABLED=0, -trimpath).
var staticBinary string

const helloOutput = "hello from scratch"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ocimage-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	staticBinary, err = buildStatic(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the test binary:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildStatic writes a hello-world module into dir and builds it with
// CGO_ENABLED=0; it returns the binary's path or the build's error.
func buildStatic(dir string) (string, error) {
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(" + strconv.Quote(helloOutput) + ") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "fleetset-test")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return bin, nil
}

func testOptions() Options {
	return Options{
		Binary:   staticBinary,
		Arch:     runtime.GOARCH,
		Created:  time.Unix(1700000000, 0),
		Version:  "v1.2.3-4-gabcdef0-dirty",
		Revision: "abcdef0123456789abcdef0123456789abcdef01",
		Source:   "github.com/fleetset/fleetset",
	}
}

// writeArchive builds opts into dir/name.tar tagged tag and returns the path.
func writeArchive(t *testing.T, opts Options, tag string) string {
	t.Helper()
	img, err := Build(opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := Write(p, tag, img); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return p
}

// layerFile is one entry of an image layer.
type layerFile struct {
	hdr      tar.Header
	contents []byte
}

// readLayer returns the files of l by path ("/etc/passwd", "/tmp").
func readLayer(t *testing.T, l v1.Layer) map[string]layerFile {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]layerFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(hdr.Name, "/")] = layerFile{hdr: *hdr, contents: b}
	}
}

// TestArchive builds the test binary into an archive, reads the archive back
// the way a loader does (manifest.json by tag) and checks the image config and
// the layer: what `make images` promises for fleetset-hub and
// fleetset-scheduler.
func TestArchive(t *testing.T) {
	opts := testOptions()
	const tag = "fleetset-test:dev"
	p := writeArchive(t, opts, tag)

	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != tag {
		t.Fatalf("manifest.json = %+v, want one image tagged %s", m, tag)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(p, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	const entrypoint = "/usr/local/bin/fleetset-test"
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != entrypoint {
		t.Errorf("Entrypoint = %q, want [%s]", got, entrypoint)
	}
	if len(cfg.Config.Cmd) != 0 {
		t.Errorf("Cmd = %q, want none", cfg.Config.Cmd)
	}
	uid, gid, ok := strings.Cut(cfg.Config.User, ":")
	for _, id := range []string{uid, gid} {
		n, err := strconv.Atoi(id)
		if !ok || err != nil || n == 0 {
			t.Errorf("User = %q, want numeric non-root uid:gid", cfg.Config.User)
		}
	}
	if cfg.Config.WorkingDir != "/" {
		t.Errorf("WorkingDir = %q, want /", cfg.Config.WorkingDir)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  opts.Version,
		"org.opencontainers.image.title":    "fleetset-test",
		"org.opencontainers.image.revision": opts.Revision,
		"org.opencontainers.image.source":   opts.Source,
	}
	for k, v := range wantLabels {
		if got := cfg.Config.Labels[k]; got != v {
			t.Errorf("label %s = %q, want %q", k, got, v)
		}
	}
	if !cfg.Created.Time.Equal(opts.Created) {
		t.Errorf("Created = %v, want %v", cfg.Created.Time, opts.Created)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 on the empty base", len(layers))
	}
	files := readLayer(t, layers[0])
	for p, f := range files {
		if !f.hdr.ModTime.Equal(opts.Created) {
			t.Errorf("%s: mtime %v, want %v", p, f.hdr.ModTime, opts.Created)
		}
	}

	bin, ok := files[entrypoint]
	if !ok {
		t.Fatalf("no %s in the layer; files: %v", entrypoint, keys(files))
	}
	if bin.hdr.Typeflag != tar.TypeReg || bin.hdr.FileInfo().Mode().Perm()&0o111 != 0o111 {
		t.Errorf("%s: type %c mode %v, want an executable regular file", entrypoint, bin.hdr.Typeflag, bin.hdr.FileInfo().Mode())
	}
	want, err := os.ReadFile(staticBinary)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bin.contents, want) {
		t.Errorf("%s differs from the binary given", entrypoint)
	}
	// Static: an ELF executable without PT_INTERP runs on scratch.
	ef, err := elf.NewFile(bytes.NewReader(bin.contents))
	if err != nil {
		t.Fatalf("%s is not ELF: %v", entrypoint, err)
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s has PT_INTERP: dynamically linked, cannot run on scratch", entrypoint)
		}
	}
	// And it runs here, from the bytes in the layer.
	extracted := filepath.Join(t.TempDir(), "fleetset-test")
	if err := os.WriteFile(extracted, bin.contents, bin.hdr.FileInfo().Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(extracted).Output(); err != nil || strings.TrimSpace(string(out)) != helloOutput {
		t.Errorf("running the extracted binary: %q, %v; want %q", out, err, helloOutput)
	}

	if f := files["/etc/passwd"]; !strings.Contains(string(f.contents), "\nnonroot:x:"+uid+":"+gid+":") {
		t.Errorf("/etc/passwd has no nonroot user %s:%s:\n%s", uid, gid, f.contents)
	}
	if f := files["/etc/group"]; !strings.Contains(string(f.contents), "\nnonroot:x:"+gid+":") {
		t.Errorf("/etc/group has no nonroot group %s:\n%s", gid, f.contents)
	}
	if f, ok := files["/tmp"]; !ok || !f.hdr.FileInfo().IsDir() || f.hdr.FileInfo().Mode()&(fs.ModeSticky|fs.ModePerm) != fs.ModeSticky|0o777 {
		t.Errorf("/tmp: %v, want a directory with mode 1777", f.hdr.FileInfo().Mode())
	}
	if f, ok := files["/home/nonroot"]; !ok || !f.hdr.FileInfo().IsDir() || strconv.Itoa(f.hdr.Uid) != uid {
		t.Errorf("/home/nonroot: %v owned by %d, want a directory owned by %s", f.hdr.FileInfo().Mode(), f.hdr.Uid, uid)
	}
}

func keys(m map[string]layerFile) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestReproducible: the same binary and options give the same archive, byte
// for byte, and the same image digest; another version gives another one.
func TestReproducible(t *testing.T) {
	opts := testOptions()
	a, err := os.ReadFile(writeArchive(t, opts, "fleetset-test:dev"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(writeArchive(t, opts, "fleetset-test:dev"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same binary and options differ")
	}
	digest := func(o Options) v1.Hash {
		img, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1, d2 := digest(opts), digest(opts)
	if d1 != d2 {
		t.Errorf("digests %s and %s of the same image differ", d1, d2)
	}
	other := opts
	other.Version = "v9.9.9"
	if d3 := digest(other); d3 == d1 {
		t.Errorf("another version label gave the same digest %s", d3)
	}
}

// TestRefuses: Build refuses what cannot run on scratch or misses a label.
func TestRefuses(t *testing.T) {
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "amd64"
	}
	cases := map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"no version":       {func(o *Options) { o.Version = "" }, "no version"},
		"missing binary":   {func(o *Options) { o.Binary = filepath.Join(t.TempDir(), "nothing") }, "no such file"},
		"script":           {func(o *Options) { o.Binary = text }, "not an ELF file"},
		"other arch":       {func(o *Options) { o.Arch = otherArch }, "is not " + otherArch},
		"unsupported arch": {func(o *Options) { o.Arch = "mips" }, "unsupported architecture"},
		"relative dir":     {func(o *Options) { o.Dir = "bin" }, "not absolute"},
		"name with slash":  {func(o *Options) { o.Name = "a/b" }, "not a file name"},
		"onto /etc/passwd": {func(o *Options) { o.Dir, o.Name = "/etc", "passwd" }, "collides"},
		"under a file":     {func(o *Options) { o.Dir = "/etc/group" }, "is a file of the image"},
	}
	// A dynamically linked executable, if the host has one.
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		if f, err := elf.Open(p); err == nil {
			dynamic := false
			for _, prog := range f.Progs {
				dynamic = dynamic || prog.Type == elf.PT_INTERP
			}
			arch := f.Machine
			f.Close()
			if dynamic && arch == elfMachines[runtime.GOARCH] {
				cases["dynamic "+p] = struct {
					mutate func(*Options)
					want   string
				}{func(o *Options) { o.Binary = p }, "PT_INTERP"}
				break
			}
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			opts := testOptions()
			c.mutate(&opts)
			_, err := Build(opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Build: %v, want an error with %q", err, c.want)
			}
		})
	}
	for _, tag := range []string{"fleetset-test", "Fleetset-Test:dev", "fleetset-test:"} {
		if err := Write(filepath.Join(t.TempDir(), "x.tar"), tag, nil); err == nil {
			t.Errorf("Write accepted the tag %q", tag)
		}
	}
}

// TestNoEntrypoint: -dir / -no-entrypoint give the layout of Open Cluster
// Management's images: the binary at /NAME, no Entrypoint, the binary as
// Cmd, so that a Deployment's args ["/NAME", "agent"] run it; and a binary in
// a directory the layer already has (/tmp) does not duplicate that directory.
func TestNoEntrypoint(t *testing.T) {
	opts := testOptions()
	opts.Name, opts.Dir, opts.NoEntrypoint = "registration", "/", true
	img, err := tarball.ImageFromPath(writeArchive(t, opts, "quay.io/open-cluster-management/registration:v1.2.0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 0 {
		t.Errorf("Entrypoint = %q, want none", cfg.Config.Entrypoint)
	}
	if got := cfg.Config.Cmd; len(got) != 1 || got[0] != "/registration" {
		t.Errorf("Cmd = %q, want [/registration]", got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", cfg.Config.User)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := readLayer(t, layers[0])
	if f, ok := files["/registration"]; !ok || f.hdr.FileInfo().Mode().Perm() != 0o755 {
		t.Errorf("no executable /registration in the layer; files: %v", keys(files))
	}
	if _, ok := files["/usr/local/bin/registration"]; ok {
		t.Error("/usr/local/bin/registration in the layer, want only /registration")
	}

	opts.Dir = "/tmp"
	img, err = Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	layers, err = img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]int{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[hdr.Name]++
		if hdr.Name == "tmp/" && hdr.FileInfo().Mode()&fs.ModeSticky == 0 {
			t.Errorf("tmp/: mode %v, want the sticky world-writable /tmp", hdr.FileInfo().Mode())
		}
	}
	if seen["tmp/"] != 1 || seen["tmp/registration"] != 1 {
		t.Errorf("entries %v, want tmp/ and tmp/registration once each", seen)
	}
}

// TestRun drives the command line: build with flags, then -inspect.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "hub.tar")
	var stdout bytes.Buffer
	args := []string{"-binary", staticBinary, "-name", "fleetset-hub", "-tag", "fleetset-hub:dev",
		"-version", "v0.0.0-dev", "-revision", "abc", "-source-date-epoch", "1700000000", "-o", out}
	if err := run(args, &stdout); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if !strings.Contains(stdout.String(), "fleetset-hub:dev, image ID sha256:") {
		t.Errorf("build output %q", stdout.String())
	}
	stdout.Reset()
	if err := run([]string{"-inspect", out}, &stdout); err != nil {
		t.Fatalf("-inspect: %v", err)
	}
	for _, want := range []string{
		"tags:     [fleetset-hub:dev]",
		`"org.opencontainers.image.version": "v0.0.0-dev"`,
		`"User": "65532:65532"`,
		"-rwxr-xr-x      0:0 ",
		"2023-11-14T22:13:20Z /usr/local/bin/fleetset-hub\n",
		"dtrwxrwxrwx     0:0 ",
		"drwx------  65532:65532",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-inspect output lacks %q:\n%s", want, stdout.String())
		}
	}
	ocm := filepath.Join(t.TempDir(), "registration.tar")
	args = []string{"-binary", staticBinary, "-name", "registration", "-dir", "/", "-no-entrypoint",
		"-tag", "quay.io/open-cluster-management/registration:v1.2.0", "-version", "v1.2.0", "-o", ocm}
	if err := run(args, io.Discard); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	stdout.Reset()
	if err := run([]string{"-inspect", ocm}, &stdout); err != nil {
		t.Fatalf("-inspect: %v", err)
	}
	for _, want := range []string{`"Cmd": [`, `"/registration"`, "Z /registration\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-inspect output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), `"Entrypoint"`) {
		t.Errorf("-inspect output has an Entrypoint:\n%s", stdout.String())
	}
	for _, bad := range [][]string{
		{"-binary", staticBinary, "-version", "v1", "-o", out},
		{"-binary", staticBinary, "-version", "v1", "-tag", "a:b", "-o", out, "-source-date-epoch", "yesterday"},
		{"-inspect"},
		{"-tag", "a:b", "-o", out, "extra"},
	} {
		if err := run(bad, io.Discard); err == nil {
			t.Errorf("run %q: no error", bad)
		}
	}
}

// TestFilesAndLinks: -file and -link add regular files (mode 0755, owned by
// root, under new parent directories) and symbolic links next to the binary,
// as the etcd image needs (etcdctl, busybox, /bin/sh -> busybox, scripts);
// a file onto another entry or under a file is refused.
func TestFilesAndLinks(t *testing.T) {
	script := filepath.Join(t.TempDir(), "start.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.Files = []File{{Path: "/usr/local/bin/start.sh", Source: script}, {Path: "/bin/busybox", Source: staticBinary}}
	opts.Links = []Link{{Path: "/bin/sh", Target: "busybox"}, {Path: "/usr/bin/env", Target: "/bin/busybox"}}
	img, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	files := readLayer(t, layers[0])
	for p, want := range map[string]struct {
		typ  byte
		mode int64
		link string
	}{
		"/usr/local/bin/start.sh": {tar.TypeReg, 0o755, ""},
		"/bin/busybox":            {tar.TypeReg, 0o755, ""},
		"/bin":                    {tar.TypeDir, 0o755, ""},
		"/usr/bin":                {tar.TypeDir, 0o755, ""},
		"/bin/sh":                 {tar.TypeSymlink, 0o777, "busybox"},
		"/usr/bin/env":            {tar.TypeSymlink, 0o777, "/bin/busybox"},
	} {
		f, ok := files[p]
		if !ok {
			t.Errorf("%s: missing", p)
			continue
		}
		if f.hdr.Typeflag != want.typ || f.hdr.Mode != want.mode || f.hdr.Linkname != want.link || f.hdr.Uid != 0 {
			t.Errorf("%s: type %c mode %o link %q uid %d, want type %c mode %o link %q uid 0", p,
				f.hdr.Typeflag, f.hdr.Mode, f.hdr.Linkname, f.hdr.Uid, want.typ, want.mode, want.link)
		}
	}
	if got := string(files["/usr/local/bin/start.sh"].contents); got != "#!/bin/sh\necho hi\n" {
		t.Errorf("start.sh: %q", got)
	}
	for name, mutate := range map[string]func(*Options){
		"file onto the binary": func(o *Options) {
			o.Files = append(o.Files, File{Path: "/usr/local/bin/" + filepath.Base(o.Binary), Source: script})
		},
		"link onto a file":  func(o *Options) { o.Links = append(o.Links, Link{Path: "/bin/busybox", Target: "x"}) },
		"file under a file": func(o *Options) { o.Files = append(o.Files, File{Path: "/bin/busybox/x", Source: script}) },
		"relative path":     func(o *Options) { o.Files = append(o.Files, File{Path: "bin/x", Source: script}) },
	} {
		o := opts
		o.Files, o.Links = slices.Clone(opts.Files), slices.Clone(opts.Links)
		mutate(&o)
		if _, err := Build(o); err == nil {
			t.Errorf("%s: Build accepted it", name)
		}
	}
}
