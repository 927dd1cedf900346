#!/usr/bin/env bash
# agent.sh stop|start|status CLUSTER [PROC]: stop or restart one process of
# the local fleet (default: the member's OCM registration agent). The e2e
# suite calls it through FLEET_E2E_STOP_AGENT / FLEETSET_E2E_START_AGENT to
# cut a member off from the hub and to bring it back.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

[[ $# -ge 2 ]] || die "usage: $0 stop|start|status CLUSTER [PROC]"
action=$1 c=$2 p=${3:-registration-agent}
[[ -f $(cdir "$c")/run/$p.sh ]] || die "no process $c/$p in $FLEET_DIR"
case $action in
  stop) stop_proc "$c" "$p" ;;
  start) relaunch "$c" "$p" ;;
  status) if pid_alive "$c" "$p"; then echo running; else echo stopped; exit 1; fi ;;
  *) die "unknown action $action" ;;
esac
