// Command ocimage builds a container image of one static binary on the empty
// (scratch) base and writes it as a docker-archive tarball, without a Docker
// daemon; `make images` runs it for fleetset-hub and fleetset-scheduler.
//
//	ocimage -binary bin/images/fleetset-hub -tag fleetset-hub:dev -version v1.2.3 \
//	    -revision $(git rev-parse HEAD) -o bin/images/fleetset-hub.tar
//	ocimage -inspect bin/images/fleetset-hub.tar
//
// The image runs the binary from /usr/local/bin (-dir) as user 65532:65532.
// -file PATH=SOURCE adds a further file (mode 0755) and -link PATH=TARGET a
// symbolic link, each as often as needed: the etcd image (make
// kind-etcd-image) adds etcdctl, a static busybox with its applets as links
// (/bin/sh, /usr/bin/env, ...) and its shell scripts.
// With -no-entrypoint the binary is the image's Cmd rather than its
// Entrypoint, for Deployments that give the binary's path as their first
// argument (Open Cluster Management's: e2e/kind/ocm-images.sh builds them
// with -dir / -no-entrypoint). Every time in it is -source-date-epoch
// (default $SOURCE_DATE_EPOCH, else 0), so the same binary and flags give the
// same archive, byte for byte. The archive loads with `kind load
// image-archive`, `ctr images import` and `docker load`.
//
// It is its own module (e2e/tools/ocimage/go.mod) so that
// go-containerregistry's dependencies stay out of fleetset's and the OCM
// tools' module graphs.
package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ocimage:", err)
		os.Exit(1)
	}
}

// run parses args, then builds and writes one archive or, with -inspect,
// prints the archives named by the positional arguments to stdout. It
// returns an error for bad flags or a failed build, write or read.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ocimage", flag.ContinueOnError)
	var (
		opts    Options
		tag     string
		out     string
		epoch   string
		inspect bool
	)
	fs.StringVar(&opts.Binary, "binary", "", "static ELF executable to put in the image (required)")
	fs.StringVar(&opts.Name, "name", "", "file name of the binary in -dir (default: the base name of -binary)")
	fs.StringVar(&opts.Dir, "dir", BinDir, "absolute directory of the binary in the image")
	fs.BoolVar(&opts.NoEntrypoint, "no-entrypoint", false, "no Entrypoint: the binary is the image's Cmd, which a container's args replace (for Deployments whose args start with the binary's path, as Open Cluster Management's do)")
	fs.StringVar(&opts.Arch, "arch", runtime.GOARCH, "GOARCH of the binary and the image; the image's OS is "+OS)
	fs.StringVar(&opts.Version, "version", "", "value of the "+LabelVersion+" label (required)")
	fs.StringVar(&opts.Revision, "revision", "", "value of the "+LabelRevision+" label (the git commit)")
	fs.StringVar(&opts.Source, "source", "", "value of the "+LabelSource+" label")
	fs.StringVar(&opts.Title, "title", "", "value of the "+LabelTitle+" label (default: -name)")
	fs.StringVar(&tag, "tag", "", "repository:tag the archive names the image by, e.g. fleetset-hub:dev (required)")
	fs.StringVar(&out, "o", "", "archive to write (required)")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time of the image and its files (default $SOURCE_DATE_EPOCH, else 0)")
	fs.Func("file", "PATH=SOURCE: put the file SOURCE at the absolute PATH of the image, mode 0755 (repeatable)", func(v string) error {
		p, src, ok := strings.Cut(v, "=")
		if !ok || p == "" || src == "" {
			return fmt.Errorf("%q: want PATH=SOURCE", v)
		}
		opts.Files = append(opts.Files, File{Path: p, Source: src})
		return nil
	})
	fs.Func("link", "PATH=TARGET: a symbolic link at the absolute PATH of the image pointing to TARGET (repeatable)", func(v string) error {
		p, target, ok := strings.Cut(v, "=")
		if !ok || p == "" || target == "" {
			return fmt.Errorf("%q: want PATH=TARGET", v)
		}
		opts.Links = append(opts.Links, Link{Path: p, Target: target})
		return nil
	})
	fs.BoolVar(&inspect, "inspect", false, "print the tags, digests, config and files of the archives given as arguments instead of building")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if inspect {
		if fs.NArg() == 0 {
			return errors.New("-inspect: no archive given")
		}
		for _, p := range fs.Args() {
			if err := Inspect(p, stdout); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if tag == "" || out == "" {
		return errors.New("-tag and -o are required")
	}
	var secs int64
	if epoch != "" {
		var err error
		if secs, err = strconv.ParseInt(epoch, 10, 64); err != nil {
			return fmt.Errorf("-source-date-epoch: %w", err)
		}
	}
	opts.Created = time.Unix(secs, 0)
	img, err := Build(opts)
	if err != nil {
		return err
	}
	if err := Write(out, tag, img); err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, image ID %s, %.1f MiB\n", out, tag, id, float64(fi.Size())/(1<<20))
	return nil
}

// Inspect reads the docker-archive tarball at p and writes to w its tags,
// image ID (config digest), manifest digest, layers, config file (JSON) and
// the files of every layer, one per line with mode, owner and size. It
// returns an error if p is not a single-image archive.
func Inspect(p string, w io.Writer) error {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(p) })
	if err != nil {
		return err
	}
	if len(m) != 1 {
		return fmt.Errorf("%d images in the archive, want 1", len(m))
	}
	img, err := tarball.ImageFromPath(p, nil)
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "archive:  %s\ntags:     %v\nimage ID: %s\nmanifest: %s\n", p, m[0].RepoTags, id, digest)
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "layer %d:  %s (%d bytes compressed)\n", i, d, size)
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "config:\n%s\nfiles:\n", js)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return err
			}
			fmt.Fprintf(w, "  %-11v %5d:%-5d %10d %s /%s\n", hdr.FileInfo().Mode(), hdr.Uid, hdr.Gid, hdr.Size,
				hdr.ModTime.UTC().Format(time.RFC3339), hdr.Name)
		}
		if err := rc.Close(); err != nil {
			return err
		}
	}
	return nil
}
