# shellcheck shell=bash
# Shared helpers of the local fleet scripts (fleet-up.sh, fleet-down.sh,
# agent.sh, demo.sh). Sourced, not run.
#
# Layout of the fleet state (FLEET_DIR, default <repo>/.fleet, git-ignored):
#   .fleet/<cluster>/kubeconfig      admin kubeconfig of hub, east, west
#   .fleet/<cluster>/pki/            CA, serving and client certificates
#   .fleet/<cluster>/etcd/           etcd data
#   .fleet/<cluster>/run/<proc>.sh   launcher of one process (re-runnable)
#   .fleet/<cluster>/run/<proc>.pid  its PID
#   .fleet/<cluster>/logs/<proc>.log its log
#   .fleet/<member>/member-hub/      the fleetset add-on's hub credentials
#                                    (kubeconfig, tls.crt, tls.key)
#   .fleet/ports                     the port plan of this fleet
# Every process listens on 127.0.0.1 only.

REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
FLEET_DIR=${FLEET_DIR:-$REPO_ROOT/.fleet}
LOCALBIN=${LOCALBIN:-$REPO_ROOT/bin}
if [[ -z ${KUBECTL:-} ]]; then
  if command -v kubectl >/dev/null; then KUBECTL=kubectl; else KUBECTL=$LOCALBIN/kubectl; fi
fi
# FLEET_PORT_BASE moves every port of the fleet; cluster i uses the 20 ports
# from FLEET_PORT_BASE + 20*i.
FLEET_PORT_BASE=${FLEET_PORT_BASE:-31000}
# The members: FLEET_MEMBERS, else those the running fleet was started with
# (.fleet/members), else east and west. `make e2e` adds north.
FLEET_MEMBERS=${FLEET_MEMBERS:-$(cat "$FLEET_DIR/members" 2>/dev/null || echo "east west")}
FLEET_CLUSTERS="hub $FLEET_MEMBERS"
# The ManagedCluster lease (OCM) and the resync lease (fleetset-hub), short
# so that e2e observes an unavailable member quickly.
FLEET_CLUSTER_LEASE_SECONDS=${FLEET_CLUSTER_LEASE_SECONDS:-5}
FLEET_RESYNC_LEASE_SECONDS=${FLEET_RESYNC_LEASE_SECONDS:-15}
# The member component's heartbeat timeout (fleetset-scheduler
# --member-heartbeat-timeout): short for the same reason.
FLEET_HEARTBEAT_SECONDS=${FLEET_HEARTBEAT_SECONDS:-15}
# OCM agents run in this namespace of each member.
OCM_AGENT_NAMESPACE=open-cluster-management-agent

log() { printf '%s fleet: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# cluster_index NAME: 0 for the hub, 1.. for the members in FLEET_MEMBERS order.
cluster_index() {
  local i=0 c
  for c in $FLEET_CLUSTERS; do
    [[ $c == "$1" ]] && { echo "$i"; return; }
    i=$((i + 1))
  done
  die "unknown cluster $1"
}

# Port slots inside a cluster's block of 20.
SLOT_APISERVER=0 SLOT_ETCD=1 SLOT_ETCD_PEER=2 SLOT_KCM=3 SLOT_REGISTRATION=4
SLOT_WORK=5 SLOT_SCHEDULER=6 SLOT_KWOK=7 SLOT_HUB_METRICS=8 SLOT_HUB_HEALTH=9
SLOT_ADDON=10 SLOT_HUB_LINK=11 SLOT_PEER=12 SLOT_PLACEMENT=13 SLOT_PROVISIONER=14
SLOT_DNS=15 SLOT_DNS_READY=16

# port CLUSTER SLOT
# pod_cidr CLUSTER: the range kwok hands the cluster's pod IPs from, its own
# per member (10.100+i.0.0/16), so an address says where a pod runs.
pod_cidr() { echo "10.$((100 + $(cluster_index "$1"))).0.1/16"; }
port() { echo $((FLEET_PORT_BASE + 20 * $(cluster_index "$1") + $2)); }

cdir() { echo "$FLEET_DIR/$1"; }
kubeconfig() { echo "$FLEET_DIR/$1/kubeconfig"; }
kc() { local c=$1; shift; "$KUBECTL" --kubeconfig "$(kubeconfig "$c")" "$@"; }

# pid_alive CLUSTER PROC: the recorded PID runs, and runs the recorded binary
# (guards against PID reuse).
pid_alive() {
  local pidf run pid bin
  pidf="$(cdir "$1")/run/$2.pid"
  run="$(cdir "$1")/run/$2.sh"
  [[ -f $pidf ]] || return 1
  pid=$(<"$pidf")
  [[ -n $pid && -d /proc/$pid ]] || return 1
  bin=$(sed -n 's/^exec \([^ ]*\).*/\1/p' "$run" 2>/dev/null)
  [[ -z $bin ]] && return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "${bin//\'/}"
}

# start_proc CLUSTER PROC [VAR=VALUE...] CMD ARGS...: write a launcher
# .fleet/C/run/PROC.sh, start it detached with its own log, record its PID.
start_proc() {
  local c=$1 p=$2; shift 2
  local d; d=$(cdir "$c")
  mkdir -p "$d/run" "$d/logs"
  {
    echo '#!/usr/bin/env bash'
    while [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
      printf 'export %q\n' "$1"
      shift
    done
    printf 'exec'; printf ' %q' "$@"; echo
  } >"$d/run/$p.sh"
  chmod +x "$d/run/$p.sh"
  grep -qx "$p" "$d/run/order" 2>/dev/null || echo "$p" >>"$d/run/order"
  relaunch "$c" "$p"
}

# relaunch CLUSTER PROC: (re)start a process from its launcher.
relaunch() {
  local c=$1 p=$2 d
  d=$(cdir "$c")
  if pid_alive "$c" "$p"; then log "$c/$p already running (pid $(<"$d/run/$p.pid"))"; return; fi
  echo "=== $(date -Is) start" >>"$d/logs/$p.log"
  setsid "$d/run/$p.sh" >>"$d/logs/$p.log" 2>&1 </dev/null &
  echo $! >"$d/run/$p.pid"
  log "$c/$p started (pid $!, log ${d#"$REPO_ROOT"/}/logs/$p.log)"
}

# stop_proc CLUSTER PROC: SIGTERM, wait up to 10 s, then SIGKILL. Idempotent.
stop_proc() {
  local c=$1 p=$2 pidf pid i
  pidf="$(cdir "$c")/run/$p.pid"
  [[ -f $pidf ]] || return 0
  pid=$(<"$pidf")
  if pid_alive "$c" "$p"; then
    kill -TERM "$pid" 2>/dev/null || true
    # A process paused by `agent.sh pause` (SIGSTOP) handles SIGTERM only
    # once continued.
    kill -CONT "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [[ -d /proc/$pid ]] || break
      sleep 0.1
    done
    if [[ -d /proc/$pid ]]; then
      log "$c/$p did not stop in 10s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "$c/$p stopped (pid $pid)"
  fi
  rm -f "$pidf"
}

# wait_for TIMEOUT_SECONDS WHAT CMD...: retry CMD every 0.5 s until it
# succeeds; fail with WHAT after the timeout.
wait_for() {
  local timeout=$1 what=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# procs_of CLUSTER: the processes the fleet runs in a cluster, in start order.
procs_of() {
  local f; f=$(cdir "$1")/run/order
  if [[ -f $f ]]; then cat "$f"; fi
}
