#!/usr/bin/env bash
# agent.sh cut|heal CLUSTER: break or mend the member's link to the hub (its
# hub-link proxy, through which its OCM agents and its fleetset member
# component reach the hub): a real network cut, every connection closed and
# new ones refused, while every process of the member keeps running.
# agent.sh blackhole CLUSTER (or cut with FLEET_CUT_MODE=blackhole, which the
# e2e suite's cuts inherit) drops the link silently instead, as an iptables
# DROP: connections stay open and hang, new ones are never answered.
#
# agent.sh stop|start|status CLUSTER [PROC]: stop or restart one process of
# the local fleet (default: the member's OCM registration agent).
#
# agent.sh kill CLUSTER PROC: SIGKILL the process (a crash: no graceful
# shutdown), wait until it is gone; `start` brings it back. agent.sh
# pause|resume CLUSTER PROC: SIGSTOP / SIGCONT it (a hung process that keeps
# its sockets open). The chaos run (e2e/chaos) injects faults with them.
#
# agent.sh restart CLUSTER PROC [ARG...]: stop PROC and start it again with
# ARG... appended to the command line fleet-up.sh gave it (flags parse last
# wins, so --flag=value overrides); a restart without ARG restores fleet-up's
# command line. Returns once the process is ready (fleetset-hub: /readyz,
# fleetset-scheduler: /healthz, others: running). With
# FLEET_REBUILD_VERSION=V, fleetset-hub and fleetset-scheduler are first
# rebuilt into bin/ from the current tree with -ldflags "-X main.version=V"
# (a newer build at the same path); a failed build leaves the process as it
# was.
#
# The e2e suite and the chaos run call it through e2e/framework's local
# provider (FLEETSET_E2E_PROVIDER=local).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

[[ $# -ge 2 ]] || die "usage: $0 cut|blackhole|heal CLUSTER | stop|start|status|kill|pause|resume CLUSTER [PROC] | restart CLUSTER PROC [ARG...]"
action=$1 c=$2 p=${3:-registration-agent}
case $action in cut | blackhole | heal) p=hub-link ;; esac
[[ $action == cut && ${FLEET_CUT_MODE:-cut} == blackhole ]] && action=blackhole
[[ -f $(cdir "$c")/run/$p.sh ]] || die "no process $c/$p in $FLEET_DIR"

# rebuild PROC VERSION: rebuild bin/PROC (fleetset binaries only).
rebuild() {
  local p=$1 v=$2 pkg
  case $p in
    fleetset-hub) pkg=./cmd/hub ;;
    fleetset-scheduler) pkg=./cmd/scheduler ;;
    *) die "FLEET_REBUILD_VERSION: $p is not built from this repository" ;;
  esac
  (cd "$REPO_ROOT" && ${GO:-go} build -ldflags "-X main.version=$v" -o "$LOCALBIN/.$p.new" "$pkg") ||
    die "rebuilding $p failed; $c/$p left running"
  mv -f "$LOCALBIN/.$p.new" "$LOCALBIN/$p"
  log "rebuilt $LOCALBIN/$p (version $v, sha256 $(sha256sum "$LOCALBIN/$p" | cut -c1-12))"
}

# proc_ready CLUSTER PROC: the process runs and serves its health endpoint.
proc_ready() {
  pid_alive "$1" "$2" || return 1
  case $2 in
    fleetset-hub) curl -sf "http://127.0.0.1:$(port "$1" $SLOT_HUB_HEALTH)/readyz" ;;
    fleetset-scheduler) curl -sfk "https://127.0.0.1:$(port "$1" $SLOT_SCHEDULER)/healthz" ;;
  esac
}

# restart CLUSTER PROC [ARG...]: see above. fleet-up's launcher is kept as
# run/PROC.sh.orig while extra arguments are in effect.
restart() {
  local c=$1 p=$2; shift 2
  local run orig line extra
  run=$(cdir "$c")/run/$p.sh
  orig=$run.orig
  [[ -n ${FLEET_REBUILD_VERSION:-} ]] && rebuild "$p" "$FLEET_REBUILD_VERSION"
  [[ -f $orig ]] || cp "$run" "$orig"
  if (($#)); then
    extra=$(printf ' %q' "$@")
    while IFS= read -r line; do
      [[ $line == exec\ * ]] && line+=$extra
      printf '%s\n' "$line"
    done <"$orig" >"$run.tmp"
    chmod +x "$run.tmp"
    mv -f "$run.tmp" "$run"
  else
    mv -f "$orig" "$run"
  fi
  stop_proc "$c" "$p"
  relaunch "$c" "$p"
  local deadline=$((SECONDS + 120))
  local pid
  pid=$(<"$(cdir "$c")/run/$p.pid")
  until proc_ready "$c" "$p" >/dev/null 2>&1; do
    # The process itself, not pid_alive: until the run script has exec'd
    # the binary, its command line is still the shell's.
    if [[ ! -d /proc/$pid ]] || ((SECONDS >= deadline)); then
      tail -n 20 "$(cdir "$c")/logs/$p.log" >&2
      die "$c/$p not ready after restart; see ${FLEET_DIR#"$REPO_ROOT"/}/$c/logs/$p.log"
    fi
    sleep 0.5
  done
  log "$c/$p ready (pid $(<"$(cdir "$c")/run/$p.pid"), extra arguments:${extra:- none})"
}

# link CLUSTER cut|blackhole|heal: signal the member's hub-link and wait for
# its state.
link() {
  local c=$1 want=$2 sig state
  pid_alive "$c" hub-link || die "$c/hub-link is not running"
  case $want in
    cut) sig=USR1 ;;
    blackhole) sig=HUP want=blackholed ;;
    *) sig=USR2 want=healed ;;
  esac
  state=$(cdir "$c")/run/hub-link.state
  kill -"$sig" "$(<"$(cdir "$c")/run/hub-link.pid")"
  wait_for 10 "$c/hub-link $want" grep -qx "$want" "$state" || die "$c/hub-link did not report $want"
  log "$c: link to the hub $want"
}

# signal_proc CLUSTER PROC SIGNAL: send SIGNAL to the recorded process.
signal_proc() {
  local c=$1 p=$2 sig=$3 pid
  pid_alive "$c" "$p" || die "$c/$p is not running"
  pid=$(<"$(cdir "$c")/run/$p.pid")
  kill -"$sig" "$pid"
  log "$c/$p: SIG$sig (pid $pid)"
}

# kill_proc CLUSTER PROC: SIGKILL, wait until gone, forget the PID.
kill_proc() {
  local c=$1 p=$2 pid i
  signal_proc "$c" "$p" KILL
  pid=$(<"$(cdir "$c")/run/$p.pid")
  for ((i = 0; i < 100; i++)); do
    [[ -d /proc/$pid ]] || break
    sleep 0.1
  done
  rm -f "$(cdir "$c")/run/$p.pid"
}

case $action in
  cut | blackhole | heal) link "$c" "$action" ;;
  kill) kill_proc "$c" "$p" ;;
  pause) signal_proc "$c" "$p" STOP ;;
  resume) signal_proc "$c" "$p" CONT ;;
  stop) stop_proc "$c" "$p" ;;
  start) relaunch "$c" "$p" ;;
  status) if pid_alive "$c" "$p"; then echo running; else echo stopped; exit 1; fi ;;
  restart) [[ $# -ge 3 ]] || die "usage: $0 restart CLUSTER PROC [ARG...]"; shift 3; restart "$c" "$p" "$@" ;;
  *) die "unknown action $action" ;;
esac
