#!/usr/bin/env bash
# fleet-down.sh stops every process fleet-up.sh started, by the PIDs recorded
# under .fleet/<cluster>/run/, members first, each cluster in reverse start
# order. Idempotent. Logs stay in .fleet/<cluster>/logs/; FLEET_CLEAN=1 also
# removes the fleet state (etcd data, certificates, logs).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

[[ -d $FLEET_DIR ]] || { log "no fleet in $FLEET_DIR"; exit 0; }
rm -f "$FLEET_DIR/up"
stop_cluster() {
  local c=$1 p pids=()
  # Everything but etcd at once, then etcd, so no apiserver loses its store
  # while it shuts down.
  for p in $(procs_of "$c" | grep -vx etcd); do
    stop_proc "$c" "$p" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  stop_proc "$c" etcd
}
# Members and hub in parallel.
pids=()
for c in $FLEET_MEMBERS hub; do
  [[ -d $(cdir "$c") ]] || continue
  stop_cluster "$c" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
if [[ ${FLEET_CLEAN:-0} == 1 ]]; then
  # Not the kind fleet's kubeconfigs (.fleet/kind, make kind-up).
  find "$FLEET_DIR" -mindepth 1 -maxdepth 1 ! -name kind -exec rm -rf {} +
  log "fleet down; state removed"
else
  log "fleet down; logs in ${FLEET_DIR#"$REPO_ROOT"/}/<cluster>/logs/"
fi
