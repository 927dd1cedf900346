# shellcheck shell=bash
# Shared helpers of the kind fleet scripts (ocm-images.sh, ocm.sh,
# fleetset.sh). Sourced, not run.
#
# Layout: kubeconfigs in .fleet/kind/<cluster>/kubeconfig (cluster: hub,
# east, west, north; kind clusters fleetset-<cluster>), scratch files of the scripts
# in .fleet/kind/work/, image archives in bin/ocm-images/ and bin/images/.
# Nothing is pulled from a registry: every image is built locally, loaded
# into the nodes with `kind load image-archive`, and run with
# imagePullPolicy IfNotPresent (present, so never pulled) or Never.

REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LOCALBIN=${LOCALBIN:-$REPO_ROOT/bin}
KIND=${KIND:-$LOCALBIN/kind}
DIR=${KIND_FLEET_DIR:-$REPO_ROOT/.fleet/kind}
MEMBERS=${KIND_MEMBERS:-"east west north"}
if [[ -z ${KUBECTL:-} ]]; then
  if command -v kubectl >/dev/null; then KUBECTL=kubectl; else KUBECTL=$LOCALBIN/kubectl; fi
fi
# OCM agents and tools are built from the nested module e2e/tools.
OCM_GOENV=(GOFLAGS=-mod=mod GONOSUMDB=sigs.k8s.io/about-api)
# Where the OCM images come from (ocm-images.sh) and what they are tagged.
OCM_IMAGES_DIR=${OCM_IMAGES_DIR:-$LOCALBIN/ocm-images}
OCM_REGISTRY=${OCM_REGISTRY:-quay.io/open-cluster-management}
# The hub's apiserver as the members' pods reach it: the hub's control-plane
# container on the docker network "kind".
HUB_INTERNAL_URL=${HUB_INTERNAL_URL:-https://fleetset-hub-control-plane:6443}
# Short leases, as on the local fleet (e2e/fleet/lib.sh), so that e2e sees a
# lost member (ManagedCluster lease) and an expired resync Lease quickly.
CLUSTER_LEASE_SECONDS=${FLEET_CLUSTER_LEASE_SECONDS:-5}
RESYNC_LEASE_SECONDS=${FLEET_RESYNC_LEASE_SECONDS:-15}
STEP_TIMEOUT=${KIND_STEP_TIMEOUT:-300}

log() { printf '%s %s: %s\n' "$(date +%H:%M:%S)" "${LOG_NAME:-kind}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
kubeconfig() { echo "$DIR/$1/kubeconfig"; }
kc() { local c=$1; shift; "$KUBECTL" --kubeconfig "$(kubeconfig "$c")" "$@"; }

# wait_for SECONDS WHAT CMD...: run CMD every second until it succeeds;
# false (and a log line) after SECONDS.
wait_for() {
  local t=$1 what=$2; shift 2
  local deadline=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${t}s waiting for: $what"
      return 1
    fi
    sleep 1
  done
}

# need_clusters CLUSTER...: each has a kubeconfig and answers /readyz.
need_clusters() {
  local c
  for c in "$@"; do
    [[ -s $(kubeconfig "$c") ]] || die "no kubeconfig $(kubeconfig "$c"): create the kind clusters first (e2e/kind/kind-up.sh)"
    kc "$c" get --raw /readyz >/dev/null 2>&1 || die "cluster $c ($(kubeconfig "$c")) is not ready"
  done
}

# archive_image ARCHIVE: "TAG ID" of the one image in a docker-archive
# tarball (ocimage's output): its first RepoTag and its config digest, the
# ID containerd gives the image once imported.
archive_image() {
  local m tag id
  m=$(tar -xOf "$1" manifest.json) || return 1
  tag=$(grep -o '"RepoTags":\["[^"]*"' <<<"$m" | sed 's/.*\["//;s/"$//')
  id=$(grep -o '"Config":"[^"]*"' <<<"$m" | sed 's/.*:"//;s/"$//')
  id=sha256:${id#sha256:}
  [[ -n $tag && $id != sha256: ]] || return 1
  echo "$tag $id"
}

# normalized_ref TAG: the reference containerd stores TAG under
# (fleetset-hub:dev -> docker.io/library/fleetset-hub:dev).
normalized_ref() {
  local r=$1 first=${1%%/*}
  if [[ $r != */* ]]; then
    r=docker.io/library/$r
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
    r=docker.io/$r
  fi
  echo "$r"
}

# node_image_digest NODE TAG: the digest of the manifest the tag TAG names in
# the node's containerd ("" when absent). Read with ctr: the node image has
# no crictl.
node_image_digest() {
  docker exec "$1" ctr -n k8s.io images ls "name==$(normalized_ref "$2")" 2>/dev/null | awk 'NR == 2 && $3 ~ /^sha256:/ {print $3}'
}

# node_image_id NODE TAG: the ID (config digest) of the image TAG in the
# node's containerd ("" when absent): the tag's manifest names its config.
node_image_id() {
  local d
  d=$(node_image_digest "$1" "$2")
  [[ -n $d ]] || return 0
  docker exec "$1" ctr -n k8s.io content get "$d" 2>/dev/null | tr -d ' \n' |
    grep -o '"config":{[^}]*}' | grep -o 'sha256:[0-9a-f]*' | head -1 || true
}

# stale_pods CLUSTER NAMESPACE SELECTOR TAG: the pods of SELECTOR whose first
# container runs another image than the one TAG names now on the pod's node
# (the kubelet reports a loaded image's ID as <repo>@<manifest digest>).
stale_pods() {
  local c=$1 ns=$2 sel=$3 tag=$4 pod node id
  declare -A want=()
  while read -r pod node id; do
    [[ -n $pod && -n $node && -n $id ]] || continue
    [[ -n ${want[$node]:-} ]] || want[$node]=$(node_image_digest "$node" "$tag")
    [[ ${id##*@} == "${want[$node]}" ]] || echo "$pod"
  done < <(kc "$c" get pods -n "$ns" -l "$sel" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.containerStatuses[0].imageID}{"\n"}{end}')
}

# cluster_nodes CLUSTER [control-plane]: the kind node containers of
# fleetset-CLUSTER (only the control-plane one with a second argument).
cluster_nodes() {
  local n
  for n in $("$KIND" get nodes --name "fleetset-$1"); do
    [[ -z ${2:-} || $n == *-control-plane ]] && echo "$n"
  done
}

# load_archive CLUSTER ARCHIVE [control-plane]: load the image of ARCHIVE into
# the nodes of fleetset-CLUSTER (or its control-plane node) that lack it or
# hold another image under its tag. Prints the nodes it loaded into.
load_archive() {
  local c=$1 a=$2 scope=${3:-} tag id n missing=()
  read -r tag id < <(archive_image "$a") || die "$a: not an image archive"
  for n in $(cluster_nodes "$c" "$scope"); do
    [[ $(node_image_id "$n" "$tag") == "$id" ]] || missing+=("$n")
  done
  ((${#missing[@]})) || return 0
  log "loading $tag (${id:7:12}) into ${missing[*]}"
  "$KIND" load image-archive --name "fleetset-$c" --nodes "$(IFS=,; echo "${missing[*]}")" "$a" >/dev/null ||
    die "kind load image-archive $a into ${missing[*]} failed"
  for n in "${missing[@]}"; do
    [[ $(node_image_id "$n" "$tag") == "$id" ]] || die "$tag is not $id on $n after loading $a"
    prune_node_images "$n" "$tag"
    echo "$n"
  done
}

# prune_node_images NODE [KEEP]: remove from NODE's containerd the
# references that `kind load` leaves behind (import-<date>@sha256:..., one
# per load) and the images of earlier upgrade tests (:e2e-upgrade-*), so
# that repeated loads do not fill the disk; images in use stay (the CRI
# keeps them), and so does KEEP, the image just loaded (no pod uses it yet:
# pruning it made the upgrade test's pod fail with ErrImageNeverPull).
prune_node_images() {
  docker exec "$1" sh -c 'ctr -n k8s.io images ls -q | grep -E "^import-|:e2e-upgrade-" | grep -vxF -e "$1" -e "docker.io/library/$1" | xargs -r ctr -n k8s.io images rm >/dev/null 2>&1' prune "${2:-}" || true
}

# crd_established CLUSTER CRD-NAME
crd_established() {
  [[ $(kc "$1" get crd "$2" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}') == True ]]
}

# condition CLUSTER RESOURCE TYPE [-n NS]: the status of condition TYPE.
condition() {
  local c=$1 r=$2 t=$3; shift 3
  kc "$c" get "$r" "$@" -o jsonpath="{.status.conditions[?(@.type==\"$t\")].status}"
}

# ssa CLUSTER FILE|DIR|-: server-side apply (OCM's CRDs are too big for the
# client-side last-applied annotation) as field manager fleetset-kind;
# stdin for "-". Retried for a minute: an admission webhook that has just
# started (OCM's, on the hub) may refuse connections for a moment.
ssa() {
  local c=$1 f=$2 in="" i err
  if [[ $f == - ]]; then
    in=$(mktemp)
    cat >"$in"
    f=$in
  fi
  for i in $(seq 20); do
    if err=$(kc "$c" apply --server-side --force-conflicts --field-manager fleetset-kind -f "$f" 2>&1 >/dev/null); then
      [[ -n $in ]] && rm -f "$in"
      return 0
    fi
    sleep 3
  done
  [[ -n $in ]] && rm -f "$in"
  log "applying ${2/#-/stdin} on $c failed: $err"
  return 1
}
