#!/usr/bin/env bash
# idle.sh prints how much CPU the kind fleet's node containers use
# (`make kind-idle`): per container and in total, in cores (CPU-seconds per
# second) over a window of KIND_IDLE_SECONDS (default 60), read from each
# container's cgroup CPU counter at the window's start and end, plus the
# host's load average and the host's own CPU use over the same window. The
# counters are the kernel's (cgroup v1 cpuacct.usage, cgroup v2 cpu.stat
# usage_usec), so the figure is what the containers consumed, whatever else
# the host was doing.
#
#   e2e/kind/idle.sh [LABEL]   # LABEL names the state in the summary line
#
# The summary line, for the closing notes and for kind-up's log:
#
#   kind-idle <LABEL>: 0.42 cores over 60 s (10 nodes; hub 0.08, east 0.11, west 0.12, north 0.11); host 0.61 cores; load 1.20 0.90 0.70
#
# Only containers of kind clusters named fleetset-* are counted (kind's label
# io.x-k8s.kind.cluster); the registry and other containers are not.
set -euo pipefail
WINDOW=${KIND_IDLE_SECONDS:-60}
LABEL=${1:-now}

docker info >/dev/null 2>&1 || { echo "idle.sh: docker is not running" >&2; exit 1; }

# cpu_ns ID: the container's CPU time in nanoseconds.
cpu_ns() {
  local id=$1 f
  for f in /sys/fs/cgroup/cpu,cpuacct/docker/$id/cpuacct.usage /sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage; do
    [[ -r $f ]] && { cat "$f"; return; }
  done
  for f in /sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat /sys/fs/cgroup/docker/$id/cpu.stat; do
    [[ -r $f ]] && { awk '$1 == "usage_usec" {printf "%.0f\n", $2 * 1000}' "$f"; return; }
  done
  echo "idle.sh: no CPU counter for container $id" >&2
  return 1
}
# host_ns: the host's busy CPU time in nanoseconds (/proc/stat, all but idle and iowait).
host_ns() {
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {printf "%.0f\n", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz}' /proc/stat
}

declare -A NAME CLUSTER START
ids=()
while read -r id name cluster; do
  [[ $cluster == fleetset-* ]] || continue
  ids+=("$id"); NAME[$id]=$name; CLUSTER[$id]=${cluster#fleetset-}
done < <(docker ps --no-trunc --format '{{.ID}} {{.Names}} {{.Label "io.x-k8s.kind.cluster"}}')
((${#ids[@]})) || { echo "idle.sh: no kind node of a fleetset-* cluster is running" >&2; exit 1; }

for id in "${ids[@]}"; do START[$id]=$(cpu_ns "$id"); done
h0=$(host_ns)
t0=$(date +%s%N)
sleep "$WINDOW"
t1=$(date +%s%N)
h1=$(host_ns)
elapsed=$((t1 - t0))

declare -A PER_CLUSTER
total=0
rows=()
for id in "${ids[@]}"; do
  used=$(($(cpu_ns "$id") - START[$id]))
  total=$((total + used))
  PER_CLUSTER[${CLUSTER[$id]}]=$((${PER_CLUSTER[${CLUSTER[$id]}]:-0} + used))
  rows+=("$(printf '%-32s %8s' "${NAME[$id]}" "$(awk -v u="$used" -v e="$elapsed" 'BEGIN {printf "%.3f", u / e}')")")
done
printf '%-32s %8s\n' CONTAINER CORES
printf '%s\n' "${rows[@]}" | sort
cores() { awk -v u="$1" -v e="$elapsed" 'BEGIN {printf "%.2f", u / e}'; }
per=""
for c in hub east west north; do
  [[ -n ${PER_CLUSTER[$c]:-} ]] && per+="${per:+, }$c $(cores "${PER_CLUSTER[$c]}")"
done
for c in "${!PER_CLUSTER[@]}"; do
  [[ " hub east west north " == *" $c "* ]] || per+="${per:+, }$c $(cores "${PER_CLUSTER[$c]}")"
done
printf 'kind-idle %s: %s cores over %d s (%d nodes; %s); host %s cores; load %s\n' \
  "$LABEL" "$(cores "$total")" "$((elapsed / 1000000000))" "${#ids[@]}" "$per" \
  "$(cores $((h1 - h0)))" "$(cut -d' ' -f1-3 /proc/loadavg)"
