#!/usr/bin/env bash
# agent.sh: the e2e suite's hooks on the kind fleet (make kind-up), with the
# interface of the local fleet's e2e/fleet/agent.sh. CLUSTER is a name the
# suite knows: hub, or a member as its ManagedCluster is named (east, west);
# its kubeconfig is $KIND_FLEET_DIR/CLUSTER/kubeconfig and its kind cluster
# fleetset-CLUSTER.
#
# agent.sh stop|start|status CLUSTER [PROC]: stop or start one OCM agent of a
# member (default: registration-agent; or work-agent), as a network partition
# would (FLEETSET_E2E_STOP_AGENT / FLEETSET_E2E_START_AGENT). The member's
# klusterlet operator (open-cluster-management/klusterlet) is scaled to 0
# first, so it does not bring the agent back, and stays at 0 while any agent
# of the member is stopped; the agent's Deployment in
# open-cluster-management-agent (klusterlet-registration-agent,
# klusterlet-work-agent; klusterlet-agent in Singleton mode) is scaled to 0.
# The replica counts are kept in an annotation and restored by start. stop
# returns once the pods are gone, start once they are Ready.
#
# agent.sh restart CLUSTER PROC [ARG...]: restart PROC (fleetset-hub on the
# hub, fleetset-scheduler on a member, registration-agent, work-agent,
# klusterlet, or NAMESPACE/DEPLOYMENT) with ARG... appended to its
# container's args; a restart without ARG restores the original args and
# image (FLEETSET_E2E_RESTART, TestRestartsTouchNoWorkloadPod). With
# FLEET_REBUILD_VERSION=V, fleetset-hub and fleetset-scheduler are first
# rebuilt as the image fleetset-PROC:V (make's image archive with
# VERSION=V, the binary's version string) and loaded into the cluster with
# kind load. Returns once the Deployment's pods are all new (UIDs not seen
# before the restart) and Ready and no old pod is left.
#   - fleetset-hub (or any Deployment nobody reconciles): its container is
#     patched; the original image and args are kept in an annotation of the
#     Deployment until a restart without ARG puts them back.
#   - fleetset-scheduler installed by the fleetset add-on (the Deployment is
#     owned by an AppliedManifestWork): patching it would be reverted by the
#     work agent, so the member's ManagedClusterAddOn is pointed at a copy of
#     the add-on's AddOnTemplate (fleetset-e2e-CLUSTER) with the changed image
#     and args; a restart without ARG restores the ManagedClusterAddOn's
#     configs and deletes the copy.
#   - without ARG or rebuild and nothing to restore: operator- or
#     add-on-managed pods are deleted (their Deployment re-creates them),
#     others get kubectl rollout restart.
#
# Environment: KIND_FLEET_DIR (default <repo>/.fleet/kind), KUBECTL, KIND
# (see lib.sh), KIND_AGENT_WAIT (seconds per wait, default 240).
set -euo pipefail
LOG_NAME=kind-agent
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
WAIT=${KIND_AGENT_WAIT:-240}
OPERATOR_NS=open-cluster-management OPERATOR=klusterlet
AGENT_NS=open-cluster-management-agent
FLEETSET_NS=fleetset-system
ADDON=fleetset
ANN=e2e.fleetset.io # annotation prefix of what this script changed

