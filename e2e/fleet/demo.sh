#!/usr/bin/env bash
# demo.sh deploys the sample FleetSet (manifests/samples/fleetset.yaml) to the
# running local fleet, waits until it is Ready and prints its placement with
# the kubectl plugin (bin/kubectl-fleetset status): the subsets as the hub
# sees them, then where each instance runs (cluster, zone, node, pod,
# ordinal, ready), sorted by ordinal. `make demo` runs fleet-up and builds the
# plugin first.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

SAMPLE=${SAMPLE:-$REPO_ROOT/manifests/samples/fleetset.yaml}
TIMEOUT=${DEMO_TIMEOUT:-180}
[[ -f $SAMPLE ]] || die "no sample FleetSet at $SAMPLE"
[[ -f $FLEET_DIR/up ]] || die "the local fleet is not up: make fleet-up"
plugin=$LOCALBIN/kubectl-fleetset
[[ -x $plugin ]] || die "no $plugin: make kubectl-fleetset"

T0=$SECONDS
name=$(kc hub create --dry-run=client -f "$SAMPLE" -o jsonpath='{.metadata.name}')
ns=$(kc hub create --dry-run=client -f "$SAMPLE" -o jsonpath='{.metadata.namespace}')
ns=${ns:-default}
kc hub get namespace "$ns" >/dev/null 2>&1 || kc hub create namespace "$ns" >/dev/null
# The sample's namespace may reach every cluster (OCM's set "global").
BINDING=${BINDING:-$REPO_ROOT/manifests/samples/clustersetbinding.yaml}
kc hub apply -n "$ns" -f "$BINDING" >/dev/null
kc hub apply -f "$SAMPLE"
want=$(kc hub get fleetsets.fleetset.io -n "$ns" "$name" -o jsonpath='{.spec.replicas}')

ready_instances() {
  local n=0 c
  for c in $FLEET_MEMBERS; do
    n=$((n + $(kc "$c" get pods -n "$ns" -l "fleetset.io/set=$name" \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True || true)))
  done
  echo "$n"
}
fleetset_ready() {
  [[ $(ready_instances) == "$want" ]] &&
    [[ $(kc hub get fleetsets.fleetset.io -n "$ns" "$name" -o jsonpath='{.status.readyReplicas}') == "$want" ]]
}
log "waiting for $want ready instances of FleetSet $ns/$name"
if ! wait_for "$TIMEOUT" "FleetSet $ns/$name Ready" fleetset_ready; then
  kc hub get fleetsets.fleetset.io -n "$ns" "$name" -o yaml >&2 || true
  die "FleetSet not ready after ${TIMEOUT}s ($(ready_instances)/$want instances ready); logs in ${FLEET_DIR#"$REPO_ROOT"/}/<cluster>/logs/"
fi
log "ready after $((SECONDS - T0))s"

# Relative paths when the fleet lives in the repository, as a user would type them.
rel() { echo "${1#"$REPO_ROOT"/}"; }
args=(status "$name" -n "$ns" --kubeconfig "$(rel "$(kubeconfig hub)")")
for c in $FLEET_MEMBERS; do args+=(--member "$c=$(rel "$(kubeconfig "$c")")"); done
echo
echo "\$ $(rel "$plugin") ${args[*]}"
(cd "$REPO_ROOT" && "$plugin" "${args[@]}")
echo
kc hub get fleetsets -n "$ns"
