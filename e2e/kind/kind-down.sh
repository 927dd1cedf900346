#!/usr/bin/env bash
# kind-down.sh removes the kind fleet made by kind-up.sh (`make kind-down`):
# the four clusters, their kubeconfigs and (when no other cluster uses it)
# kind's docker network. The node and base images stay
# (make kind-node-image rebuilds them only when their inputs change); with
# KIND_HOST_STOP=1 it also stops the dockerd that `make kind-host` started.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIND=${KIND:-${LOCALBIN:-$REPO_ROOT/bin}/kind}
DIR=${KIND_FLEET_DIR:-$REPO_ROOT/.fleet/kind}
# The members' volume provisioners run on this host (storage.sh).
KIND_FLEET_DIR=$DIR "$REPO_ROOT/e2e/kind/storage.sh" stop || true
if docker info >/dev/null 2>&1; then
  existing=$("$KIND" get clusters 2>/dev/null || true)
  for c in hub east west north; do
    if grep -qx "fleetset-$c" <<<"$existing"; then "$KIND" delete cluster --name "fleetset-$c"; fi
  done
  docker rm -f fleetset-kind-node-build >/dev/null 2>&1 || true
  # kind leaves its docker network behind; remove it once no container is
  # attached to it (another kind cluster on the host keeps it).
  if docker network inspect kind >/dev/null 2>&1 &&
    [[ -z $(docker network inspect kind --format '{{range .Containers}}{{.Name}} {{end}}') ]]; then
    docker network rm kind >/dev/null
  fi
fi
rm -rf "$DIR"
if [[ ${KIND_HOST_STOP:-} == 1 ]]; then "$REPO_ROOT/e2e/kind/host.sh" stop; fi