[[ $# -ge 2 ]] || die "usage: $0 stop|start|status CLUSTER [PROC] | restart CLUSTER PROC [ARG...]"
action=$1 c=$2
[[ -f $DIR/$c/kubeconfig ]] || die "no kubeconfig $DIR/$c/kubeconfig (cluster $c of the kind fleet)"
# kc CLUSTER ARGS...: kubectl on one cluster, each request bounded.
kc() { local cl=$1; shift; "$KUBECTL" --kubeconfig "$(kubeconfig "$cl")" --request-timeout=30s "$@"; }

# exists CLUSTER NS DEPLOY
exists() { kc "$1" get -n "$2" deployment "$3" -o name >/dev/null 2>&1; }
# djp CLUSTER NS DEPLOY JSONPATH: a field of a Deployment.
djp() { kc "$1" get -n "$2" deployment "$3" -o "jsonpath=$4"; }
# selector CLUSTER NS DEPLOY: its matchLabels as k=v,k=v.
selector() {
  local s
  s=$(kc "$1" get -n "$2" deployment "$3" -o 'go-template={{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}')
  [[ -n $s ]] || die "$1: deployment $2/$3 has no matchLabels selector"
  echo "${s%,}"
}
# pods CLUSTER NS SELECTOR: one line per pod: uid|deleting|ready.
pods() {
  kc "$1" get pods -n "$2" -l "$3" -o 'jsonpath={range .items[*]}{.metadata.uid}|{.metadata.deletionTimestamp}|{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}'
}
uids() { pods "$@" | cut -d'|' -f1 | grep . || true; }

# wait_gone CLUSTER NS DEPLOY: no pod of the Deployment left.
wait_gone() {
  local sel deadline=$((SECONDS + WAIT)) left
  sel=$(selector "$1" "$2" "$3")
  while left=$(uids "$1" "$2" "$sel") && [[ -n $left ]]; do
    ((SECONDS < deadline)) || die "$1: pods of $2/$3 still there after ${WAIT}s: $(echo $left)"
    sleep 1
  done
}

# EXPECT_SPEC: spec_of the Deployment as restart set it; wait_new fails at
# once if another writer changes it meanwhile.
EXPECT_SPEC=
# wait_new CLUSTER NS DEPLOY [OLD_UID...]: the Deployment has rolled out
# (observed its generation, every replica updated) and all its pods are Ready
# and new: none of OLD_UID is left, terminating or not.
wait_new() {
  local cl=$1 ns=$2 d=$3; shift 3
  local old=" $* " sel deadline=$((SECONDS + WAIT)) st want gen obs upd cur ready line uid del rdy oldleft why
  sel=$(selector "$cl" "$ns" "$d")
  while :; do
    why=
    if st=$(djp "$cl" "$ns" "$d" '{.spec.replicas} {.metadata.generation} {.status.observedGeneration} {.status.updatedReplicas} {.status.replicas}'); then
      read -r want gen obs upd cur <<<"$st"
      ready=0 oldleft=0
      while IFS='|' read -r uid del rdy; do
        [[ -n $uid ]] || continue
        if [[ $old == *" $uid "* ]]; then
          oldleft=$((oldleft + 1))
        elif [[ -z $del && $rdy == True ]]; then
          ready=$((ready + 1))
        fi
      done < <(pods "$cl" "$ns" "$sel" || true)
      if [[ -n $EXPECT_SPEC && $(spec_of "$cl" "$ns" "$d") != "$EXPECT_SPEC" ]]; then
        die "$cl: $ns/$d was changed by another writer while restarting (now '$(spec_of "$cl" "$ns" "$d")', set '$EXPECT_SPEC'; see its managedFields)"
      elif [[ ${obs:-0} -lt $gen ]]; then why="generation $gen not observed yet ($obs)"
      elif [[ ${upd:-0} -ne $want || ${cur:-0} -ne $want ]]; then why="$upd of $want replicas updated, $cur in all"
      elif ((oldleft > 0)); then why="$oldleft old pod(s) left"
      elif ((ready != want)); then why="$ready of $want new pods Ready"
      else
        log "$cl: $ns/$d: $want new pod(s) Ready, no old pod left"
        return 0
      fi
    else
      why="cannot read the Deployment"
    fi
    if ((SECONDS >= deadline)); then
      kc "$cl" get pods -n "$ns" -l "$sel" -o wide >&2 || true
      die "$cl: $ns/$d not restarted after ${WAIT}s: $why"
    fi
    sleep 1
  done
}

# wait_ready CLUSTER NS DEPLOY: its replicas are all Ready (start).
wait_ready() {
  local deadline=$((SECONDS + WAIT)) st want ready
  while :; do
    st=$(djp "$1" "$2" "$3" '{.spec.replicas} {.status.readyReplicas}') || st="? ?"
    read -r want ready <<<"$st"
    [[ ${ready:-0} == "$want" ]] && return 0
    ((SECONDS < deadline)) || die "$1: $2/$3: ${ready:-0} of $want replicas Ready after ${WAIT}s"
    sleep 1
  done
}

# ---------------------------------------------------------------- stop/start

# agent_deploy CLUSTER PROC: the Deployment of an OCM agent in AGENT_NS.
agent_deploy() {
  local d
  case $2 in
    registration-agent) d=klusterlet-registration-agent ;;
    work-agent) d=klusterlet-work-agent ;;
    *) die "unknown OCM agent $2 (registration-agent, work-agent)" ;;
  esac
  if exists "$1" "$AGENT_NS" "$d"; then echo "$d"
  elif exists "$1" "$AGENT_NS" klusterlet-agent; then echo klusterlet-agent # Singleton mode
  else die "$1: no Deployment $AGENT_NS/$d (nor klusterlet-agent)"; fi
}

