#!/usr/bin/env bash
# netcheck.sh CLUSTER: checks the pod network of one kind cluster of the
# fleet, with Kubernetes' own test image (agnhost):
#   - an agnhost netexec pod on every node (the control plane too) and a
#     Service over them;
#   - from every pod, through netexec's /dial, every other node's pod: the
#     answer must name the caller's own pod IP (pod to pod across nodes,
#     no address translation);
#   - from one pod, the Service by its DNS name (CoreDNS + kube-proxy), and
#     the hub's apiserver by its container name on the kind network.
# Exits non-zero naming the first path that fails; removes what it made.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${KIND_FLEET_DIR:-$REPO_ROOT/.fleet/kind}
c=${1:?usage: netcheck.sh CLUSTER}
AGNHOST=${AGNHOST_IMAGE:-registry.k8s.io/e2e-test-images/agnhost:2.56}
NS=netcheck
kc() { kubectl --kubeconfig "$DIR/$c/kubeconfig" "$@"; }
log() { printf '%s netcheck %s: %s\n' "$(date +%H:%M:%S)" "$c" "$*" >&2; }
T0=$SECONDS
trap 'kc delete namespace $NS --wait=false >/dev/null 2>&1 || true' EXIT

kc create namespace $NS --dry-run=client -o yaml | kc apply -f - >/dev/null
nodes=$(kc get nodes -o jsonpath='{.items[*].metadata.name}')
i=0
for n in $nodes; do
  cat <<EOF | kc apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: netexec-$i, namespace: $NS, labels: {app: netexec}}
spec:
  nodeName: $n
  tolerations: [{operator: Exists}]
  containers:
  - name: netexec
    image: $AGNHOST
    imagePullPolicy: Never
    args: [netexec, --http-port=8080]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
EOF
  i=$((i + 1))
done
kc -n $NS create service clusterip netexec --tcp=8080:8080 --dry-run=client -o yaml | kc apply -f - >/dev/null
kc -n $NS wait --for=condition=Ready pods --all --timeout 2m >/dev/null

mapfile -t pods < <(kc -n $NS get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP} {.spec.nodeName}{"\n"}{end}')
dial() { # pod, host, port -> netexec's /dial answer (JSON)
  kc get --raw "/api/v1/namespaces/$NS/pods/$1:8080/proxy/dial?request=clientip&protocol=http&tries=1&host=$2&port=$3"
}
checked=0
for a in "${pods[@]}"; do
  read -r pa ipa na <<<"$a"
  for b in "${pods[@]}"; do
    read -r pb ipb nb <<<"$b"
    [[ $na == "$nb" ]] && continue
    out=$(dial "$pa" "$ipb" 8080)
    [[ $out == *"\"$ipa:"* ]] || { log "FAIL pod $pa ($ipa on $na) -> pod $pb ($ipb on $nb): $out"; exit 1; }
    checked=$((checked + 1))
  done
done
read -r p0 _ <<<"${pods[0]}"
# The Service's endpoints reach kube-proxy a moment after the pods are Ready.
for _ in $(seq 30); do
  out=$(dial "$p0" "netexec.$NS.svc.cluster.local" 8080)
  [[ $out == *'"responses":["'* ]] && break
  sleep 1
done
[[ $out == *'"responses":["'* ]] || { log "FAIL pod $p0 -> Service netexec.$NS by DNS: $out"; exit 1; }
kc -n $NS exec "$p0" -- /usr/local/bin/agnhost connect --timeout=5s fleetset-hub-control-plane:6443 ||
  { log "FAIL pod $p0 -> fleetset-hub-control-plane:6443"; exit 1; }
log "ok in $((SECONDS - T0))s: ${#pods[@]} nodes, $checked pod-to-pod paths with the caller's own address, Service by DNS, the hub's apiserver"
