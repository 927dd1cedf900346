#!/usr/bin/env bash
# peers.sh: routes between the member clusters of the kind fleet, so that a
# pod of one member reaches a pod of another by its pod IP (kind-up.sh runs
# it once the clusters exist; idempotent, rerun it after adding a node).
#
# Every cluster has its own pod subnet (kind-configs/*.yaml,
# networking.podSubnet) and every node its spec.podCIDR out of it; all
# nodes share Docker's network "kind". For each member it writes the
# ConfigMap kube-system/pod-network-peers:
#   routes:  "PODCIDR INTERNALIP" of every node of the other members;
#   subnets: the other members' pod subnets;
#   pod-network.sh: e2e/kind/node/pod-network.sh as in this tree;
# and points the pod network's DaemonSet (node/default-cni.yaml) at it:
# pod-network.sh adds the routes and leaves traffic to the peer subnets
# unmasqueraded, so the receiver sees the sender's own pod IP. The script
# runs from the ConfigMap so that a node image built before peers existed
# (its copy of the script ignores them) needs no rebuild. It then waits
# until every node of every member has every peer route.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO_ROOT/e2e/kind
LOG_NAME=peers
# shellcheck source=lib.sh
source "$HERE/lib.sh"
need_clusters $MEMBERS
T0=$SECONDS

declare -A subnet routes
for c in $MEMBERS; do
  subnet[$c]=$(kc "$c" -n kube-system get configmap kubeadm-config -o jsonpath='{.data.ClusterConfiguration}' |
    awk '$1 == "podSubnet:" {print $2; exit}')
  [[ -n ${subnet[$c]} ]] || die "$c: no podSubnet in kube-system/kubeadm-config"
  routes[$c]=$(kc "$c" get nodes -o jsonpath='{range .items[*]}{.spec.podCIDR}{" "}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  [[ $(wc -l <<<"${routes[$c]}") -ge 1 && ${routes[$c]} != *"  "* ]] || die "$c: nodes without podCIDR or InternalIP: ${routes[$c]}"
done
for c in $MEMBERS; do
  for d in $MEMBERS; do
    [[ $d != "$c" && ${subnet[$d]} == "${subnet[$c]}" ]] && die "members $c and $d share pod subnet ${subnet[$c]}: give each its own (kind-configs/)"
  done
done

# All nodes' pods replaced at once (host network, nothing waits on them).
patch='{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":"100%"}},"template":{"spec":{
  "volumes":[{"name":"peers","configMap":{"name":"pod-network-peers","optional":true,"defaultMode":493}}],
  "containers":[{"name":"pod-network","command":["/etc/pod-network/pod-network.sh"],
    "volumeMounts":[{"name":"peers","mountPath":"/etc/pod-network"}]}]}}}}'
for c in $MEMBERS; do
  r="" s=""
  for d in $MEMBERS; do
    [[ $d == "$c" ]] && continue
    r+="${routes[$d]}"$'\n'
    s+="${subnet[$d]}"$'\n'
  done
  kc "$c" -n kube-system create configmap pod-network-peers --from-literal=routes="$r" --from-literal=subnets="$s" \
    --from-file=pod-network.sh="$HERE/node/pod-network.sh" --dry-run=client -o yaml | ssa "$c" -
  kc "$c" -n kube-system patch daemonset pod-network --type strategic -p "$patch" >/dev/null
done
for c in $MEMBERS; do
  kc "$c" -n kube-system rollout status daemonset/pod-network --timeout 3m >/dev/null
done

# node_has_routes NODE "CIDR IP" LINES: every route is in the node's table.
node_has_routes() {
  local n=$1 cidr ip table
  table=$(docker exec "$n" ip route show)
  while read -r cidr ip; do
    [[ -z $cidr ]] || grep -q "^$cidr via $ip " <<<"$table" || return 1
  done <<<"$2"
}
for c in $MEMBERS; do
  want=""
  for d in $MEMBERS; do [[ $d == "$c" ]] || want+="${routes[$d]}"$'\n'; done
  for n in $(cluster_nodes "$c"); do
    wait_for 90 "peer routes on $n" node_has_routes "$n" "$want" || die "$n lacks peer routes (kubectl -n kube-system logs ds/pod-network)"
  done
done
log "members $MEMBERS route each other's pod subnets ($(for c in $MEMBERS; do printf '%s %s, ' "$c" "${subnet[$c]}"; done | sed 's/, $//')) in $((SECONDS - T0))s"
