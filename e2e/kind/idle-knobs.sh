#!/usr/bin/env bash
# idle-knobs.sh measures what each setting of the small kind bed saves
# (`make kind-idle-knobs`, docs/development.md "The kind fleet's CPU"): on
# the running kind fleet, at rest, it measures the fleet's CPU (idle.sh),
# then turns the bed's settings back to kind's defaults one at a time,
# cumulatively, measuring after each, and finally restores them all and
# measures again:
#
#   bed              as kind-up leaves it
#   +pod-network-5s  the pod network checks every 5 s, not 30 s once quiet
#   +coredns-2       CoreDNS with kubeadm's two replicas, anywhere
#   +leader-elect    kube-controller-manager and kube-scheduler elect a
#                    leader (a Lease renewed every 2 s each)
#   +housekeeping-10s cAdvisor's housekeeping every 10 s (kubelet restarted)
#   restored         the bed's settings again
#
# The difference between two lines is what that setting saves. A fourth node
# per member (kind-configs/ before the bed had three) costs about what one
# worker uses in the +housekeeping-10s line. Takes about 12 minutes
# (KIND_IDLE_SECONDS per line plus a settling pause, KIND_KNOB_SETTLE,
# default 45 s). Run it on a fleet with nothing else running.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LOG_NAME=idle-knobs
# shellcheck source=lib.sh
source "$HERE/lib.sh"
SETTLE=${KIND_KNOB_SETTLE:-45}
CLUSTERS="hub $MEMBERS"
nodes() { docker ps --format '{{.Names}}' --filter label=io.x-k8s.kind.cluster | grep '^fleetset-' | sort; }
measure() { sleep "$SETTLE"; "$HERE/idle.sh" "$1" | tail -1; }

pod_network_period() {
  for c in $CLUSTERS; do kc "$c" -n kube-system set env daemonset/pod-network "QUIET_PERIOD=$1" >/dev/null; done
  for c in $CLUSTERS; do kc "$c" -n kube-system rollout status daemonset/pod-network --timeout 3m >/dev/null; done
}
coredns() { # replicas, nodeSelector JSON
  for c in $CLUSTERS; do
    kc "$c" -n kube-system patch deployment coredns --type merge \
      -p "{\"spec\":{\"replicas\":$1,\"template\":{\"spec\":{\"nodeSelector\":$2}}}}" >/dev/null
  done
  for c in $CLUSTERS; do kc "$c" -n kube-system rollout status deployment/coredns --timeout 3m >/dev/null; done
}
leader_elect() { # true|false: the static pods' flag (kubelet restarts them)
  for n in $(nodes | grep -- '-control-plane$'); do
    docker exec "$n" sed -i "s/--leader-elect=[a-z]*/--leader-elect=$1/" \
      /etc/kubernetes/manifests/kube-controller-manager.yaml /etc/kubernetes/manifests/kube-scheduler.yaml
  done
  sleep 20
  for c in $CLUSTERS; do wait_for 180 "$c: apiserver" kc "$c" get --raw /readyz; done
}
housekeeping() { # interval: every node's kubelet, restarted
  for n in $(nodes); do
    docker exec "$n" sed -i "s/--housekeeping-interval=[0-9a-z]*/--housekeeping-interval=$1/" /var/lib/kubelet/kubeadm-flags.env
    docker exec "$n" systemctl restart kubelet
  done
  for c in $CLUSTERS; do kc "$c" wait --for=condition=Ready nodes --all --timeout 3m >/dev/null; done
}

measure bed
pod_network_period 5
measure +pod-network-5s
coredns 2 null
measure +coredns-2
leader_elect true
measure +leader-elect
housekeeping 10s
measure +housekeeping-10s
housekeeping 30s
leader_elect false
coredns 1 '{"node-role.kubernetes.io/control-plane":""}'
pod_network_period 30
measure restored
