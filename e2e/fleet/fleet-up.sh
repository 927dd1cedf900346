#!/usr/bin/env bash
# fleet-up.sh starts the local fleet: an Open Cluster Management hub and the
# member clusters in FLEET_MEMBERS (default "east west"), each made of real
# control-plane processes bound to 127.0.0.1:
#
#   hub:    etcd, kube-apiserver, kube-controller-manager (csrsigning),
#           OCM hub CRDs, OCM registration controller, OCM add-on manager,
#           fleetset CRDs, the fleetset add-on (manifests/addon),
#           fleetset-hub (when bin/fleetset-hub exists)
#   member: etcd, kube-apiserver, kube-controller-manager, kwok (fake kubelet
#           of 6 nodes: zone-a/b/c x 2), hub-link (the member's link to the
#           hub: a loopback proxy that `agent.sh cut|heal` breaks and mends),
#           OCM registration agent, OCM work agent, fleetset-scheduler (with
#           its member component: heartbeat, peer endpoint, fencer),
#           provisioner (fleetset-local-provisioner: volumes and expansion
#           of the default StorageClass fleetset-local)
#
# Members get fleetset's member side the way OCM users install it: the
# fleetset add-on is enabled on each (a ManagedClusterAddOn), and OCM's add-on
# manager delivers the SubsetPlacement CRD, fleetset-scheduler's RBAC,
# configuration and Deployment. kwok has no container runtime, so that
# Deployment's pods are kwok pods (Running, Ready, no process); the real
# fleetset-scheduler process runs beside them on 127.0.0.1, started once the
# add-on has delivered the CRD, with the add-on's ServiceAccount rights
# checked by the RBAC integration tests rather than here.
#
# Members join the hub as with clusteradm: bootstrap kubeconfig, CSR approved,
# hubAcceptsClient: true. Binaries come from bin/ (make fleet-binaries).
# Idempotent: a running fleet is left alone; a broken one is torn down and
# started again. State, kubeconfigs and logs are under .fleet/.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

T0=$SECONDS
# The fleetset CRDs installed on the hub (members get the SubsetPlacement CRD
# from the fleetset add-on).
FLEETSET_CRDS_DIR=${FLEETSET_CRDS_DIR:-$REPO_ROOT/manifests/crds}
STEP_TIMEOUT=${FLEET_STEP_TIMEOUT:-120}

# ---------------------------------------------------------------- preflight
fleet_running() {
  local c p any=0
  [[ -f $FLEET_DIR/up ]] || return 1
  for c in $FLEET_CLUSTERS; do
    for p in $(procs_of "$c"); do
      any=1
      pid_alive "$c" "$p" || return 1
    done
  done
  ((any))
}

if fleet_running; then
  log "fleet already up (.fleet/up); kubeconfigs in ${FLEET_DIR#"$REPO_ROOT"/}/<cluster>/kubeconfig"
  exit 0
fi
if [[ -d $FLEET_DIR ]]; then
  log "stale fleet state in $FLEET_DIR: tearing it down"
  "$(dirname "$0")/fleet-down.sh"
  # Not the kind fleet's kubeconfigs (.fleet/kind, make kind-up).
  find "$FLEET_DIR" -mindepth 1 -maxdepth 1 ! -name kind -exec rm -rf {} +
fi

for b in etcd kube-apiserver kube-controller-manager kwok coredns registration work addon placement fleetset-scheduler netcut fleetset-local-provisioner; do
  [[ -x $LOCALBIN/$b ]] || die "missing $LOCALBIN/$b: run make fleet-binaries"
done
command -v openssl >/dev/null || die "openssl not found: apt-get install -y openssl"
command -v "$KUBECTL" >/dev/null || die "kubectl not found"

for c in $FLEET_CLUSTERS; do
  for s in $SLOT_APISERVER $SLOT_ETCD $SLOT_ETCD_PEER $SLOT_KCM $SLOT_REGISTRATION $SLOT_WORK $SLOT_SCHEDULER $SLOT_KWOK $SLOT_HUB_METRICS $SLOT_HUB_HEALTH $SLOT_ADDON $SLOT_HUB_LINK $SLOT_PEER $SLOT_PROVISIONER $SLOT_DNS $SLOT_DNS_READY; do
    pt=$(port "$c" "$s")
    port_free "$pt" || die "127.0.0.1:$pt is in use: set FLEET_PORT_BASE to another base (now $FLEET_PORT_BASE)"
  done
