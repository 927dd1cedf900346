#!/usr/bin/env bash
# kind-up.sh creates the kind fleet (`make kind-up`): the clusters
# fleetset-hub, fleetset-east, fleetset-west and fleetset-north from
# kind-configs/ (each member: a control plane that also runs pods and two
# workers, one node per zone; each cluster its own pod and service
# subnets), routes the members'
# pod subnets between their nodes (peers.sh), checks the pod network across
# nodes, then installs Open Cluster Management with its own
# operator (ocm.sh) and fleetset from its manifests and images
# (fleetset.sh). Kubeconfigs go to $KIND_FLEET_DIR/<cluster>/kubeconfig
# (.fleet/kind). Idempotent: what exists is kept.
#
# Every image (OCM's, fleetset's, etcd's, the test clients') is built
# before the first node starts, so no build competes with running clusters
# (the Makefile's kind-up builds fleetset's; this script OCM's). At the end
# it prints the fleet's CPU use at rest (idle.sh, KIND_IDLE_SECONDS; 0
# skips it).
#
# The node image is $KIND_NODE_IMAGE, by default the offline image of
# `make kind-node-image` when it exists, else kind's default image.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO_ROOT/e2e/kind
LOCALBIN=${LOCALBIN:-$REPO_ROOT/bin}
KIND=${KIND:-$LOCALBIN/kind}
DIR=${KIND_FLEET_DIR:-$REPO_ROOT/.fleet/kind}
K8S_VERSION=$(cd "$HERE/k8s" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)
NODE_IMAGE=${KIND_NODE_IMAGE:-fleetset-kind-node:$K8S_VERSION}
CLUSTERS="hub east west north"
log() { printf '%s kind-fleet: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
kc() { local c=$1; shift; kubectl --kubeconfig "$DIR/$c/kubeconfig" "$@"; }
export KIND KIND_FLEET_DIR=$DIR LOCALBIN

docker info >/dev/null 2>&1 || { echo "kind-up: docker is not running (on the development VM: make kind-host)" >&2; exit 1; }
T0=$SECONDS

image_args=()
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  image_args=(--image "$NODE_IMAGE")
elif [[ -n ${KIND_NODE_IMAGE:-} ]]; then
  echo "kind-up: node image $NODE_IMAGE not found (make kind-node-image)" >&2; exit 1
fi

# Images first: OCM's binaries take minutes to build.
"$HERE/ocm-images.sh" >/dev/null
log "images built at $((SECONDS - T0))s"

# Clusters, one after the other (a 2-core host has no CPU for more).
existing=$("$KIND" get clusters 2>/dev/null || true)
for c in $CLUSTERS; do
  mkdir -p "$DIR/$c"
  config=$REPO_ROOT/kind-configs/$([[ $c == hub ]] && echo hub || echo "member-$c").yaml
  if grep -qx "fleetset-$c" <<<"$existing"; then
    "$KIND" get kubeconfig --name "fleetset-$c" >"$DIR/$c/kubeconfig"
  else
    t=$SECONDS
    "$KIND" create cluster --config "$config" "${image_args[@]}" --kubeconfig "$DIR/$c/kubeconfig" --wait 3m
    log "cluster fleetset-$c created in $((SECONDS - t))s"
  fi
done
for c in $CLUSTERS; do
  kc "$c" wait --for=condition=Ready nodes --all --timeout 5m >/dev/null
  # A member's control-plane node is a zone of its own and runs pods.
  if [[ $c != hub ]]; then
    kc "$c" taint nodes -l node-role.kubernetes.io/control-plane node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null 2>&1 || true
  fi
  # One CoreDNS on the control-plane node: a killed or frozen worker never
  # takes the member's DNS with it, and a bed needs no second replica.
  kc "$c" -n kube-system patch deployment coredns --type merge \
    -p '{"spec":{"replicas":1,"template":{"spec":{"nodeSelector":{"node-role.kubernetes.io/control-plane":""}}}}}' >/dev/null
  kc "$c" -n kube-system rollout status deployment/coredns --timeout 3m >/dev/null
done
log "clusters ready at $((SECONDS - T0))s"

# Routes between the members' pod subnets (pod IP to pod IP across
# clusters; the e2e test TestPodsReachAcrossMembers checks it).
"$HERE/peers.sh"

# Pod network across nodes: pod to pod and pod to Service (a member's four
# nodes), and a member pod to the hub's apiserver on the kind network.
"$HERE/netcheck.sh" east

# Dynamic volumes that can grow: fleetset-local-provisioner per member and
# its StorageClass fleetset-local as the default instead of kind's standard.
"$HERE/storage.sh"

# Open Cluster Management (its operator), then fleetset.
"$HERE/ocm.sh"
"$HERE/fleetset.sh"
log "kind fleet up in $((SECONDS - T0))s; kubeconfigs in ${DIR#"$REPO_ROOT"/}/<cluster>/kubeconfig"
if [[ ${KIND_IDLE_SECONDS:-60} != 0 ]]; then
  sleep 30 # the last rollouts settle
  "$HERE/idle.sh" "at rest after kind-up"
fi
