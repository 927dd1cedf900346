#!/usr/bin/env bash
# agent.sh stop|start CLUSTER: the e2e hook on the kind fleet. Stops (or
# restarts) a member's OCM registration agent: the klusterlet operator is
# scaled to 0 first so it does not bring the agent back.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
action=$1 c=$2
kc() { kubectl --kubeconfig "$REPO_ROOT/.fleet/kind/$c/kubeconfig" "$@"; }
case $action in
  stop) replicas=0 ;;
  start) replicas=1 ;;
  *) echo "usage: $0 stop|start CLUSTER" >&2; exit 1 ;;
esac
[[ $action == stop ]] && kc scale -n open-cluster-management deployment/klusterlet --replicas 0
# Default mode runs klusterlet-registration-agent; Singleton mode klusterlet-agent.
for d in klusterlet-registration-agent klusterlet-agent; do
  if kc get -n open-cluster-management-agent deployment "$d" >/dev/null 2>&1; then
    kc scale -n open-cluster-management-agent deployment "$d" --replicas "$replicas"
  fi
done
[[ $action == start ]] && kc scale -n open-cluster-management deployment/klusterlet --replicas 1
exit 0
