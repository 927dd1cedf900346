package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ImageLoader is a provider whose fleet runs real containers from images
// that must be put on its nodes beforehand (kind: no registry, nothing is
// ever pulled).
type ImageLoader interface {
	// LoadImage makes image available on every node of each cluster, under
	// its own name and under every alias: from archive (a docker-archive
	// tarball naming image, as ocimage writes) when archive is not "",
	// else from the nodes' own copy of image (one of the node image's,
	// such as registry.k8s.io/pause:3.10.1).
	LoadImage(ctx context.Context, clusters []string, archive, image string, aliases ...string) error
}

// LoadImage puts image (from archive, or the nodes' own copy when archive
// is "") on every node of clusters under its name and every alias, for a
// test that names it so (a registry rewrite, an image of its own). Call it
// before creating what runs the image. Providers without an image store of
// their own (local: kwok runs no container; none: real clusters pull from
// their registries) need nothing and return nil.
//
//	framework.LoadImage(ctx, p, []string{"east", "west"}, "bin/images/e2e-echo.tar", "fleetset-e2e-echo:dev")
//	framework.LoadImage(ctx, p, []string{"east"}, "", "registry.k8s.io/pause:3.10.1", "mirror.example/k8s/pause:3.10.1")
func LoadImage(ctx context.Context, p Provider, clusters []string, archive, image string, aliases ...string) error {
	l, ok := p.(ImageLoader)
	if !ok {
		return nil
	}
	return l.LoadImage(ctx, clusters, archive, image, aliases...)
}

// EchoImage is the e2e echo server and client (e2e/kind/echo, `make
// kind-echo-image`): `-listen :PORT` serves, `-connect HOST:PORT,...
// -message X` connects (HOST may be a DNS name) and prints one JSON line per
// target.
const EchoImage = "fleetset-e2e-echo:dev"

// EchoArchive is the archive of EchoImage: FLEETSET_E2E_ECHO_ARCHIVE, by
// default <repo>/bin/images/e2e-echo.tar.
func EchoArchive() string {
	return EnvString("FLEETSET_E2E_ECHO_ARCHIVE", filepath.Join(RepoRoot(), "bin", "images", "e2e-echo.tar"))
}

// LoadImage: kind load image-archive into each cluster's nodes, then
// ctr images tag for each alias on each node.
func (k *Kind) LoadImage(ctx context.Context, clusters []string, archive, image string, aliases ...string) error {
	kind := EnvString("KIND", filepath.Join(EnvString("LOCALBIN", filepath.Join(RepoRoot(), "bin")), "kind"))
	for _, c := range clusters {
		name := "fleetset-" + c
		if archive != "" {
			if _, err := os.Stat(archive); err != nil {
				return fmt.Errorf("image archive of %s: %w (make kind-echo-image builds the echo image's)", image, err)
			}
			if _, err := run(ctx, kind, "load", "image-archive", "--name", name, archive); err != nil {
				return fmt.Errorf("%s: loading %s: %w", c, archive, err)
			}
		}
		out, err := run(ctx, kind, "get", "nodes", "--name", name)
		if err != nil {
			return fmt.Errorf("%s: nodes: %w", c, err)
		}
		nodes := strings.Fields(out)
		if len(nodes) == 0 {
			return fmt.Errorf("%s: kind cluster %s has no nodes", c, name)
		}
		src := NormalizedImageRef(image)
		for _, n := range nodes {
			if out, _ := run(ctx, "docker", "exec", n, "ctr", "-n", "k8s.io", "images", "ls", "-q", "name=="+src); strings.TrimSpace(out) == "" {
				return fmt.Errorf("%s: no image %s on the node", n, src)
			}
			for _, a := range aliases {
				if _, err := run(ctx, "docker", "exec", n, "ctr", "-n", "k8s.io", "images", "tag", "--force", src, NormalizedImageRef(a)); err != nil {
					return fmt.Errorf("%s: tagging %s as %s: %w", n, src, a, err)
				}
			}
		}
		Log(ctx, "%s: %s on %d nodes%s", c, image, len(nodes), map[bool]string{true: ", also as " + strings.Join(aliases, ", ")}[len(aliases) > 0])
	}
	return nil
}

// NormalizedImageRef is the reference containerd stores ref under
// (fleetset-e2e-echo:dev -> docker.io/library/fleetset-e2e-echo:dev).
func NormalizedImageRef(ref string) string {
	first, _, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return "docker.io/" + ref
	}
	return ref
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
