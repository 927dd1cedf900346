#!/usr/bin/env bash
# ocm-images.sh builds the Open Cluster Management images the kind fleet runs,
# without Docker and without a registry: the OCM binaries from the Go module
# open-cluster-management.io/ocm pinned in e2e/tools/go.mod (static,
# -trimpath), each put on the empty base by this project's bin/ocimage, as
#
#   bin/ocm-images/registration-operator.tar  quay.io/open-cluster-management/registration-operator:<v>
#   bin/ocm-images/registration.tar           quay.io/open-cluster-management/registration:<v>
#   bin/ocm-images/work.tar                   quay.io/open-cluster-management/work:<v>
#   bin/ocm-images/placement.tar              quay.io/open-cluster-management/placement:<v>
#   bin/ocm-images/addon-manager.tar          quay.io/open-cluster-management/addon-manager:<v>
#
# (<v>: the module's version, e.g. v1.2.0). The names are OCM's own; the
# ClusterManager and Klusterlet that ocm.sh creates name them in their
# *ImagePullSpec fields. OCM's operators render Deployments whose args start
# with the binary's path ("/registration", "agent", ...), as OCM's own images
# (binary at /, no entrypoint) expect, so the binary goes to /<name> and is the
# image's Cmd, not its Entrypoint (ocimage -dir / -no-entrypoint). Unlike
# OCM's images (UBI, user 10001) these run as 65532:65532 on scratch; the
# Deployments only ask for a non-root user.
#
# Cached: a stamp records what the archives were built from (module version,
# Go version, architecture, ocimage's sources (not its binary, which a build
# stamps with the commit), this script); when it matches, nothing is
# built. Prints the archive paths.
set -euo pipefail
LOG_NAME=ocm-images
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
T0=$SECONDS

ARCH=${IMAGE_ARCH:-$(go env GOARCH)}
OUT=$OCM_IMAGES_DIR
# binary -> image name
declare -A IMAGE=([registration-operator]=registration-operator [registration]=registration [work]=work
  [placement]=placement [addon]=addon-manager)
BINARIES="registration-operator registration work placement addon"

# ocimage, from its own module (the Makefile's rule; Go's cache makes it cheap).
make -s -C "$REPO_ROOT" "$LOCALBIN/ocimage" >/dev/null
OCIMAGE=$LOCALBIN/ocimage

# The pinned module: version, time (every file's time in the images) and dir.
read -r OCM_VERSION OCM_TIME < <(cd "$REPO_ROOT/e2e/tools" && env "${OCM_GOENV[@]}" go list -m -f '{{.Version}} {{if .Time}}{{.Time.Unix}}{{else}}0{{end}}' open-cluster-management.io/ocm)
[[ $OCM_VERSION == v* ]] || die "open-cluster-management.io/ocm not found in e2e/tools/go.mod"

stamp="ocm=$OCM_VERSION time=$OCM_TIME go=$(go env GOVERSION) arch=$ARCH registry=$OCM_REGISTRY
ocimage=$(cat "$REPO_ROOT"/e2e/tools/ocimage/{*.go,go.mod,go.sum} | sha256sum | cut -d' ' -f1) script=$(sha256sum <"$0" | cut -d' ' -f1)"
fresh=1
[[ -f $OUT/stamp && $(<"$OUT/stamp") == "$stamp" ]] || fresh=0
for b in $BINARIES; do [[ -s $OUT/${IMAGE[$b]}.tar ]] || fresh=0; done
if ((fresh)); then
  log "OCM $OCM_VERSION images up to date in ${OUT#"$REPO_ROOT"/} ($((SECONDS - T0))s)"
else
  mkdir -p "$OUT/bin"
  rm -f "$OUT/stamp"
  log "building OCM $OCM_VERSION binaries ($BINARIES) for linux/$ARCH"
  pkgs=()
  for b in $BINARIES; do pkgs+=("open-cluster-management.io/ocm/cmd/$b"); done
  (cd "$REPO_ROOT/e2e/tools" && env "${OCM_GOENV[@]}" CGO_ENABLED=0 GOOS=linux GOARCH="$ARCH" \
    go build -trimpath -o "$OUT/bin/" "${pkgs[@]}")
  log "binaries built ($((SECONDS - T0))s); making images"
  for b in $BINARIES; do
    "$OCIMAGE" -binary "$OUT/bin/$b" -name "$b" -dir / -no-entrypoint -arch "$ARCH" \
      -tag "$OCM_REGISTRY/${IMAGE[$b]}:$OCM_VERSION" -title "${IMAGE[$b]}" -version "$OCM_VERSION" \
      -source github.com/open-cluster-management-io/ocm -source-date-epoch "$OCM_TIME" \
      -o "$OUT/${IMAGE[$b]}.tar" >/dev/null
  done
  echo "$stamp" >"$OUT/stamp"
  log "OCM $OCM_VERSION images in ${OUT#"$REPO_ROOT"/} ($((SECONDS - T0))s)"
fi
for b in $BINARIES; do echo "$OUT/${IMAGE[$b]}.tar"; done
