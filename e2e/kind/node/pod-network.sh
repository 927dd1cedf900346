#!/bin/bash
# pod-network.sh: the pod network of a kind cluster on fleetset's offline
# node image, doing what kind's default CNI daemon (kindnetd) does, which
# cannot be had offline. It runs in the DaemonSet kube-system/pod-network
# (default-cni.yaml: host network, privileged, every node) and, every
# 5 seconds:
#   - writes this node's CNI config: ptp + host-local IPAM over the node's
#     spec.podCIDR (allocated by kube-controller-manager from the cluster's
#     podSubnet), so every node hands out addresses from its own range;
#   - routes every other node's spec.podCIDR via that node's InternalIP (the
#     nodes share one Docker network), so pods reach pods on other nodes
#     with their own addresses;
#   - masquerades traffic from pods to anything outside the podSubnet (other
#     clusters' nodes, the host), whose replies must come back to the node;
#   - with peers (the ConfigMap kube-system/pod-network-peers that kind-up.sh
#     writes, mounted at $PEERS_DIR): routes every line "CIDR VIA" of
#     $PEERS_DIR/routes (the other member clusters' nodes' podCIDRs via their
#     InternalIPs, on the same Docker network) and does not masquerade
#     traffic to the subnets of $PEERS_DIR/subnets (the other members' pod
#     subnets), so a pod of another member sees the sender's own pod IP.
# It reads nodes with its ServiceAccount's token from the apiserver at
# CONTROL_PLANE_ENDPOINT (set by kind), so it needs neither CNI nor
# kube-proxy to start. It never removes what it did not add; a deleted
# node's route stays until the node restarts.
#
# Once three passes in a row changed nothing it checks every
# $QUIET_PERIOD seconds (default 30) instead of 5 (each pass runs kubectl
# and iptables on every node); any change, or a failed list of the nodes,
# brings the 5-second pace back.
set -u
: "${NODE_NAME:?}" "${POD_SUBNET:?}" "${CONTROL_PLANE_ENDPOINT:?}"
CONF=/etc/cni/net.d/10-pod-network.conflist
PEERS_DIR=${PEERS_DIR:-/etc/pod-network}
SA=/var/run/secrets/kubernetes.io/serviceaccount
log() { echo "$(date +%H:%M:%S) pod-network: $*"; }
# did MESSAGE: log a change this pass made.
did() { changed=1; log "$@"; }
quiet=0
QUIET_PERIOD=${QUIET_PERIOD:-30}

while :; do
  changed=0
  if ! iptables -t nat -C POSTROUTING -s "$POD_SUBNET" ! -d "$POD_SUBNET" -m comment --comment pod-network -j MASQUERADE 2>/dev/null; then
    iptables -t nat -A POSTROUTING -s "$POD_SUBNET" ! -d "$POD_SUBNET" -m comment --comment pod-network -j MASQUERADE &&
      did "masquerading $POD_SUBNET to outside it"
  fi
  # Peer clusters: their pod subnets unmasqueraded (inserted before the
  # MASQUERADE rule), their nodes' podCIDRs routed.
  for s in $(cat "$PEERS_DIR/subnets" 2>/dev/null); do
    if ! iptables -t nat -C POSTROUTING -s "$POD_SUBNET" -d "$s" -m comment --comment pod-network-peer -j RETURN 2>/dev/null; then
      iptables -t nat -I POSTROUTING 1 -s "$POD_SUBNET" -d "$s" -m comment --comment pod-network-peer -j RETURN &&
        did "not masquerading $POD_SUBNET to peer $s"
    fi
  done
  while read -r cidr ip; do
    [[ -n $cidr && -n ${ip:-} ]] || continue
    if [[ $(ip route show "$cidr") != *"via $ip "* ]]; then
      ip route replace "$cidr" via "$ip" && did "peer route $cidr via $ip"
    fi
  done < <(cat "$PEERS_DIR/routes" 2>/dev/null)
  nodes=$(kubectl --server "https://$CONTROL_PLANE_ENDPOINT" --token "$(cat $SA/token)" --certificate-authority $SA/ca.crt \
    get nodes --request-timeout 5s \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.podCIDR}{" "}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}') ||
    did "cannot list nodes"
  while read -r name cidr ip; do
    [[ -n $cidr && -n $ip ]] || continue
    if [[ $name == "$NODE_NAME" ]]; then
      want=$(printf '{"cniVersion":"0.3.1","name":"pod-network","plugins":[{"type":"ptp","ipMasq":false,"mtu":1500,"ipam":{"type":"host-local","dataDir":"/run/cni-ipam-state","routes":[{"dst":"0.0.0.0/0"}],"ranges":[[{"subnet":"%s"}]]}},{"type":"portmap","capabilities":{"portMappings":true}}]}' "$cidr")
      if [[ $(cat "$CONF" 2>/dev/null) != "$want" ]]; then
        echo "$want" >"$CONF.tmp" && mv "$CONF.tmp" "$CONF" && did "CNI config for $cidr"
      fi
    elif [[ $(ip route show "$cidr") != *"via $ip "* ]]; then
      ip route replace "$cidr" via "$ip" && did "route $cidr via $ip ($name)"
    fi
  done <<<"$nodes"
  if ((changed)); then quiet=0; else quiet=$((quiet + 1)); fi
  if ((quiet >= 3)); then sleep "$QUIET_PERIOD"; else sleep 5; fi
done
