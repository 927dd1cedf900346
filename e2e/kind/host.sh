#!/usr/bin/env bash
# host.sh prepares a host like the project's 2-core development VM to run
# kind: run as root, idempotent, for each boot (`make kind-host`). A normal
# Docker host (Docker Desktop, a CI runner with Docker) skips it.
#
# What it does, and why (each step answers an error seen on such a VM):
#   1. Debian packages: docker.io (dockerd 20.10; the machine's Docker 28
#      client talks API 1.41 to it), debootstrap (the node image's root
#      filesystem), jq (the runc wrapper).
#   2. cgroup v1 controllers the VM does not mount (hugetlb, perf_event,
#      net_cls,net_prio): without them kubelet fails with `cgroup
#      ["kubelet"] has some missing paths`.
#   3. runc-nosysres as dockerd's default runtime: the VM's capability
#      bounding set lacks CAP_SYS_RESOURCE, so `docker run --privileged`
#      (every kind node) fails with `unable to apply caps`.
#   4. dockerd's HTTP(S) proxy is a closed loopback port, so any pull
#      fails locally at once: images are only ever built or loaded here.
#   5. inotify limits for many kubelets.
# dockerd's data root is the default /var/lib/docker; its log is
# $KIND_HOST_DIR/dockerd.log. `make kind-down` removes the clusters;
# `e2e/kind/host.sh stop` stops the dockerd this script started.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${KIND_HOST_DIR:-$REPO_ROOT/.fleet/kind-host}
RUNTIME=/usr/local/sbin/runc-nosysres
log() { printf '%s kind-host: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[[ $(id -u) == 0 ]] || { echo "host.sh: run as root" >&2; exit 1; }
mkdir -p "$DIR"

if [[ ${1:-} == stop ]]; then
  if [[ -f $DIR/dockerd.pid ]] && kill -0 "$(cat "$DIR/dockerd.pid")" 2>/dev/null; then
    kill "$(cat "$DIR/dockerd.pid")"
    for _ in $(seq 30); do kill -0 "$(cat "$DIR/dockerd.pid")" 2>/dev/null || break; sleep 1; done
    log "dockerd stopped"
  fi
  rm -f "$DIR/dockerd.pid"
  exit 0
fi

# 1. Packages.
need=()
for p in docker.io debootstrap jq; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. cgroup v1 controllers (cgroup v2 hosts have them all).
if [[ ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
  for c in hugetlb perf_event net_cls,net_prio; do
    if ! mountpoint -q "/sys/fs/cgroup/$c"; then
      mkdir -p "/sys/fs/cgroup/$c"
      mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"
    fi
  done
  for c in net_cls net_prio; do [[ -e /sys/fs/cgroup/$c ]] || ln -s net_cls,net_prio "/sys/fs/cgroup/$c"; done
fi

# 3. The runc wrapper, only where the bounding set lacks CAP_SYS_RESOURCE
#    (bit 24 of CapBnd).
runtime_flags=()
if (( ! ((0x$(awk '/^CapBnd/ {print $2}' /proc/self/status) >> 24) & 1) )); then
  install -m 0755 "$REPO_ROOT/e2e/kind/runc-nosysres" "$RUNTIME"
  runtime_flags=(--add-runtime "nosysres=$RUNTIME" --default-runtime nosysres)
fi

# 4. dockerd, unless one answers already.
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (log: $DIR/dockerd.log)"
  HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY= \
    setsid dockerd --iptables=true "${runtime_flags[@]}" >"$DIR/dockerd.log" 2>&1 </dev/null &
  echo $! >"$DIR/dockerd.pid"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 "$DIR/dockerd.log" >&2; echo "host.sh: dockerd did not start" >&2; exit 1; }
fi

# 5. inotify: three idle single-node clusters used 81 of the default 128
#    instances; the kind fleet has nine nodes.
sysctl -q -w fs.inotify.max_user_instances=1024 fs.inotify.max_user_watches=524288

log "ready: $(docker version --format 'dockerd {{.Server.Version}}, default runtime ')$(docker info --format '{{.DefaultRuntime}}')"