done

OCM_DIR=$(cd "$REPO_ROOT/e2e/tools" && GOFLAGS=-mod=mod GONOSUMDB=sigs.k8s.io/about-api go list -m -f '{{.Dir}}' open-cluster-management.io/ocm)
OCM_API_DIR=$(cd "$REPO_ROOT/e2e/tools" && GOFLAGS=-mod=mod GONOSUMDB=sigs.k8s.io/about-api go list -m -f '{{.Dir}}' open-cluster-management.io/api)
[[ -d $OCM_DIR/manifests && -d $OCM_API_DIR/addon ]] || die "OCM module not found (cd e2e/tools && go mod download)"

mkdir -p "$FLEET_DIR"
echo "$FLEET_MEMBERS" >"$FLEET_DIR/members"
{
  echo "# port plan of the local fleet (FLEET_PORT_BASE=$FLEET_PORT_BASE)"
  for c in $FLEET_CLUSTERS; do
    echo "$c apiserver=$(port "$c" $SLOT_APISERVER) etcd=$(port "$c" $SLOT_ETCD) kcm=$(port "$c" $SLOT_KCM) ocm-registration=$(port "$c" $SLOT_REGISTRATION) ocm-work=$(port "$c" $SLOT_WORK) scheduler=$(port "$c" $SLOT_SCHEDULER) kwok=$(port "$c" $SLOT_KWOK) hub-metrics=$(port "$c" $SLOT_HUB_METRICS) hub-health=$(port "$c" $SLOT_HUB_HEALTH) ocm-addon=$(port "$c" $SLOT_ADDON) hub-link=$(port "$c" $SLOT_HUB_LINK) peer=$(port "$c" $SLOT_PEER) ocm-placement=$(port "$c" $SLOT_PLACEMENT) provisioner=$(port "$c" $SLOT_PROVISIONER) dns=$(port "$c" $SLOT_DNS)"
  done
} >"$FLEET_DIR/ports"

# ---------------------------------------------------------------- PKI
# One CA per cluster: it signs the apiserver's serving certificate and the
# admin client certificate, and the apiserver trusts it for client certs.
# On the hub, kube-controller-manager's csrsigning signs the OCM agents'
# CSRs with the same CA.
pki() {
  local c=$1 d
  d=$(cdir "$c")/pki
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=fleet-$c-ca" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out apiserver.crt \
      -extfile <(printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n') 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=fleet-admin" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -out admin.crt \
      -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n') 2>/dev/null
    openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr
  )
}

# write_kubeconfig FILE CLUSTER USER-YAML: a kubeconfig for the cluster's
# apiserver carrying its CA (never insecure-skip-tls-verify).
write_kubeconfig() {
  local f=$1 c=$2 user=$3
  cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $c
  cluster:
    server: https://127.0.0.1:$(port "$c" $SLOT_APISERVER)
    certificate-authority-data: $(base64 -w0 <"$(cdir "$c")/pki/ca.crt")
users:
- name: $c-user
  user:
$user
contexts:
- name: $c
  context: {cluster: $c, user: $c-user}
current-context: $c
EOF
  chmod 600 "$f"
}

log "PKI and kubeconfigs"
BOOTSTRAP_TOKEN=$(openssl rand -hex 16)
pki_pids=()
for c in $FLEET_CLUSTERS; do
  pki "$c" &
  pki_pids+=($!)
done
for p in "${pki_pids[@]}"; do wait "$p" || die "generating certificates failed"; done
for c in $FLEET_CLUSTERS; do
  write_kubeconfig "$(kubeconfig "$c")" "$c" "    client-certificate-data: $(base64 -w0 <"$(cdir "$c")/pki/admin.crt")
    client-key-data: $(base64 -w0 <"$(cdir "$c")/pki/admin.key")"
