#!/usr/bin/env bash
# kind-down.sh deletes the kind fleet made by kind-up.sh.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIND=${KIND:-${LOCALBIN:-$REPO_ROOT/bin}/kind}
for c in hub east west; do "$KIND" delete cluster --name "fleetset-$c"; done
rm -rf "$REPO_ROOT/.fleet/kind"
