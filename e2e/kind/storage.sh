#!/usr/bin/env bash
# storage.sh gives the kind fleet's members dynamic volumes that can grow
# (kind-up.sh runs it): on each member a fleetset-local-provisioner
# (e2e/tools/provisioner, bin/fleetset-local-provisioner) runs as a process
# on this host with the member's kubeconfig, and the StorageClass
# fleetset-local (e2e/tools/provisioner/storageclass-kind.yaml) becomes the
# default in place of kind's "standard", which cannot expand (and, with the
# offline node image of `make kind-node-image`, which ships no storage
# manifest, is kind's legacy kubernetes.io/host-path class that nothing
# provisions).
#
# fleetset-local's PVs are hostPath directories (DirectoryOrCreate, made by
# the kubelet) under /var/lib/fleetset-local on the node the scheduler
# picked, pinned to that node and its zone (pin: node; one worker per zone,
# so no freedom is lost). The provisioner serves nothing; it logs to
# .fleet/kind/<member>/provisioner.log.
#
#   storage.sh        start the provisioners (those running are kept), apply
#                     the class, make it the only default
#   storage.sh stop   stop them (kind-down.sh)
set -euo pipefail
LOG_NAME=kind-storage
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
PROVISIONER=${PROVISIONER:-$LOCALBIN/fleetset-local-provisioner}
CLASS=$REPO_ROOT/e2e/tools/provisioner/storageclass-kind.yaml

pidfile() { echo "$DIR/$1/provisioner.pid"; }
# running MEMBER: its recorded PID runs the provisioner binary.
running() {
  local f pid
  f=$(pidfile "$1")
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ -n $pid && -d /proc/$pid ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$PROVISIONER"
}

if [[ ${1:-} == stop ]]; then
  for c in $MEMBERS; do
    running "$c" || { rm -f "$(pidfile "$c")"; continue; }
    pid=$(<"$(pidfile "$c")")
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
    [[ -d /proc/$pid ]] && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$(pidfile "$c")"
    log "$c: provisioner stopped (pid $pid)"
  done
  exit 0
fi

[[ -x $PROVISIONER ]] || die "missing $PROVISIONER: make $PROVISIONER"
for c in $MEMBERS; do
  if running "$c"; then
    log "$c: provisioner already running (pid $(<"$(pidfile "$c")"))"
  else
    echo "=== $(date -Is) start" >>"$DIR/$c/provisioner.log"
    setsid "$PROVISIONER" --kubeconfig "$(kubeconfig "$c")" >>"$DIR/$c/provisioner.log" 2>&1 </dev/null &
    echo $! >"$(pidfile "$c")"
    log "$c: provisioner started (pid $!, log ${DIR#"$REPO_ROOT"/}/$c/provisioner.log)"
  fi
  kc "$c" apply -f "$CLASS" >/dev/null
  # fleetset-local is the only default class.
  for sc in $(kc "$c" get storageclass -o name); do
    [[ $sc == storageclass.storage.k8s.io/fleetset-local ]] && continue
    kc "$c" annotate "$sc" storageclass.kubernetes.io/is-default-class=false --overwrite >/dev/null
  done
done
# Check: a claim of the default class and a pod on a worker; the claim is
# bound to a PV pinned to the pod's node; the claim is deleted again (its
# PV with it).
check() {
  local c=$1 ns=kube-public name=fleetset-storage-check node pv
  kc "$c" -n "$ns" delete pod,pvc "$name" --ignore-not-found --wait=true >/dev/null
  kc "$c" -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  containers:
  - name: pause
    image: registry.k8s.io/pause:3.10.1
    imagePullPolicy: Never
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: $name}}]
EOF
  kc "$c" -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound "pvc/$name" --timeout "${STEP_TIMEOUT}s" >/dev/null ||
    die "$c: the check claim is not Bound; see ${DIR#"$REPO_ROOT"/}/$c/provisioner.log"
  kc "$c" -n "$ns" wait --for=condition=Ready "pod/$name" --timeout "${STEP_TIMEOUT}s" >/dev/null ||
    die "$c: the check pod with a fleetset-local volume is not Ready"
  node=$(kc "$c" -n "$ns" get pod "$name" -o jsonpath='{.spec.nodeName}')
  pv=$(kc "$c" -n "$ns" get pvc "$name" -o jsonpath='{.spec.volumeName}')
  kc "$c" get pv "$pv" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[*].values[0]}' | grep -qw -- "$node" ||
    die "$c: PV $pv is not pinned to node $node"
  kc "$c" -n "$ns" delete pod,pvc "$name" --wait=true >/dev/null
  log "$c: fleetset-local works (PV $pv on $node)"
}
for c in $MEMBERS; do check "$c"; done