# scale_down CLUSTER NS DEPLOY: record the replicas (once) and scale to 0.
scale_down() {
  local r
  r=$(djp "$1" "$2" "$3" '{.spec.replicas}')
  if [[ -z $(djp "$1" "$2" "$3" "{.metadata.annotations.${ANN//./\\.}/stopped-replicas}") ]]; then
    kc "$1" annotate -n "$2" deployment "$3" "$ANN/stopped-replicas=${r:-1}" >/dev/null
  fi
  [[ $r == 0 ]] || kc "$1" scale -n "$2" deployment "$3" --replicas 0 >/dev/null
}

# scale_up CLUSTER NS DEPLOY: back to the recorded replicas (1 if none).
scale_up() {
  local r
  r=$(djp "$1" "$2" "$3" "{.metadata.annotations.${ANN//./\\.}/stopped-replicas}")
  if [[ -z $r ]]; then
    r=$(djp "$1" "$2" "$3" '{.spec.replicas}')
    [[ $r != 0 ]] || r=1
  fi
  kc "$1" scale -n "$2" deployment "$3" --replicas "$r" >/dev/null
  kc "$1" annotate -n "$2" deployment "$3" "$ANN/stopped-replicas-" >/dev/null 2>&1 || true
}

stop_agent() {
  local cl=$1 p=$2 d
  [[ $cl != hub ]] || die "stop: the hub runs no klusterlet"
  d=$(agent_deploy "$cl" "$p")
  if exists "$cl" "$OPERATOR_NS" "$OPERATOR"; then
    scale_down "$cl" "$OPERATOR_NS" "$OPERATOR"
    wait_gone "$cl" "$OPERATOR_NS" "$OPERATOR"
  fi
  scale_down "$cl" "$AGENT_NS" "$d"
  wait_gone "$cl" "$AGENT_NS" "$d"
  log "$cl: $p stopped ($AGENT_NS/$d and $OPERATOR_NS/$OPERATOR at 0 replicas)"
}

