package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Image layout and identity. The base is the empty (scratch) image: the one
// layer holds the binary, /etc/passwd and /etc/group with the nonroot user,
// its home, and a world-writable /tmp. No CA certificates: in-cluster clients
// trust the ServiceAccount's CA.
const (
	// BinDir is the directory the binary is put in.
	BinDir = "/usr/local/bin"
	// NonrootUID is the uid and gid the image runs as (distroless' nonroot).
	NonrootUID = 65532
	// OS is the only operating system the images are built for.
	OS = "linux"

	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// OCI annotation keys used as image labels
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
)

// Options describe one image: which binary, under which name, and what the
// labels say. Binary and Version are required; the rest have defaults.
type Options struct {
	// Binary is the path of a statically linked ELF executable on disk.
	Binary string
	// Name is the file name of the binary in the image (default: the base
	// name of Binary); the entrypoint is Dir/Name.
	Name string
	// Dir is the absolute directory the binary is put in (default BinDir).
	// Images whose Deployments name the binary by path, as Open Cluster
	// Management's do (args: ["/registration", "agent", ...]), put it where
	// those paths point, e.g. "/".
	Dir string
	// NoEntrypoint leaves the image's Entrypoint empty and makes the binary
	// its Cmd instead: a container's args then replace it rather than follow
	// it, so args that start with the binary's path run it. Images run by
	// such Deployments need it; fleetset's own do not.
	NoEntrypoint bool
	// Arch is the GOARCH the binary is for (default: the host's). The
	// binary's ELF machine must match it.
	Arch string
	// Created is the time of the image, its history entry and every file in
	// the layer; a fixed time (e.g. SOURCE_DATE_EPOCH) makes the archive
	// reproducible.
	Created time.Time
	// Version, Revision, Source and Title are the OCI labels; Title defaults
	// to Name. Empty Revision and Source are left out.
	Version, Revision, Source, Title string
	// Files are further regular files of the image (tools, scripts), owned
	// by root. Unlike Binary they need not be ELF executables: an image
	// that runs shell scripts carries a static shell (busybox) here.
	Files []File
	// Links are symbolic links of the image, such as /bin/sh -> busybox.
	Links []Link
}

// File is one further regular file of an image.
type File struct {
	// Path is the absolute path of the file in the image.
	Path string
	// Source is the file on disk whose bytes it gets.
	Source string
	// Mode is its permission bits (default 0755).
	Mode int64
}

// Link is one symbolic link of an image.
type Link struct {
	// Path is the absolute path of the link in the image; Target is what
	// it points to (relative to the link's directory, or absolute).
	Path, Target string
}

// Build makes the image described by opts on the empty base. It takes the
// options and returns the image, or an error if the binary cannot be read,
// is not a static ELF executable for opts.Arch, or a required option is
// missing. The image's digest depends only on the options and the binary's
// bytes.
func Build(opts Options) (v1.Image, error) {
	if opts.Binary == "" {
		return nil, errors.New("no binary given")
	}
	if opts.Version == "" {
		return nil, errors.New("no version given")
	}
	if opts.Name == "" {
		opts.Name = filepath.Base(opts.Binary)
	}
	if opts.Title == "" {
		opts.Title = opts.Name
	}
	if opts.Dir == "" {
		opts.Dir = BinDir
	}
	if !path.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("directory %q is not absolute", opts.Dir)
	}
	if strings.Contains(opts.Name, "/") || opts.Name == "." || opts.Name == ".." {
		return nil, fmt.Errorf("name %q is not a file name", opts.Name)
	}
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, err
	}
	if err := CheckStatic(bytes.NewReader(bin), opts.Arch); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Binary, err)
	}
	created := opts.Created.UTC().Truncate(time.Second)
	entrypoint := path.Join(opts.Dir, opts.Name)
	extra := []entry{{name: entrypoint[1:], mode: 0o755, contents: bin}}
	for _, f := range opts.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("file path %q is not a clean absolute file path", f.Path)
		}
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		extra = append(extra, entry{name: f.Path[1:], mode: mode, contents: b})
	}
	for _, l := range opts.Links {
		if !path.IsAbs(l.Path) || path.Clean(l.Path) != l.Path || l.Path == "/" || l.Target == "" {
			return nil, fmt.Errorf("link %q -> %q: want a clean absolute path and a target", l.Path, l.Target)
		}
		extra = append(extra, entry{name: l.Path[1:], mode: 0o777, link: l.Target})
	}
	layerTar, err := rootfs(extra, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "ocimage: " + entrypoint + " on scratch",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = OS, opts.Arch
	cfg.Created = v1.Time{Time: created}
	cfg.Config = v1.Config{
		Entrypoint: []string{entrypoint},
		User:       fmt.Sprintf("%d:%d", NonrootUID, NonrootUID),
		WorkingDir: "/",
		Labels: map[string]string{
			LabelTitle:   opts.Title,
			LabelVersion: opts.Version,
		},
	}
	if opts.NoEntrypoint {
		cfg.Config.Entrypoint, cfg.Config.Cmd = nil, []string{entrypoint}
	}
	if opts.Revision != "" {
		cfg.Config.Labels[LabelRevision] = opts.Revision
	}
	if opts.Source != "" {
		cfg.Config.Labels[LabelSource] = opts.Source
	}
	return mutate.ConfigFile(img, cfg)
}

