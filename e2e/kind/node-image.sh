#!/usr/bin/env bash
# node-image.sh builds the kind node image for the pinned Kubernetes release
# offline (`make kind-node-image`): no registry is ever asked for anything.
# It does what `kind build node-image` does (kind v0.33.0,
# pkg/build/nodeimage/buildcontext.go) from parts built here:
#   - base: Debian bookworm by debootstrap from the apt mirror, with kind's
#     base files (images/base/files in the kind module) and the RUN steps of
#     kind's images/base/Dockerfile; Debian's containerd, runc and CNI
#     plugins stand in for the ones kind compiles.
#   - Kubernetes: kubeadm, kubelet, kubectl, kube-apiserver,
#     kube-controller-manager, kube-scheduler and kube-proxy from the module
#     e2e/kind/k8s (k8s.io/kubernetes, the release fleetset builds against),
#     static, with the version stamped in (kubeadm refuses v0.0.0-master).
#   - The images kubeadm deploys, tagged as kubeadm expects them: the
#     control plane on scratch, kube-proxy on the base (it runs iptables),
#     etcd 3.6.5 (e2e/kind/etcd) and CoreDNS v1.12.1 (e2e/kind/coredns) from
#     their modules, pause 3.10.1 compiled from the C source in the
#     Kubernetes module.
#   - agnhost, Kubernetes' e2e test image, from the same module.
#   - The pod network: kind's default CNI manifest is the DaemonSet
#     pod-network (node/default-cni.yaml, node/pod-network.sh) instead of
#     kindnetd: per-node ranges from spec.podCIDR, routes between nodes.
#   - containerd settings this VM needs: restrict_oom_score_adj (no
#     CAP_SYS_RESOURCE), the pause image of this release, and a proxy on a
#     closed loopback port, so that a pod whose image is missing fails at
#     once instead of reaching for a registry.
# Each stage is cached under $KIND_CACHE_DIR and by image labels holding a
# hash of the stage's inputs: a second run with nothing changed takes
# seconds. Needs a running dockerd (make kind-host) and root for debootstrap.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO_ROOT/e2e/kind
CACHE=${KIND_CACHE_DIR:-$REPO_ROOT/.cache/kind}
GO=${GO:-go}
K8S_VERSION=$(cd "$HERE/k8s" && $GO list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)
NODE_IMAGE=${KIND_NODE_IMAGE:-fleetset-kind-node:$K8S_VERSION}
BASE_IMAGE=fleetset-kind-base:bookworm
KIND_MODULE=$($GO env GOMODCACHE)/sigs.k8s.io/kind@${KIND_VERSION:-v0.33.0}
# `go list -m` answers an empty Dir for a module not yet in the module cache:
# download it first, so that a fresh machine finds the pause source.
(cd "$HERE/k8s" && $GO mod download k8s.io/kubernetes)
K8S_MODULE=$(cd "$HERE/k8s" && $GO list -m -f '{{.Dir}}' k8s.io/kubernetes)
[[ -d $K8S_MODULE ]] || { echo "node-image.sh: k8s.io/kubernetes not in the module cache" >&2; exit 1; }
DEBIAN_MIRROR=${DEBIAN_MIRROR:-$(awk '$1 == "URIs:" {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The versions kubeadm deploys (cmd/kubeadm/app/constants).
ETCD_TAG=3.6.5-0 COREDNS_TAG=v1.12.1 PAUSE_TAG=3.10.1
PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,conntrack,ethtool,socat,mount,kmod,ca-certificates,procps,iproute2,util-linux,libseccomp2,pigz,nfs-common,fuse-overlayfs,jq,e2fsprogs
export DOCKER_BUILDKIT=0 # the classic builder: FROM scratch or a local image, no pulls
log() { printf '%s kind-node-image: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
label() { docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }
T0=$SECONDS

docker info >/dev/null 2>&1 || { echo "node-image.sh: docker is not running (make kind-host)" >&2; exit 1; }
[[ -d $KIND_MODULE ]] || (cd "$REPO_ROOT" && $GO mod download -x "sigs.k8s.io/kind@${KIND_VERSION:-v0.33.0}" >/dev/null 2>&1) || true
[[ -d $KIND_MODULE ]] || { echo "node-image.sh: kind module source not found at $KIND_MODULE" >&2; exit 1; }
mkdir -p "$CACHE"

node_inputs=$(cat "$0" "$HERE"/node/* "$HERE"/k8s/go.sum "$HERE"/etcd/go.sum "$HERE"/coredns/go.sum | sha256sum | cut -c1-16)
if [[ $(label "$NODE_IMAGE" io.fleetset.kind.inputs) == "$node_inputs" ]]; then
  log "$NODE_IMAGE is current ($((SECONDS - T0))s)"
  exit 0
fi

# 1. Base image.
base_inputs=$(echo "$PACKAGES $DEBIAN_MIRROR $(sed -n '/^# 1. Base/,/^# 2. /p' "$0")" | sha256sum | cut -c1-16)
if [[ $(label "$BASE_IMAGE" io.fleetset.kind.inputs) != "$base_inputs" ]]; then
  [[ $(id -u) == 0 ]] || { echo "node-image.sh: debootstrap needs root" >&2; exit 1; }
  R=$CACHE/rootfs
  rm -rf "$R"
  log "debootstrap bookworm from $DEBIAN_MIRROR"
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$R" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  F=$KIND_MODULE/images/base/files
  install -m 0755 "$F"/usr/local/bin/* "$R/usr/local/bin/"
  mkdir -p "$R/kind/bin" "$R/etc/systemd/system/kubelet.service.d" "$R/etc/containerd" "$R/opt/cni/bin"
  install -m 0644 "$F/kind/README.txt" "$R/kind/"
  install -m 0755 "$F"/kind/bin/* "$R/kind/bin/"
  install -m 0644 "$F/etc/crictl.yaml" "$R/etc/"
  install -m 0644 "$F/etc/containerd/config.toml" "$R/etc/containerd/"
  install -m 0644 "$F/etc/default/kubelet" "$R/etc/default/"
  install -m 0644 "$F"/etc/sysctl.d/* "$R/etc/sysctl.d/"
  install -m 0644 "$F"/etc/systemd/system/*.service "$F"/etc/systemd/system/*.slice "$R/etc/systemd/system/"
  install -m 0644 "$F"/etc/systemd/system/kubelet.service.d/* "$R/etc/systemd/system/kubelet.service.d/"
  # Debian's containerd is /usr/bin/containerd and its CNI plugins live in
  # /usr/lib/cni; kind's units and containerd look in /usr/local/bin and
  # /opt/cni/bin.
  ln -sf /usr/bin/containerd "$R/usr/local/bin/containerd"
  for p in "$R"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/${p##*/}" "$R/opt/cni/bin/"; done
  chroot "$R" /bin/bash -ec '
    find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
    echo ReadKMsg=no >> /etc/systemd/journald.conf
    ln -sf /usr/lib/systemd/systemd /sbin/init
    systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
    systemctl mask systemd-binfmt.service >/dev/null 2>&1
    mkdir -p /etc/kubernetes/manifests
    ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer | length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" > /etc/containerd/cri-base.json
  '
  rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
  log "importing $BASE_IMAGE"
  tar -C "$R" -c . | docker import -c 'ENV container=docker' -c 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
    -c "LABEL io.fleetset.kind.inputs=$base_inputs" - "$BASE_IMAGE" >/dev/null
  rm -rf "$R"
fi

# 2. Binaries (Go's build cache makes a second build take seconds).
B=$CACHE/bin
mkdir -p "$B"
log "building Kubernetes $K8S_VERSION, etcd $ETCD_TAG, CoreDNS $COREDNS_TAG"
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$HERE/k8s" && CGO_ENABLED=0 $GO build -trimpath -ldflags "$ldflags" -o "$B/" \
  k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/test/images/agnhost)
(cd "$HERE/etcd" && CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w" -o "$B/etcd" go.etcd.io/etcd/server/v3)
(cd "$HERE/coredns" && CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w" -o "$B/coredns" github.com/coredns/coredns)
if [[ ! -x $B/pause || $B/pause -ot "$K8S_MODULE/build/pause/linux/pause.c" ]]; then
  gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_TAG" -o "$B/pause" "$K8S_MODULE/build/pause/linux/pause.c"
  strip "$B/pause"
fi

# 3. The images kubeadm deploys.
ctx=$CACHE/ctx
image() { # image tag, binary, [base]; the binary goes to /usr/local/bin
  local tag=$1 bin=$2 base=${3:-scratch}
  rm -rf "$ctx" && mkdir -p "$ctx/usr/local/bin" "$ctx/tmp" "$ctx/var"
  cp "$B/$bin" "$ctx/usr/local/bin/"
  chmod 1777 "$ctx/tmp"
  printf 'FROM %s\nCOPY / /\nENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$base" "$bin" |
    docker build -q -t "$tag" -f - "$ctx" >/dev/null
}
images=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "registry.k8s.io/$c:$K8S_VERSION" "$c"; images+=("registry.k8s.io/$c:$K8S_VERSION")
done
image "registry.k8s.io/kube-proxy:$K8S_VERSION" kube-proxy "$BASE_IMAGE"; images+=("registry.k8s.io/kube-proxy:$K8S_VERSION")
# agnhost: Kubernetes' own e2e test image (netexec, connect, ...), for the
# network check and as a workload that runs a real process.
AGNHOST_TAG=$(cat "$K8S_MODULE/test/images/agnhost/VERSION")
image "registry.k8s.io/e2e-test-images/agnhost:$AGNHOST_TAG" agnhost; images+=("registry.k8s.io/e2e-test-images/agnhost:$AGNHOST_TAG")
image "registry.k8s.io/etcd:$ETCD_TAG" etcd; images+=("registry.k8s.io/etcd:$ETCD_TAG")
# CoreDNS runs as root: docker save drops the file capability that lets a
# non-root CoreDNS bind port 53.
image "registry.k8s.io/coredns/coredns:$COREDNS_TAG" coredns; images+=("registry.k8s.io/coredns/coredns:$COREDNS_TAG")
rm -rf "$ctx" && mkdir -p "$ctx" && cp "$B/pause" "$ctx/"
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' | docker build -q -t "registry.k8s.io/pause:$PAUSE_TAG" -f - "$ctx" >/dev/null
images+=("registry.k8s.io/pause:$PAUSE_TAG")
# The pod network's DaemonSet (node/default-cni.yaml): the base (bash,
# iproute2, iptables) with kubectl and node/pod-network.sh.
rm -rf "$ctx" && mkdir -p "$ctx" && cp "$B/kubectl" "$HERE/node/pod-network.sh" "$ctx/"
printf 'FROM %s\nCOPY kubectl pod-network.sh /usr/local/bin/\nENTRYPOINT ["/usr/local/bin/pod-network.sh"]\n' "$BASE_IMAGE" |
  docker build -q -t fleetset-kind-pod-network:v1 -f - "$ctx" >/dev/null
images+=(fleetset-kind-pod-network:v1)
rm -rf "$ctx"

# 4. The node: what kind's buildcontext does, minus the pulls.
log "assembling $NODE_IMAGE"
C=fleetset-kind-node-build
docker rm -f "$C" >/dev/null 2>&1 || true
docker run --pull=never -d --entrypoint=sleep --name="$C" --security-opt seccomp=unconfined "$BASE_IMAGE" infinity >/dev/null
trap 'docker rm -f "$C" >/dev/null 2>&1 || true' EXIT
for b in kubeadm kubelet kubectl; do docker cp "$B/$b" "$C:/usr/bin/$b"; done
docker exec "$C" mkdir -p /kind/manifests
docker cp "$HERE/node/default-cni.yaml" "$C:/kind/manifests/default-cni.yaml"
docker exec "$C" bash -ec "
  chown root:root /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl /kind/manifests/default-cni.yaml
  chmod 0755 /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl
  echo $K8S_VERSION > /kind/version
  sed -i 's#sandbox_image = .*#sandbox_image = \"registry.k8s.io/pause:$PAUSE_TAG\"#' /etc/containerd/config.toml
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
  mkdir -p /etc/systemd/system/containerd.service.d
  printf '[Service]\\nEnvironment=HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 NO_PROXY=\\n' > /etc/systemd/system/containerd.service.d/no-pull.conf
"
docker save "${images[@]}" -o "$CACHE/node-images.tar"
docker exec "$C" bash -c 'nohup containerd >/dev/null 2>&1 &'
docker exec "$C" bash -c 'for i in $(seq 30); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1'
docker exec -i "$C" ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - <"$CACHE/node-images.tar" >/dev/null
docker exec "$C" ctr --namespace=k8s.io images list -q | grep -v '^import-' >&2
docker exec "$C" pkill containerd || true
sleep 2
rm -f "$CACHE/node-images.tar"
docker commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change "LABEL io.fleetset.kind.inputs=$node_inputs" "$C" "$NODE_IMAGE" >/dev/null
log "$NODE_IMAGE built in $((SECONDS - T0))s ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f MiB", $1 / 1048576}'))"