start_agent() {
  local cl=$1 p=$2 d other stopped=
  [[ $cl != hub ]] || die "start: the hub runs no klusterlet"
  d=$(agent_deploy "$cl" "$p")
  scale_up "$cl" "$AGENT_NS" "$d"
  wait_ready "$cl" "$AGENT_NS" "$d"
  # The operator comes back once no agent of the member is stopped.
  for other in $(kc "$cl" get deployment -n "$AGENT_NS" -o 'jsonpath={range .items[*]}{.metadata.name}={.metadata.annotations.e2e\.fleetset\.io/stopped-replicas}{" "}{end}'); do
    [[ ${other#*=} == "" ]] || stopped+=" ${other%%=*}"
  done
  if [[ -n $stopped ]]; then
    log "$cl: $p started ($AGENT_NS/$d); still stopped:$stopped, so $OPERATOR_NS/$OPERATOR stays at 0"
    return
  fi
  if exists "$cl" "$OPERATOR_NS" "$OPERATOR" &&
    [[ -n $(djp "$cl" "$OPERATOR_NS" "$OPERATOR" "{.metadata.annotations.${ANN//./\\.}/stopped-replicas}") ]]; then
    scale_up "$cl" "$OPERATOR_NS" "$OPERATOR"
  fi
  log "$cl: $p started ($AGENT_NS/$d Ready), klusterlet operator restored"
}

# ---------------------------------------------------------------- restart

# json_str S: S as a JSON string.
json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}
# json_append ARRAY_JSON ARG...: the JSON array with the strings appended.
json_append() {
  local arr=$1 items= a
  shift
  for a in "$@"; do items+=,$(json_str "$a"); done
  arr=${arr:-[]}
  if [[ $arr == "[]" ]]; then echo "[${items#,}]"; else echo "${arr%]}$items]"; fi
}

# rebuild PROC VERSION CLUSTER: build the image fleetset-PROC:TAG with
# VERSION as its version string, load it into the kind cluster; sets REBUILT
# to the image.
REBUILT=
rebuild() {
  local p=$1 v=$2 cl=$3 b tag out
  case $p in
    fleetset-hub) b=hub ;;
    fleetset-scheduler) b=scheduler ;;
    *) die "FLEET_REBUILD_VERSION: $p is not built from this repository" ;;
  esac
  tag=$(printf '%s' "$v" | tr -c 'A-Za-z0-9_.-' '-' | cut -c1-128)
  out=$DIR/work/rebuild-$tag
  rm -rf "$out"
  mkdir -p "$out"
  # The Makefile's image archive: static binary on scratch, no Docker daemon.
  make -s -C "$REPO_ROOT" IMAGES_DIR="$out" IMAGE_TAG="$tag" VERSION="$v" "$out/fleetset-$b.tar" >&2 ||
    die "rebuilding $p failed; $cl/$p left as it was"
  load_archive "$cl" "$out/fleetset-$b.tar" >/dev/null
  log "rebuilt fleetset-$b:$tag (version $v, sha256 $(sha256sum "$out/fleetset-$b" | cut -c1-12)), loaded into fleetset-$cl"
  rm -rf "$out"
  REBUILT=fleetset-$b:$tag
}

# target CLUSTER PROC: "NAMESPACE DEPLOYMENT KIND" of a process; KIND is
# operator (its pods are deleted to restart it) or deployment.
target() {
  case $2 in
    fleetset-hub | fleetset-scheduler) echo "$FLEETSET_NS $2 deployment" ;;
    registration-agent | work-agent) echo "$AGENT_NS $(agent_deploy "$1" "$2") operator" ;;
    klusterlet) echo "$OPERATOR_NS $OPERATOR deployment" ;;
    */*) echo "${2%%/*} ${2#*/} deployment" ;;
    *) die "unknown process $2 (fleetset-hub, fleetset-scheduler, registration-agent, work-agent, klusterlet, NAMESPACE/DEPLOYMENT)" ;;
  esac
}

# spec_of CLUSTER NS DEPLOY: "IMAGE ARGS_JSON" of container 0.
spec_of() {
  local image args
  image=$(djp "$1" "$2" "$3" '{.spec.template.spec.containers[0].image}') || return 1
  args=$(djp "$1" "$2" "$3" '{.spec.template.spec.containers[0].args}') || return 1
  echo "$image ${args:-[]}"
}

# owned_by_work CLUSTER NS DEPLOY: the Deployment was applied by OCM's work
# agent (an add-on's or another ManifestWork's), which reverts changes to it.
owned_by_work() {
  [[ " $(djp "$1" "$2" "$3" '{.metadata.ownerReferences[*].kind}') " == *" AppliedManifestWork "* ]]
}