// entry is one file, directory or symbolic link of the layer; name is its
// path without the leading slash.
type entry struct {
	name     string
	mode     int64
	uid      int
	contents []byte // nil for a directory or a link
	link     string // target of a symbolic link
}

// rootfs returns the layer's uncompressed tar: the directories, /etc/passwd,
// /etc/group, then extra (the binary first, at the entrypoint) with their
// parent directories, every entry owned by root except the nonroot home,
// every time set to created. It returns an error if an extra entry collides
// with another or sits under a file.
func rootfs(extra []entry, created time.Time) ([]byte, error) {
	entrypoint := "/" + extra[0].name
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, contents: []byte(group)},
		{name: "etc/passwd", mode: 0o644, contents: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: NonrootUID},
		{name: "tmp/", mode: 0o1777},
	}
	have := map[string]bool{} // path → is a directory
	for _, e := range entries {
		have[strings.TrimSuffix(e.name, "/")] = strings.HasSuffix(e.name, "/")
	}
	for i, x := range extra {
		what := "file path /" + x.name
		if i == 0 {
			what = "binary path " + entrypoint
		}
		// The parent directories, outermost first, but for those the
		// layer has already (/etc, /tmp, /home).
		var dirs []string
		for d := path.Dir("/" + x.name); d != "/"; d = path.Dir(d) {
			dirs = append([]string{d[1:]}, dirs...)
		}
		for _, d := range dirs {
			isDir, ok := have[d]
			switch {
			case ok && !isDir:
				return nil, fmt.Errorf("%s: /%s is a file of the image", what, d)
			case !ok:
				entries = append(entries, entry{name: d + "/", mode: 0o755})
				have[d] = true
			}
		}
		if _, ok := have[x.name]; ok {
			return nil, fmt.Errorf("%s collides with the image's own files", what)
		}
		have[x.name] = false
		entries = append(entries, x)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		switch {
		case e.link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		case e.contents == nil:
			hdr.Typeflag = tar.TypeDir
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.contents))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// elfMachines maps the GOARCHes images are built for to their ELF machine.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// CheckStatic reads an executable and returns nil if it is an ELF executable
// for arch that runs without a dynamic loader (no PT_INTERP program header, so
// it runs on the empty base image), or an error saying what it is not.
func CheckStatic(r io.ReaderAt, arch string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF type %v is not an executable", f.Type)
	}
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("unsupported architecture %q", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("ELF machine %v is not %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (has PT_INTERP): build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// Write writes img as a docker-archive tarball (`docker save` format, with a
// manifest.json naming tag), which `docker load`, `ctr images import` and
// `kind load image-archive` accept, to the file at dst. It takes the
// destination path, the tag (e.g. "fleetset-hub:dev") and the image, and
// returns an error if the tag is invalid or writing fails; dst is replaced
// only by a complete archive.
func Write(dst, tag string, img v1.Image) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(tag, ":"+ref.TagStr()) {
		return fmt.Errorf("tag %q: want repository:tag", tag)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tarball.Write(ref, img, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