done
# The bootstrap identity the members' registration agents join the hub with
# (clusteradm's bootstrap token), bound to OCM's bootstrap ClusterRole. Each
# member reaches the hub through its own hub-link (a netcut proxy on the
# member's SLOT_HUB_LINK port), so its bootstrap kubeconfig, and every hub
# kubeconfig OCM derives from it (the agents', the add-on's), names that
# link: `agent.sh cut CLUSTER` breaks all of them at once.
echo "$BOOTSTRAP_TOKEN,fleet-bootstrap,fleet-bootstrap,\"system:bootstrappers:managedcluster\"" >"$(cdir hub)/pki/tokens.csv"
for c in $FLEET_MEMBERS; do
  mkdir -p "$(cdir "$c")"
  write_kubeconfig "$(cdir "$c")/bootstrap.kubeconfig" hub "    token: $BOOTSTRAP_TOKEN"
  sed -i "s#server: https://127.0.0.1:$(port hub $SLOT_APISERVER)#server: https://127.0.0.1:$(port "$c" $SLOT_HUB_LINK)#" "$(cdir "$c")/bootstrap.kubeconfig"
done

# ---------------------------------------------------------------- etcd, apiserver
# etcd (bin/etcd, built from e2e/tools/etcd) runs as "fleet-etcd" (a
# symlink), so that `pkill -x etcd` elsewhere on the machine does not take
# the fleet down.
mkdir -p "$FLEET_DIR/bin"
ln -sf "$(readlink -f "$LOCALBIN/etcd")" "$FLEET_DIR/bin/fleet-etcd"
log "etcd and kube-apiserver in $FLEET_CLUSTERS"
for c in $FLEET_CLUSTERS; do
  d=$(cdir "$c")
  ep=$(port "$c" $SLOT_ETCD)
  pp=$(port "$c" $SLOT_ETCD_PEER)
  start_proc "$c" etcd "$FLEET_DIR/bin/fleet-etcd" --name "$c" --data-dir "$d/etcd" \
    --listen-client-urls "http://127.0.0.1:$ep" --advertise-client-urls "http://127.0.0.1:$ep" \
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "$c=http://127.0.0.1:$pp" --initial-cluster-state new \
    --quota-backend-bytes 1073741824 --logger zap --log-level warn
done
for c in $FLEET_CLUSTERS; do
  wait_for 30 "$c etcd" curl -sf "http://127.0.0.1:$(port "$c" $SLOT_ETCD)/health"
done
for c in $FLEET_CLUSTERS; do
  d=$(cdir "$c")
  extra=()
  # Hub: the members' bootstrap token. Members: no node.kubernetes.io/not-ready
  # taint on new Nodes, since the node lifecycle controller that would lift
  # it does not run (kwok's nodes keep no kubelet lease).
  if [[ $c == hub ]]; then
    extra=(--token-auth-file "$d/pki/tokens.csv")
  else
    extra=(--disable-admission-plugins TaintNodesByCondition)
  fi
  start_proc "$c" kube-apiserver "$LOCALBIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$(port "$c" $SLOT_ETCD)" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$(port "$c" $SLOT_APISERVER)" \
    --cert-dir "$d/pki" --tls-cert-file "$d/pki/apiserver.crt" --tls-private-key-file "$d/pki/apiserver.key" \
    --client-ca-file "$d/pki/ca.crt" --requestheader-client-ca-file "$d/pki/ca.crt" \
    --requestheader-allowed-names front-proxy-client --requestheader-username-headers X-Remote-User \
    --requestheader-group-headers X-Remote-Group --requestheader-extra-headers-prefix X-Remote-Extra- \
    --service-account-key-file "$d/pki/sa.pub" --service-account-signing-key-file "$d/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-cluster-ip-range 10.96.0.0/16 --authorization-mode RBAC --allow-privileged \
    --endpoint-reconciler-type none --v 1 "${extra[@]}"
done
for c in $FLEET_CLUSTERS; do
  wait_for "$STEP_TIMEOUT" "$c kube-apiserver /readyz" kc "$c" get --raw /readyz
done
log "apiservers ready ($((SECONDS - T0))s)"