# restart_plain CLUSTER NS DEPLOY IMAGE ARG...: patch container 0 of a
# Deployment nobody reconciles; without IMAGE and ARG, restore it.
restart_plain() {
  local cl=$1 ns=$2 d=$3 image=$4; shift 4
  local jp="{.metadata.annotations.${ANN//./\\.}/original-image}" orig_image orig_args cur_image cur_args new_args
  orig_image=$(djp "$cl" "$ns" "$d" "$jp")
  orig_args=$(djp "$cl" "$ns" "$d" "{.metadata.annotations.${ANN//./\\.}/original-args}")
  cur_image=$(djp "$cl" "$ns" "$d" '{.spec.template.spec.containers[0].image}')
  cur_args=$(djp "$cl" "$ns" "$d" '{.spec.template.spec.containers[0].args}')
  [[ -n $cur_args ]] || cur_args=[]
  if [[ -z $orig_image ]]; then
    orig_image=$cur_image orig_args=$cur_args
    if [[ -n $image || $# -gt 0 ]]; then
      kc "$cl" annotate -n "$ns" deployment "$d" --overwrite "$ANN/original-image=$orig_image" "$ANN/original-args=$orig_args" >/dev/null
    fi
  fi
  [[ -n $image ]] || image=$orig_image
  new_args=$(json_append "$orig_args" "$@")
  if [[ $image == "$cur_image" && $new_args == "$cur_args" ]]; then
    kc "$cl" rollout restart -n "$ns" deployment "$d" >/dev/null
  else
    kc "$cl" patch -n "$ns" deployment "$d" --type json -p "[
      {\"op\":\"replace\",\"path\":\"/spec/template/spec/containers/0/image\",\"value\":$(json_str "$image")},
      {\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args\",\"value\":$new_args}]" >/dev/null
  fi
  if [[ $image == "$orig_image" && $# -eq 0 ]]; then
    kc "$cl" annotate -n "$ns" deployment "$d" "$ANN/original-image-" "$ANN/original-args-" >/dev/null 2>&1 || true
  fi
  log "$cl: $ns/$d: image $image, args $new_args"
}

# addon_template: the name of the fleetset add-on's own AddOnTemplate.
# (the add-on manager moves spec.supportedConfigs into
# status.defaultConfigReferences).
addon_template() {
  local t
  t=$(kc hub get clustermanagementaddon "$ADDON" -o 'jsonpath={.status.defaultConfigReferences[?(@.resource=="addontemplates")].desiredConfig.name}')
  [[ -n $t ]] || t=$(kc hub get clustermanagementaddon "$ADDON" -o 'jsonpath={.spec.supportedConfigs[?(@.resource=="addontemplates")].defaultConfig.name}')
  [[ -n $t ]] || die "ClusterManagementAddOn $ADDON has no default AddOnTemplate"
  echo "$t"
}

# template_container TEMPLATE NS DEPLOY: "INDEX IMAGE ARGS_JSON" of container 0
# of the Deployment NS/DEPLOY in an AddOnTemplate.
template_container() {
  local line n=0 idx= image args
  while IFS= read -r line; do
    [[ $line == "Deployment/$2/$3" ]] && idx=$n
    n=$((n + 1))
  done < <(kc hub get addontemplate "$1" -o 'jsonpath={range .spec.agentSpec.workload.manifests[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}')
  [[ -n $idx ]] || die "AddOnTemplate $1 has no Deployment $2/$3"
  image=$(kc hub get addontemplate "$1" -o "jsonpath={.spec.agentSpec.workload.manifests[$idx].spec.template.spec.containers[0].image}")
  args=$(kc hub get addontemplate "$1" -o "jsonpath={.spec.agentSpec.workload.manifests[$idx].spec.template.spec.containers[0].args}")
  echo "$idx $image ${args:-[]}"
}

# restart_addon CLUSTER NS DEPLOY IMAGE ARG...: put the member's fleetset
# add-on on a copy of its AddOnTemplate with IMAGE and the extra args, or,
# without IMAGE and ARG, back on the add-on's own configs. Sets
# ADDON_TEMPLATE to the AddOnTemplate that is to render the Deployment, empty
# when there was nothing to change.
ADDON_TEMPLATE=
restart_addon() {
  local cl=$1 ns=$2 d=$3 image=$4; shift 4
  local ovr=$ADDON-e2e-$cl base orig tmp idx base_image base_args new_args configs g r cns cname
  ADDON_TEMPLATE=
  kc hub get managedclusteraddon -n "$cl" "$ADDON" -o name >/dev/null ||
    die "$cl: $ns/$d is applied by a ManifestWork but the hub has no ManagedClusterAddOn $cl/$ADDON"
  base=$(addon_template)
  orig=$(kc hub get managedclusteraddon -n "$cl" "$ADDON" -o "jsonpath={.metadata.annotations.${ANN//./\\.}/original-configs}")
  if [[ -z $image && $# -eq 0 ]]; then
    [[ -n $orig ]] || return 0
    [[ $orig != "[]" ]] || orig=null
    kc hub patch managedclusteraddon -n "$cl" "$ADDON" --type merge \
      -p "{\"metadata\":{\"annotations\":{\"$ANN/original-configs\":null}},\"spec\":{\"configs\":$orig}}" >/dev/null
    log "$cl: ManagedClusterAddOn $cl/$ADDON back on its own configs ($orig)"
    ADDON_TEMPLATE=$base
    return 0
  fi
  read -r idx base_image base_args <<<"$(template_container "$base" "$ns" "$d")"
  [[ -n $idx && -n $base_image ]] || die "AddOnTemplate $base: no container of Deployment $ns/$d"
  [[ -n $image ]] || image=$base_image
  new_args=$(json_append "$base_args" "$@")
  tmp=$(mktemp)
  kc hub get addontemplate "$base" -o json >"$tmp"
  "$KUBECTL" patch --local -f "$tmp" --type merge -o json \
    -p '{"metadata":{"resourceVersion":null,"uid":null,"creationTimestamp":null,"generation":null,"managedFields":null,"annotations":null,"ownerReferences":null,"finalizers":null}}' |
    "$KUBECTL" patch --local -f - --type json -o json -p "[
      {\"op\":\"replace\",\"path\":\"/metadata/name\",\"value\":\"$ovr\"},
      {\"op\":\"replace\",\"path\":\"/spec/agentSpec/workload/manifests/$idx/spec/template/spec/containers/0/image\",\"value\":$(json_str "$image")},
      {\"op\":\"add\",\"path\":\"/spec/agentSpec/workload/manifests/$idx/spec/template/spec/containers/0/args\",\"value\":$new_args}]" >"$tmp.new"
  kc hub apply -f "$tmp.new" >/dev/null
  rm -f "$tmp" "$tmp.new"
  if [[ -z $orig ]]; then
    orig=$(kc hub get managedclusteraddon -n "$cl" "$ADDON" -o 'jsonpath={.spec.configs}')
    kc hub annotate managedclusteraddon -n "$cl" "$ADDON" "$ANN/original-configs=${orig:-[]}" >/dev/null
  fi
  # The ManagedClusterAddOn's other configs (e.g. an AddOnDeploymentConfig) stay.
  configs="{\"group\":\"addon.open-cluster-management.io\",\"resource\":\"addontemplates\",\"name\":\"$ovr\"}"
  while IFS='|' read -r g r cns cname; do
    [[ -n $r && $r != addontemplates ]] || continue
    configs+=",{\"group\":$(json_str "$g"),\"resource\":$(json_str "$r"),${cns:+\"namespace\":$(json_str "$cns"),}\"name\":$(json_str "$cname")}"
  done < <(kc hub get managedclusteraddon -n "$cl" "$ADDON" -o 'jsonpath={range .spec.configs[*]}{.group}|{.resource}|{.namespace}|{.name}{"\n"}{end}')
  kc hub patch managedclusteraddon -n "$cl" "$ADDON" --type merge -p "{\"spec\":{\"configs\":[$configs]}}" >/dev/null
  log "$cl: ManagedClusterAddOn $cl/$ADDON on AddOnTemplate $ovr: image $image, args $new_args"
  ADDON_TEMPLATE=$ovr
}

# wait_template CLUSTER NS DEPLOY IMAGE ARGS_JSON: the work agent applied the
# add-on's rendering to the Deployment (the image compared without its
# registry, which an AddOnDeploymentConfig may mirror).
wait_template() {
  local deadline=$((SECONDS + WAIT)) got
  while :; do
    got=$(spec_of "$1" "$2" "$3") || got=
    [[ ${got#* } == "$5" && ${got%% *} == *"${4##*/}" ]] && return 0
    ((SECONDS < deadline)) || die "$1: $2/$3 is '$got' after ${WAIT}s, want '$4 $5' from the add-on"
    sleep 1
  done
}

restart() {
  local cl=$1 p=$2; shift 2
  local ns d kind image= old sel before idx want_image want_args
  read -r ns d kind <<<"$(target "$cl" "$p")"
  exists "$cl" "$ns" "$d" || die "$cl: no Deployment $ns/$d"
  [[ $(djp "$cl" "$ns" "$d" '{.spec.replicas}') != 0 ]] || die "$cl: $ns/$d is scaled to 0 (stopped): start it first"
  if [[ $kind == operator && ($# -gt 0 || -n ${FLEET_REBUILD_VERSION:-}) ]]; then
    die "$cl/$p is managed by the klusterlet operator: it restarts only as it is (no ARG, no FLEET_REBUILD_VERSION)"
  fi
  if [[ -n ${FLEET_REBUILD_VERSION:-} ]]; then
    rebuild "$p" "$FLEET_REBUILD_VERSION" "$cl"
    image=$REBUILT
  fi
  sel=$(selector "$cl" "$ns" "$d")
  old=$(uids "$cl" "$ns" "$sel")
  before=$(spec_of "$cl" "$ns" "$d")
  if [[ $kind == operator ]]; then
    kc "$cl" delete pod -n "$ns" -l "$sel" --wait=false >/dev/null
  elif owned_by_work "$cl" "$ns" "$d"; then
    # Applied by the work agent, which would revert a patch: go through the add-on.
    restart_addon "$cl" "$ns" "$d" "$image" "$@"
    if [[ -n $ADDON_TEMPLATE ]]; then
      read -r idx want_image want_args <<<"$(template_container "$ADDON_TEMPLATE" "$ns" "$d")"
      wait_template "$cl" "$ns" "$d" "$want_image" "$want_args"
      [[ $ADDON_TEMPLATE == "$ADDON-e2e-$cl" ]] || kc hub delete addontemplate "$ADDON-e2e-$cl" --ignore-not-found >/dev/null
    fi
    # The same rendering as before (nothing to change or restore): restart by hand.
    [[ $(spec_of "$cl" "$ns" "$d") != "$before" ]] || kc "$cl" delete pod -n "$ns" -l "$sel" --wait=false >/dev/null
  else
    restart_plain "$cl" "$ns" "$d" "$image" "$@"
  fi
  EXPECT_SPEC=$(spec_of "$cl" "$ns" "$d")
  # shellcheck disable=SC2086
  wait_new "$cl" "$ns" "$d" $old
  log "$cl/$p restarted ($ns/$d: $(spec_of "$cl" "$ns" "$d"))"
}

case $action in
  stop) stop_agent "$c" "${3:-registration-agent}" ;;
  start) start_agent "$c" "${3:-registration-agent}" ;;
  status)
    d=$(agent_deploy "$c" "${3:-registration-agent}")
    if [[ $(djp "$c" "$AGENT_NS" "$d" '{.status.readyReplicas}') -gt 0 ]] 2>/dev/null; then echo running; else echo stopped; exit 1; fi ;;
  restart) [[ $# -ge 3 ]] || die "usage: $0 restart CLUSTER PROC [ARG...]"; p=$3; shift 3; restart "$c" "$p" "$@" ;;
  *) die "unknown action $action" ;;
esac
