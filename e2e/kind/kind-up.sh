#!/usr/bin/env bash
# kind-up.sh creates the kind fleet — fleetset-hub, fleetset-east,
# fleetset-west from kind-configs/ — installs Open Cluster Management with
# clusteradm (hub: cluster manager; members: klusterlet joined and
# accepted), builds the fleetset images, loads them with `kind load` and
# deploys fleetset-hub on the hub and fleetset-scheduler on each member.
# Kubeconfigs go to .fleet/kind/<cluster>/kubeconfig. Needs docker, kind and
# clusteradm (make kind-up installs the last two into bin/).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOCALBIN=${LOCALBIN:-$REPO_ROOT/bin}
KIND=${KIND:-$LOCALBIN/kind}
CLUSTERADM=${CLUSTERADM:-$LOCALBIN/clusteradm}
DIR=${KIND_FLEET_DIR:-$REPO_ROOT/.fleet/kind}
MEMBERS="east west"
CLUSTER_LEASE_SECONDS=${FLEET_CLUSTER_LEASE_SECONDS:-5}
RESYNC_LEASE=${FLEET_RESYNC_LEASE:-15s}
log() { printf '%s kind-fleet: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
kc() { local c=$1; shift; kubectl --kubeconfig "$DIR/$c/kubeconfig" "$@"; }

command -v docker >/dev/null && docker info >/dev/null 2>&1 || { echo "kind-up: docker is not running" >&2; exit 1; }
T0=$SECONDS

# Clusters.
declare -A config=([hub]=hub.yaml [east]=member-east.yaml [west]=member-west.yaml)
for c in hub $MEMBERS; do
  mkdir -p "$DIR/$c"
  if "$KIND" get clusters 2>/dev/null | grep -qx "fleetset-$c"; then
    "$KIND" get kubeconfig --name "fleetset-$c" >"$DIR/$c/kubeconfig"
  else
    "$KIND" create cluster --config "$REPO_ROOT/kind-configs/${config[$c]}" --kubeconfig "$DIR/$c/kubeconfig" --wait 120s
  fi
done

# OCM: cluster manager on the hub, klusterlets joined through the hub's
# address inside the kind network, accepted as clusteradm does.
if ! kc hub get crd managedclusters.cluster.open-cluster-management.io >/dev/null 2>&1; then
  "$CLUSTERADM" init --wait --kubeconfig "$DIR/hub/kubeconfig"
fi
token=$("$CLUSTERADM" get token --kubeconfig "$DIR/hub/kubeconfig" | grep -o -- '--hub-token [^ ]*' | head -1 | cut -d' ' -f2)
for c in $MEMBERS; do
  if ! kc hub get managedcluster "$c" >/dev/null 2>&1; then
    "$CLUSTERADM" join --hub-token "$token" --hub-apiserver https://fleetset-hub-control-plane:6443 \
      --cluster-name "$c" --force-internal-endpoint-lookup --wait --kubeconfig "$DIR/$c/kubeconfig"
  fi
done
"$CLUSTERADM" accept --clusters "$(echo $MEMBERS | tr ' ' ,)" --wait --kubeconfig "$DIR/hub/kubeconfig"
for c in $MEMBERS; do
  kc hub patch managedcluster "$c" --type merge -p "{\"spec\":{\"leaseDurationSeconds\":$CLUSTER_LEASE_SECONDS}}"
done

# Images: static binaries built on the host, copied into distroless.
mkdir -p "$DIR/images"
for b in scheduler hub; do
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$DIR/images/fleetset-$b" "./cmd/$b")
  docker build -q -f "$REPO_ROOT/e2e/kind/Dockerfile" --build-arg "BIN=fleetset-$b" -t "fleetset-$b:e2e" "$DIR/images"
done
"$KIND" load docker-image fleetset-hub:e2e --name fleetset-hub
for c in $MEMBERS; do "$KIND" load docker-image fleetset-scheduler:e2e --name "fleetset-$c"; done

# fleetset: CRDs everywhere, fleetset-scheduler in members, fleetset-hub on the hub.
for c in hub $MEMBERS; do kc "$c" apply --server-side -f "$REPO_ROOT/manifests/crds/"; done
for c in $MEMBERS; do
  kc "$c" apply -f "$REPO_ROOT/e2e/kind/scheduler.yaml"
  kc "$c" create configmap fleetset-scheduler-config -n fleetset-system \
    --from-file=config.yaml="$REPO_ROOT/manifests/scheduler/config.yaml" --dry-run=client -o yaml | kc "$c" apply -f -
  kc "$c" rollout restart -n fleetset-system deployment/fleetset-scheduler
done
# fleetset-hub from manifests/hub, with the image just loaded and a short
# resync lease so that e2e observes expiry quickly.
kc hub apply -f "$REPO_ROOT/manifests/hub/namespace.yaml"
kc hub apply -f "$REPO_ROOT/manifests/hub/"
kc hub set image -n fleetset-system deployment/fleetset-hub hub=fleetset-hub:e2e
kc hub patch -n fleetset-system deployment/fleetset-hub --type json -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/imagePullPolicy\",\"value\":\"Never\"},{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\",\"value\":\"--lease-duration=$RESYNC_LEASE\"}]"
kc hub rollout status -n fleetset-system deployment/fleetset-hub --timeout 180s
for c in $MEMBERS; do kc "$c" rollout status -n fleetset-system deployment/fleetset-scheduler --timeout 180s; done
log "kind fleet up in $((SECONDS - T0))s; kubeconfigs in ${DIR#"$REPO_ROOT"/}/<cluster>/kubeconfig"