# ---------------------------------------------------------------- controller managers
for c in $FLEET_CLUSTERS; do
  d=$(cdir "$c")
  start_proc "$c" kube-controller-manager "$LOCALBIN/kube-controller-manager" \
    --kubeconfig "$d/kubeconfig" --authentication-kubeconfig "$d/kubeconfig" --authorization-kubeconfig "$d/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$(port "$c" $SLOT_KCM)" --leader-elect=false \
    --controllers '*,-nodeipam,-nodelifecycle,-service-lb-controller,-node-route-controller,-cloud-node-lifecycle-controller,-persistentvolume-expander-controller' \
    --service-account-private-key-file "$d/pki/sa.key" --root-ca-file "$d/pki/ca.crt" \
    --use-service-account-credentials=false \
    --cluster-signing-cert-file "$d/pki/ca.crt" --cluster-signing-key-file "$d/pki/ca.key" \
    --cluster-signing-duration 8760h --v 1
done

# ---------------------------------------------------------------- CRDs
# apply_crds CLUSTER FILES...: server-side (OCM's CRDs exceed the client-side
# last-applied annotation), then wait until Established.
apply_crds() {
  local c=$1; shift
  local f args=()
  for f in "$@"; do args+=(-f "$f"); done
  local names
  names=$(kc "$c" apply --server-side --force-conflicts "${args[@]}" -o name)
  for f in $names; do
    wait_for "$STEP_TIMEOUT" "$c: $f Established" crd_established "$c" "$f" || return 1
  done
}
crd_established() {
  [[ $(kc "$1" get "$2" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}') == True ]]
}
log "CRDs"
# OCM's hub CRDs; the two addon CRDs there are templates (conversion webhook
# CA), so those come from the open-cluster-management.io/api module instead.
hub_crds=()
for f in "$OCM_DIR"/manifests/cluster-manager/hub/crds/*.crd.yaml; do
  grep -q '{{' "$f" || hub_crds+=("$f")
done
hub_crds+=("$OCM_API_DIR"/addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml
  "$OCM_API_DIR"/addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml)
apply_crds hub "${hub_crds[@]}" "$FLEETSET_CRDS_DIR"/*.yaml &
crd_pids=($!)
for c in $FLEET_MEMBERS; do
  # (the SubsetPlacement CRD comes with the fleetset add-on)
  apply_crds "$c" "$OCM_DIR"/manifests/klusterlet/managed/*.crd.yaml &
  crd_pids+=($!)
done
for p in "${crd_pids[@]}"; do wait "$p" || die "applying CRDs failed"; done

# ---------------------------------------------------------------- hub: OCM
kc hub apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: open-cluster-management:bootstrap
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
- apiGroups: [certificates.k8s.io]
  resources: [certificatesigningrequests]
  verbs: [create, get, list, watch]
- apiGroups: [cluster.open-cluster-management.io]
  resources: [managedclusters]
  verbs: [get, create, list, watch]
- apiGroups: [cluster.open-cluster-management.io]
  resources: [managedclustersets/join]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: open-cluster-management:bootstrap:managedcluster
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: open-cluster-management:bootstrap
subjects:
- kind: Group
  apiGroup: rbac.authorization.k8s.io
  name: system:bootstrappers:managedcluster
---
apiVersion: v1
kind: Namespace
metadata:
  name: open-cluster-management-hub
EOF
start_proc hub registration-controller "$LOCALBIN/registration" controller \
  --kubeconfig "$(kubeconfig hub)" --namespace open-cluster-management-hub \
  --listen "127.0.0.1:$(port hub $SLOT_REGISTRATION)" --disable-leader-election
# OCM's placement controller: decides the clusters of Placements (FleetSets
# with spec.topology.placementRef), within the ManagedClusterSets bound to
# their namespaces.
start_proc hub placement-controller "$LOCALBIN/placement" controller \
  --kubeconfig "$(kubeconfig hub)" --namespace open-cluster-management-hub \
  --listen "127.0.0.1:$(port hub $SLOT_PLACEMENT)" --disable-leader-election
# OCM's add-on manager renders template add-ons (AddOnTemplate) into one
# ManifestWork per enabled cluster and reports their health.
start_proc hub addon-manager "$LOCALBIN/addon" manager \
  --kubeconfig "$(kubeconfig hub)" --namespace open-cluster-management-hub \
  --listen "127.0.0.1:$(port hub $SLOT_ADDON)" --disable-leader-election
# The fleet peer CA (docs/failover.md#peers), as an installer makes it:
# its certificate and key in the Secret fleetset-peer-signer, which OCM's
# add-on manager signs the members' peer certificates with (the add-on's
# CustomSigner registration fleetset.io/peer), and its certificate alone in
# the ConfigMap fleetset-peer-ca, which the members read to trust it.
mkdir -p "$FLEET_DIR/hub/peer-ca"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=fleetset peer CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
  -keyout "$FLEET_DIR/hub/peer-ca/tls.key" -out "$FLEET_DIR/hub/peer-ca/tls.crt" 2>/dev/null
kc hub -n open-cluster-management-hub create secret tls fleetset-peer-signer \
  --cert "$FLEET_DIR/hub/peer-ca/tls.crt" --key "$FLEET_DIR/hub/peer-ca/tls.key" >/dev/null
kc hub -n open-cluster-management-hub create configmap fleetset-peer-ca \
  --from-file=ca.crt="$FLEET_DIR/hub/peer-ca/tls.crt" >/dev/null
# The fleetset add-on (ClusterManagementAddOn + AddOnTemplate).
kc hub apply --server-side --force-conflicts -k "$REPO_ROOT/manifests/addon" >/dev/null

# ManagedClusters accepted up front (as `clusteradm accept` does), with a
# short lease so that a lost member turns unavailable within seconds.
for c in $FLEET_MEMBERS; do
  kc hub apply -f - >/dev/null <<EOF
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: $c
spec:
  hubAcceptsClient: true
  leaseDurationSeconds: $FLEET_CLUSTER_LEASE_SECONDS
EOF
done

# ---------------------------------------------------------------- members
# make_nodes CLUSTER: 6 Nodes, zone-a/b/c x 2, managed by kwok.
make_nodes() {
  local c=$1 z i
  for z in a b c; do
    for i in 1 2; do
      cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $c-zone-$z-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $c-zone-$z-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    topology.kubernetes.io/zone: zone-$z
    topology.kubernetes.io/region: $c
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EOF
    done
  done
}

for c in $FLEET_MEMBERS; do
  d=$(cdir "$c")
  kc "$c" create namespace "$OCM_AGENT_NAMESPACE" >/dev/null
  make_nodes "$c" | kc "$c" apply -f - >/dev/null
  start_proc "$c" kwok "$LOCALBIN/kwok" --kubeconfig "$d/kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --cidr "$(pod_cidr "$c")" --node-ip 127.0.0.1 \
    --server-address "127.0.0.1:$(port "$c" $SLOT_KWOK)"
  # Dynamic volumes: fleetset-local-provisioner (e2e/tools/provisioner)
  # provisions, expands and deletes the PVs of the StorageClass
  # fleetset-local, the member's default. Its PVs are hostPath volumes
  # pinned to the zone of the node the scheduler picked (kwok mounts
  # nothing); one per member, so no leader election.
  start_proc "$c" provisioner "$LOCALBIN/fleetset-local-provisioner" --kubeconfig "$d/kubeconfig" \
    --health-bind-address "127.0.0.1:$(port "$c" $SLOT_PROVISIONER)"
  kc "$c" apply -f "$REPO_ROOT/e2e/tools/provisioner/storageclass.yaml" >/dev/null
  # The member's stock CoreDNS (its kubernetes plugin over the member's
  # apiserver, as in any cluster), on a loopback port: fleet DNS names
  # (<pod>.<service>.<namespace>.svc.cluster.local) resolve through it.
  cat >"$d/Corefile" <<EOF
.:$(port "$c" $SLOT_DNS) {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:$(port "$c" $SLOT_DNS_READY)
    kubernetes cluster.local {
        kubeconfig $d/kubeconfig
    }
}
EOF
  start_proc "$c" coredns "$LOCALBIN/coredns" -conf "$d/Corefile"
  # The member's link to the hub.
  start_proc "$c" hub-link "$LOCALBIN/netcut" -listen "127.0.0.1:$(port "$c" $SLOT_HUB_LINK)" \
    -target "127.0.0.1:$(port hub $SLOT_APISERVER)" -state "$d/run/hub-link.state"
  # OCM registration agent: joins the hub with the bootstrap kubeconfig and
  # writes its own hub kubeconfig (client cert from an approved CSR).
  mkdir -p "$d/hub-kubeconfig"
  start_proc "$c" registration-agent "$LOCALBIN/registration" agent \
    --kubeconfig "$d/kubeconfig" --spoke-kubeconfig "$d/kubeconfig" --namespace "$OCM_AGENT_NAMESPACE" \
    --cluster-name "$c" --agent-id "$c-agent" \
    --bootstrap-kubeconfig "$d/bootstrap.kubeconfig" --hub-kubeconfig-dir "$d/hub-kubeconfig" \
    --listen "127.0.0.1:$(port "$c" $SLOT_REGISTRATION)" --disable-leader-election
done

# Approve the agents' CSRs (clusteradm accept) until every member has a hub
# kubeconfig.
log "joining $FLEET_MEMBERS to the hub"
deadline=$((SECONDS + STEP_TIMEOUT))
for c in $FLEET_MEMBERS; do
  until [[ -s $(cdir "$c")/hub-kubeconfig/kubeconfig ]]; do
    ((SECONDS < deadline)) || die "$c did not get a hub kubeconfig; see .fleet/$c/logs/registration-agent.log"
    kc hub get csr -l "open-cluster-management.io/cluster-name=$c" \
      -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[*].type}{"\n"}{end}' 2>/dev/null |
      while read -r csr conds; do
        [[ -z $csr || $conds == *Approved* || $conds == *Denied* ]] && continue
        kc hub certificate approve "$csr" >/dev/null 2>&1 || true
      done
    sleep 1
  done
done

# OCM work agent: applies the cluster's ManifestWorks, with the hub identity
# the registration agent obtained. FLEET_WORK_FEATURE_GATES (default none)
# passes --feature-gates, e.g. ExecutorValidatingCaches=true (OCM's alpha
# cache of the executor's SubjectAccessReviews; docs/benchmarks.md, "Scale
# latency").
work_gates=()
[[ -n ${FLEET_WORK_FEATURE_GATES:-} ]] && work_gates=(--feature-gates "$FLEET_WORK_FEATURE_GATES")
for c in $FLEET_MEMBERS; do
  d=$(cdir "$c")
  start_proc "$c" work-agent "$LOCALBIN/work" agent "${work_gates[@]}" \
    --kubeconfig "$d/kubeconfig" --spoke-kubeconfig "$d/kubeconfig" --namespace "$OCM_AGENT_NAMESPACE" \
    --hub-kubeconfig "$d/hub-kubeconfig/kubeconfig" --workload-source-config "$d/hub-kubeconfig/kubeconfig" \
    --spoke-cluster-name "$c" --agent-id "$c-agent" \
    --listen "127.0.0.1:$(port "$c" $SLOT_WORK)" --disable-leader-election
done

cluster_available() {
  [[ $(kc hub get managedcluster "$1" -o jsonpath='{.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status}') == True ]]
}
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "ManagedCluster $c Available" cluster_available "$c" ||
    die "ManagedCluster $c not Available; see .fleet/$c/logs/registration-agent.log"
done
log "members joined ($((SECONDS - T0))s)"

nodes_ready() {
  [[ $(kc "$1" get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True) -ge 6 ]]
}
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: 6 kwok nodes Ready" nodes_ready "$c" || die "kwok nodes not Ready in $c; see .fleet/$c/logs/kwok.log"
done
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: provisioner /readyz" curl -sf "http://127.0.0.1:$(port "$c" $SLOT_PROVISIONER)/readyz" ||
    die "the volume provisioner of $c is not ready; see .fleet/$c/logs/provisioner.log"
  wait_for "$STEP_TIMEOUT" "$c: CoreDNS /ready" curl -sf "http://127.0.0.1:$(port "$c" $SLOT_DNS_READY)/ready" ||
    die "CoreDNS of $c is not ready; see .fleet/$c/logs/coredns.log"
done

# ---------------------------------------------------------------- fleetset add-on
# Enable the fleetset add-on on every member (one ManagedClusterAddOn each).
for c in $FLEET_MEMBERS; do
  kc hub apply -f - >/dev/null <<EOF
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata:
  name: fleetset
  namespace: $c
spec: {}
EOF
done
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: SubsetPlacement CRD from the fleetset add-on" crd_established "$c" crd/subsetplacements.fleetset.io ||
    die "the fleetset add-on did not deliver the SubsetPlacement CRD to $c; see .fleet/hub/logs/addon-manager.log and .fleet/$c/logs/work-agent.log"
done
# The add-on's hub credentials (its KubeClient registration): OCM's
# registration agent writes them into the Secret fleetset-hub-kubeconfig
# beside the add-on; the local fleetset-scheduler process reads them from
# files, as the add-on's Deployment does from its mounted Secret.
addon_hub_kubeconfig() {
  local c=$1 d ns
  d=$(cdir "$c")/member-hub
  ns=$(kc "$c" get secret -A --field-selector metadata.name=fleetset-hub-kubeconfig -o jsonpath='{.items[0].metadata.namespace}' 2>/dev/null) || return 1
  [[ -n $ns ]] || return 1
  mkdir -p "$d"
  for k in kubeconfig tls.crt tls.key; do
    kc "$c" -n "$ns" get secret fleetset-hub-kubeconfig -o "jsonpath={.data.${k//./\\.}}" | base64 -d >"$d/$k.tmp" || return 1
    [[ -s $d/$k.tmp ]] || return 1
    mv "$d/$k.tmp" "$d/$k"
  done
}
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: the fleetset add-on's hub credentials (Secret fleetset-hub-kubeconfig)" addon_hub_kubeconfig "$c" ||
    die "no hub credentials for the fleetset add-on in $c; see .fleet/$c/logs/registration-agent.log and .fleet/hub/logs/addon-manager.log"
done
# Its peer certificate (the CustomSigner registration fleetset.io/peer),
# signed by the add-on manager with the fleet peer CA: OCM's registration
# agent writes it into the Secret fleetset-fleetset.io-peer-client-cert,
# which the add-on's Deployment mounts at /managed/fleetset.io-peer.
addon_peer_cert() {
  local c=$1 d ns
  d=$(cdir "$c")/peer-cert
  ns=$(kc "$c" get secret -A --field-selector metadata.name=fleetset-fleetset.io-peer-client-cert -o jsonpath='{.items[0].metadata.namespace}' 2>/dev/null) || return 1
  [[ -n $ns ]] || return 1
  mkdir -p "$d"
  for k in tls.crt tls.key; do
    kc "$c" -n "$ns" get secret fleetset-fleetset.io-peer-client-cert -o "jsonpath={.data.${k//./\\.}}" | base64 -d >"$d/$k.tmp" || return 1
    [[ -s $d/$k.tmp ]] || return 1
    mv "$d/$k.tmp" "$d/$k"
  done
}
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: the fleetset add-on's peer certificate (Secret fleetset-fleetset.io-peer-client-cert)" addon_peer_cert "$c" ||
    die "no peer certificate for the fleetset add-on in $c; see .fleet/$c/logs/registration-agent.log and .fleet/hub/logs/addon-manager.log"
done
for c in $FLEET_MEMBERS; do
  d=$(cdir "$c")
  # fleetset-scheduler: the repository's KubeSchedulerConfiguration with this
  # member's kubeconfig; one instance per member, so no leader election. A
  # second profile, default-scheduler, stands in for the member's own
  # kube-scheduler (the local fleet runs none) and places pods that do not
  # name fleetset-scheduler, such as the add-on Deployment's kwok pods.
  {
    sed -e '/^leaderElection:/,/^[^ ]/{/^leaderElection:/d;/^  /d}' "$REPO_ROOT/manifests/scheduler/config.yaml"
    printf '  - schedulerName: default-scheduler\n'
    printf 'clientConnection:\n  kubeconfig: %s\nleaderElection:\n  leaderElect: false\n' "$d/kubeconfig"
  } >"$d/scheduler-config.yaml"
  # Its member component reaches the hub with the add-on's credentials (through
  # the hub-link) and serves its peer endpoint on loopback, over mutual TLS
  # with the add-on's peer certificate; it reads the fleet peer CA from the
  # hub, as in a real member.
  start_proc "$c" fleetset-scheduler "$LOCALBIN/fleetset-scheduler" --config "$d/scheduler-config.yaml" \
    --bind-address 127.0.0.1 --secure-port "$(port "$c" $SLOT_SCHEDULER)" \
    --authentication-kubeconfig "$d/kubeconfig" --authorization-kubeconfig "$d/kubeconfig" --v 1 \
    --member-cluster-name "$c" --member-hub-kubeconfig "$d/member-hub/kubeconfig" \
    --member-heartbeat-timeout "${FLEET_HEARTBEAT_SECONDS}s" \
    --member-peer-bind-address "127.0.0.1:$(port "$c" $SLOT_PEER)" --member-peer-url "https://127.0.0.1:$(port "$c" $SLOT_PEER)" \
    --member-peer-cert-dir "$d/peer-cert"
done
addon_available() {
  [[ $(kc hub -n "$1" get managedclusteraddon fleetset -o jsonpath='{.status.conditions[?(@.type=="Available")].status}') == True ]]
}
for c in $FLEET_MEMBERS; do
  wait_for "$STEP_TIMEOUT" "$c: ManagedClusterAddOn fleetset Available" addon_available "$c" ||
    die "ManagedClusterAddOn $c/fleetset not Available; see .fleet/hub/logs/addon-manager.log"
done
log "fleetset add-on Available on $FLEET_MEMBERS ($((SECONDS - T0))s)"

# ---------------------------------------------------------------- fleetset-hub
# The hub's admission policies (manifests/hub/admission.yaml), as an install
# of manifests/hub has them (the kind fleet applies all of manifests/hub):
# tenancy refused at admission. The fleet's admin is system:masters.
kc hub apply -f "$REPO_ROOT/manifests/hub/admission.yaml" >/dev/null
# FLEET_HUB_BIN runs another fleetset-hub build (make chaos-unsafe: one
# built to relocate without waiting for the fence); FLEET_HUB_FLAGS adds
# flags (e.g. --zap-log-level=2).
FLEET_HUB_BIN=${FLEET_HUB_BIN:-$LOCALBIN/fleetset-hub}
if [[ -x $FLEET_HUB_BIN ]]; then
  [[ $FLEET_HUB_BIN == "$LOCALBIN/fleetset-hub" ]] || log "fleetset-hub from $FLEET_HUB_BIN"
  read -r -a hub_flags <<<"${FLEET_HUB_FLAGS:-}"
  start_proc hub fleetset-hub "$FLEET_HUB_BIN" "${hub_flags[@]}" --kubeconfig "$(kubeconfig hub)" \
    --metrics-bind-address "127.0.0.1:$(port hub $SLOT_HUB_METRICS)" \
    --health-probe-bind-address "127.0.0.1:$(port hub $SLOT_HUB_HEALTH)" \
    --leader-elect=false --lease-duration "${FLEET_RESYNC_LEASE_SECONDS}s" --hub-identity fleetset-hub-local
  wait_for "$STEP_TIMEOUT" "fleetset-hub /readyz" curl -sf "http://127.0.0.1:$(port hub $SLOT_HUB_HEALTH)/readyz" ||
    die "fleetset-hub not ready; see .fleet/hub/logs/fleetset-hub.log"
else
  log "WARNING: $FLEET_HUB_BIN not built: the fleet runs without it"
fi

date -Is >"$FLEET_DIR/up"
log "fleet up in $((SECONDS - T0))s: hub $FLEET_MEMBERS"
for c in $FLEET_CLUSTERS; do
  log "  $c: KUBECONFIG=${FLEET_DIR#"$REPO_ROOT"/}/$c/kubeconfig  (https://127.0.0.1:$(port "$c" $SLOT_APISERVER))"
done
