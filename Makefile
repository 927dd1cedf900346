# fleetset — build, test and run targets. Tools and binaries go into the
# git-ignored bin/; every binary is built from a pinned Go module.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
GO ?= go
CONTROLLER_GEN_VERSION ?= v0.19.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
CODE_GENERATOR_VERSION ?= v0.34.4
CONVERSION_GEN ?= $(LOCALBIN)/conversion-gen
DEFAULTER_GEN ?= $(LOCALBIN)/defaulter-gen
GOTESTFLAGS ?=
export KUBEBUILDER_ASSETS ?= $(LOCALBIN)

.PHONY: all
all: build

##@ General

# help prints the targets that have a `## description`, by `##@ section`,
# as kubebuilder's Makefiles do.
.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: $(LOCALBIN)/fleetset-scheduler $(LOCALBIN)/fleetset-hub $(LOCALBIN)/kubectl-fleetset ## Build the fleetset binaries into bin/.

# Version of the fleetset binaries and images: git describe of the work tree
# (v0.0.0-dev outside git), evaluated once per make run.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
VERSION := $(VERSION)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_COMMIT := $(GIT_COMMIT)
# Link flags per binary. fleetset-hub --version prints main.version.
# fleetset-scheduler --version prints kube-scheduler's
# k8s.io/component-base/version: the pinned k8s.io/kubernetes version with
# fleetset's as semver build metadata (v1.34.4+fleetset.<VERSION>, which
# kube-scheduler's compatibility version parses as 1.34.4; it must parse, so
# it is left alone if the module version is unknown); --version=raw adds the
# commit and tree state.
K8S_VERSION = $(shell $(GO) list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes 2>/dev/null)
K8S_VERSION_PKG := k8s.io/component-base/version
GO_LDFLAGS_hub = -X main.version=$(VERSION)
GO_LDFLAGS_scheduler = $(if $(filter v%,$(K8S_VERSION)),-X $(K8S_VERSION_PKG).gitVersion=$(K8S_VERSION)+fleetset.$(subst +,-,$(subst _,-,$(subst /,-,$(VERSION))))) \
	-X $(K8S_VERSION_PKG).gitCommit=$(GIT_COMMIT) -X $(K8S_VERSION_PKG).gitTreeState=$(if $(filter %-dirty,$(VERSION)),dirty,clean)

# Go's build cache makes these cheap when nothing changed; .FORCE lets Go decide.
$(LOCALBIN)/fleetset-scheduler: .FORCE
	$(GO) build -ldflags '$(GO_LDFLAGS_scheduler)' -o $@ ./cmd/scheduler

$(LOCALBIN)/fleetset-hub: .FORCE
	$(GO) build -ldflags '$(GO_LDFLAGS_hub)' -o $@ ./cmd/hub

# The kubectl plugin: copied onto $PATH it runs as `kubectl fleetset`.
.PHONY: kubectl-fleetset
kubectl-fleetset: $(LOCALBIN)/kubectl-fleetset ## Build the kubectl plugin into bin/kubectl-fleetset.

$(LOCALBIN)/kubectl-fleetset: .FORCE
	$(GO) build -o $@ ./cmd/kubectl-fleetset

# Control-plane binaries built from the pinned k8s.io/kubernetes module
# (`go install k8s.io/kubernetes/cmd/...@v` does not work: replace directives).
$(LOCALBIN)/kube-apiserver:
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(LOCALBIN)/kube-controller-manager:
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kube-controller-manager

# etcd ≥ 3.5 built from the module pinned in e2e/tools/etcd (its own module,
# so etcd's dependencies stay out of ours). No system etcd is used.
$(LOCALBIN)/etcd: e2e/tools/etcd/go.mod
	@mkdir -p $(LOCALBIN)
	cd e2e/tools/etcd && $(GO) build -o $@ go.etcd.io/etcd/server/v3

# etcdctl of the same release, for the etcd image script's integration test.
$(LOCALBIN)/etcdctl: e2e/tools/etcd/go.mod
	@mkdir -p $(LOCALBIN)
	cd e2e/tools/etcd && $(GO) build -o $@ go.etcd.io/etcd/etcdctl/v3

# CoreDNS, the version kubeadm v1.34.4 deploys, pinned by the same module the
# kind node image builds it from: the local fleet runs one per member, for
# fleet DNS.
$(LOCALBIN)/coredns: e2e/kind/coredns/go.mod
	@mkdir -p $(LOCALBIN)
	cd e2e/kind/coredns && CGO_ENABLED=0 $(GO) build -trimpath -o $@ github.com/coredns/coredns

.PHONY: test-binaries
test-binaries: $(LOCALBIN)/kube-apiserver $(LOCALBIN)/etcd $(LOCALBIN)/etcdctl ## Build what integration tests need.

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(CONVERSION_GEN):
	GOBIN=$(LOCALBIN) $(GO) install k8s.io/code-generator/cmd/conversion-gen@$(CODE_GENERATOR_VERSION)

$(DEFAULTER_GEN):
	GOBIN=$(LOCALBIN) $(GO) install k8s.io/code-generator/cmd/defaulter-gen@$(CODE_GENERATOR_VERSION)

.PHONY: .FORCE
.FORCE:

##@ Images

IMAGE_TAG ?= dev
IMAGES_DIR ?= $(LOCALBIN)/images
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_SOURCE ?= github.com/fleetset/fleetset
OCIMAGE ?= $(LOCALBIN)/ocimage
# Time of the images and of every file in them: the last commit's, so that
# the same binaries give the same archives, byte for byte.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: images
images: $(IMAGES_DIR)/fleetset-hub.tar $(IMAGES_DIR)/fleetset-scheduler.tar ## Image archives bin/images/fleetset-{hub,scheduler}.tar: static binary on scratch, tag IMAGE_TAG (dev), no Docker daemon.

# ocimage (go-containerregistry) is built from its own module, for the host.
$(OCIMAGE): .FORCE
	cd e2e/tools/ocimage && GOOS=$$($(GO) env GOHOSTOS) GOARCH=$$($(GO) env GOHOSTARCH) $(GO) build -o $@ .

# The static binary (CGO_ENABLED=0; -trimpath: no host paths in it) is kept
# beside its archive, which `kind load image-archive` and `ctr images import`
# read.
$(IMAGES_DIR)/fleetset-%.tar: $(OCIMAGE) .FORCE
	@mkdir -p $(IMAGES_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(GO_LDFLAGS_$*)' -o $(IMAGES_DIR)/fleetset-$* ./cmd/$*
	$(OCIMAGE) -binary $(IMAGES_DIR)/fleetset-$* -arch $(IMAGE_ARCH) -tag fleetset-$*:$(IMAGE_TAG) -version $(VERSION) \
	  -revision $(GIT_COMMIT) -source $(IMAGE_SOURCE) -source-date-epoch $(SOURCE_DATE_EPOCH) -o $@

# The e2e suite's TCP echo server and client (e2e/kind/echo) for checks of
# the network between members (TestPodsReachAcrossMembers, fleet DNS):
# static, on scratch, loaded into the kind nodes by the tests themselves
# (framework.LoadImage).
.PHONY: kind-echo-image
kind-echo-image: $(IMAGES_DIR)/e2e-echo.tar ## Image archive bin/images/e2e-echo.tar (fleetset-e2e-echo:dev), the e2e echo server/client, no Docker daemon.

$(IMAGES_DIR)/e2e-echo.tar: $(OCIMAGE) .FORCE
	@mkdir -p $(IMAGES_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -o $(IMAGES_DIR)/echo ./e2e/kind/echo
	$(OCIMAGE) -binary $(IMAGES_DIR)/echo -arch $(IMAGE_ARCH) -tag fleetset-e2e-echo:$(IMAGE_TAG) -version $(VERSION) \
	  -revision $(GIT_COMMIT) -source $(IMAGE_SOURCE) -source-date-epoch $(SOURCE_DATE_EPOCH) -o $@

# The etcd image of the kind fleet's database tests (manifests/samples/etcd.yaml,
# docs/etcd.md, make e2e-kind-etcd): etcd and etcdctl from the release
# e2e/tools/etcd pins, static, plus Debian's static busybox (a POSIX shell,
# env, awk, sed, ...; `apt-get download busybox-static` once, kept in
# bin/images/etcd/) and the start and lifecycle action script
# e2e/kind/etcd-image/fleetset-etcd; tag fleetset-etcd:<etcd version>. No
# registry, no Docker daemon.
ETCD_VERSION = $(shell sed -En 's@^(require)?[[:space:]]*go.etcd.io/etcd/server/v3 v([^ ]+).*@\2@p' e2e/tools/etcd/go.mod)
ETCD_IMAGE_DIR = $(IMAGES_DIR)/etcd
ETCD_BUSYBOX_APPLETS = sh env awk sed grep cat sleep rm mkdir mv cp ls tr paste head tail cut wc date touch ps hostname nslookup nc wget
.PHONY: kind-etcd-image
kind-etcd-image: $(IMAGES_DIR)/fleetset-etcd.tar ## Image archive bin/images/fleetset-etcd.tar (fleetset-etcd:<etcd version>): etcd, etcdctl, busybox and the fleetset-etcd script, no Docker daemon.

$(ETCD_IMAGE_DIR)/busybox:
	@mkdir -p $(ETCD_IMAGE_DIR)
	cd $(ETCD_IMAGE_DIR) && rm -rf deb && mkdir deb && cd deb && apt-get download busybox-static && dpkg-deb -x busybox-static_*.deb root
	cp $(ETCD_IMAGE_DIR)/deb/root/bin/busybox $@ && rm -rf $(ETCD_IMAGE_DIR)/deb

$(IMAGES_DIR)/fleetset-etcd.tar: $(OCIMAGE) $(ETCD_IMAGE_DIR)/busybox .FORCE
	@mkdir -p $(ETCD_IMAGE_DIR)
	cd e2e/tools/etcd && CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -o $(ETCD_IMAGE_DIR)/etcd go.etcd.io/etcd/server/v3
	cd e2e/tools/etcd && CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -o $(ETCD_IMAGE_DIR)/etcdctl go.etcd.io/etcd/etcdctl/v3
	$(OCIMAGE) -binary $(ETCD_IMAGE_DIR)/etcd -arch $(IMAGE_ARCH) -tag fleetset-etcd:$(ETCD_VERSION) -version $(ETCD_VERSION) \
	  -title fleetset-etcd -revision $(GIT_COMMIT) -source $(IMAGE_SOURCE) -source-date-epoch $(SOURCE_DATE_EPOCH) \
	  -file /usr/local/bin/etcdctl=$(ETCD_IMAGE_DIR)/etcdctl -file /bin/busybox=$(ETCD_IMAGE_DIR)/busybox \
	  -file /usr/local/bin/fleetset-etcd=e2e/kind/etcd-image/fleetset-etcd \
	  $(foreach a,$(ETCD_BUSYBOX_APPLETS),-link /bin/$(a)=busybox) -link /usr/bin/env=/bin/busybox -o $@

# The etcd acceptance test's client (e2e/etcd/cmd/etcd-client), static on
# scratch, run as pods in two member clusters; and its checker (porcupine),
# run on the host.
.PHONY: kind-etcd-client-image
kind-etcd-client-image: $(IMAGES_DIR)/etcd-client.tar ## Image archive bin/images/etcd-client.tar (fleetset-etcd-client:dev), the etcd acceptance test's client, no Docker daemon.

$(IMAGES_DIR)/etcd-client.tar: $(OCIMAGE) .FORCE
	@mkdir -p $(IMAGES_DIR)
	cd e2e/etcd && CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -o $(IMAGES_DIR)/etcd-client ./cmd/etcd-client
	$(OCIMAGE) -binary $(IMAGES_DIR)/etcd-client -arch $(IMAGE_ARCH) -tag fleetset-etcd-client:$(IMAGE_TAG) -version $(VERSION) \
	  -revision $(GIT_COMMIT) -source $(IMAGE_SOURCE) -source-date-epoch $(SOURCE_DATE_EPOCH) -o $@

$(LOCALBIN)/etcd-check: .FORCE
	cd e2e/etcd && $(GO) build -o $@ ./cmd/etcd-check

##@ Generate

.PHONY: generate
generate: $(CONTROLLER_GEN) $(CONVERSION_GEN) $(DEFAULTER_GEN) ## Generate deepcopy, and the plugin args' conversion and defaulting functions.
	$(CONTROLLER_GEN) object:headerFile=/dev/null paths=./api/... paths=./plugins/apis/...
	$(CONVERSION_GEN) --go-header-file /dev/null --output-file zz_generated.conversion.go ./plugins/apis/config/v1
	$(DEFAULTER_GEN) --go-header-file /dev/null --output-file zz_generated.defaults.go ./plugins/apis/config/v1

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs into manifests/crds.
	$(CONTROLLER_GEN) crd:crdVersions=v1,maxDescLen=200,generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=manifests/crds
	$(CONTROLLER_GEN) rbac:roleName=fleetset-hub paths=./federation/... output:rbac:artifacts:config=manifests/hub
	cd e2e/tools && $(OCM_GOENV) $(GO) run ./addontemplate -scheduler ../../manifests/scheduler -crd ../../manifests/crds/fleetset.io_subsetplacements.yaml -o ../../manifests/addon/addontemplate.yaml

.PHONY: verify
verify: generate manifests ## gofmt, go vet, and generated files up to date.
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad" >&2; exit 1; fi
	$(GO) vet ./...
	@git diff --exit-code -- api plugins/apis manifests/crds manifests/hub/role.yaml manifests/addon || { echo "generated files are stale: run make generate manifests" >&2; exit 1; }
	@# No build outputs in git: no tracked file over 1 MiB, no tracked executable but a script (#!).
	@bad=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print $$2}'); \
	  if [ -n "$$bad" ]; then echo "tracked files over 1 MiB (build outputs belong in bin/): $$bad" >&2; exit 1; fi
	@bad=$$(git ls-files -s | awk '$$1 == "100755" {print $$4}' | while read -r f; do if [ -f "$$f" ] && [ "$$(head -c 2 "$$f")" != '#!' ]; then echo "$$f"; fi; done); \
	  if [ -n "$$bad" ]; then echo "tracked executables that are not scripts: $$bad" >&2; exit 1; fi

##@ Test

.PHONY: test
test: verify test-unit test-mutants test-alerts test-integration e2e chaos-short chaos-unsafe ## Unit, mutation, alert rule, integration, e2e (local fleet) tests, a 3-minute chaos run and the same against a hub broken on purpose: the README's test command.

.PHONY: test-unit
test-unit: ## Unit tests: pure logic and plugins in the real framework.
	$(GO) test $(GOTESTFLAGS) ./...
	$(GO) test $(GOTESTFLAGS) -tags fleetset_unsafe_nofence ./federation/failover/
	cd e2e/tools && $(OCM_GOENV) $(GO) test $(GOTESTFLAGS) ./...
	cd e2e/tools/ocimage && $(GO) test $(GOTESTFLAGS) ./...
	cd e2e/etcd && $(GO) test $(GOTESTFLAGS) ./...
	cd e2e/tools/provisioner && $(GO) test $(GOTESTFLAGS) ./...

# Mutation checks of the safety code: each mutant of
# e2e/tools/mutants/mutants.yaml (the majority rule of the member's fence,
# the contact instant, the never-adopt policy, ...) is applied to a scratch
# copy of the working tree in .cache/mutants/src, and its named test must
# fail there; the working tree is never written. MUTANTS=<regexp> runs only
# the mutants whose name matches.
MUTANTS ?=
.PHONY: test-mutants
test-mutants: $(LOCALBIN)/kube-apiserver $(LOCALBIN)/etcd ## Mutation checks: each known mutant of the safety code (e2e/tools/mutants/mutants.yaml) must fail its named test; prints a table.
	cd e2e/tools && $(OCM_GOENV) $(GO) build -o $(LOCALBIN)/mutants ./mutants
	$(LOCALBIN)/mutants -repo $(CURDIR) -work $(CURDIR)/.cache/mutants $(if $(MUTANTS),-only '$(MUTANTS)')

# promtool, from the Prometheus module pinned in e2e/tools/promtool (its own
# module: Prometheus's dependencies stay out of fleetset's go.mod), without
# the cloud service discoveries (remove_all_sd), which rule tests never use
# and which would take most of the build.
PROMTOOL ?= $(LOCALBIN)/promtool
$(PROMTOOL): e2e/tools/promtool/go.mod
	@mkdir -p $(LOCALBIN)
	cd e2e/tools/promtool && $(GO) build -tags remove_all_sd -o $@ github.com/prometheus/prometheus/cmd/promtool

.PHONY: test-alerts
test-alerts: $(PROMTOOL) ## Alert rules (manifests/monitoring): promtool check and unit tests, metric names against the code, PrometheusRule in sync.
	$(PROMTOOL) check rules manifests/monitoring/rules/fleetset.rules.yaml
	cd manifests/monitoring && $(PROMTOOL) test rules tests/*.yaml
	$(GO) test $(GOTESTFLAGS) ./manifests/monitoring/

.PHONY: test-integration
test-integration: test-binaries $(LOCALBIN)/kube-controller-manager ## Integration tests on a real kube-apiserver + etcd.
	$(GO) test $(GOTESTFLAGS) -tags integration -count=1 -timeout 20m ./plugins/... ./federation/... ./cmd/... ./member/...
	cd e2e/tools/provisioner && $(GO) test $(GOTESTFLAGS) -tags integration -count=1 -timeout 5m ./...
	cd e2e/etcd && PATH=$(LOCALBIN):$$PATH $(GO) test $(GOTESTFLAGS) -tags integration -count=1 -timeout 5m ./...

##@ Benchmarks

.PHONY: bench
bench: bench-unit bench-scheduler bench-hub bench-hub-100 bench-storm bench-large-fleet bench-hub-memory bench-latency ## All benchmarks; print numbers.

.PHONY: bench-unit
bench-unit: ## Go benchmarks of the pure packages; the seat sequence's quota/Webster measurement; the CRD's validation cost per FleetSet update.
	$(GO) test -run '^TestSequencerQuotaAndWebster$$' -v ./internal/apportion/ | grep -E 'quota method|^(ok|FAIL)'
	$(GO) test -run '^$$' -bench . -benchmem ./internal/apportion/
	$(GO) test -run '^$$' -bench . -benchmem ./api/v1alpha1/

# kube-scheduler's own harness (test/integration/scheduler_perf of the pinned
# k8s.io/kubernetes): the workloads of plugins/bench/performance-config.yaml,
# each in a fresh etcd (bin/etcd, found on PATH) + in-process kube-apiserver +
# scheduler. BENCH_NODES: node count of the 5000Nodes_* workloads;
# BENCH_LABELS: the harness's -perf-scheduling-label-filter (integration-test:
# tiny smoke workloads); BENCH_RUN: -bench pattern (e.g.
# 'BenchmarkPerfScheduling/OrdinalPlacement'); BENCH_DIR: the harness's JSON
# data items, per-workload logs of failures and .dat progress files;
# BENCH_FLAGS: more test flags (-test.cpuprofile=/tmp/cpu.out);
# BENCH_COUNT: runs of the selected workloads, one after the other (each run
# every workload once, in a fresh process); with more than one, the ratios'
# medians over the runs follow (TestPrintDataItems over their data items).
BENCH_NODES ?= 5000
BENCH_COUNT ?= 1
BENCH_LABELS ?= performance
BENCH_RUN ?= BenchmarkPerfScheduling
BENCH_DIR ?= $(CURDIR)/_output/bench-scheduler
BENCH_FLAGS ?=
.PHONY: bench-scheduler
bench-scheduler: $(LOCALBIN)/etcd ## Scheduler throughput with kube-scheduler's harness: default vs fleetset profile, SubsetPlacement vs PodTopologySpread.
	@mkdir -p $(BENCH_DIR) && touch $(BENCH_DIR)/.started
	for run in $$(seq $(BENCH_COUNT)); do \
	  PATH=$(LOCALBIN):$$PATH BENCH_NODES=$(BENCH_NODES) ARTIFACTS=$(BENCH_DIR) \
	  $(GO) test -tags integration -count=1 -timeout 90m -run '^$$' -bench '$(BENCH_RUN)' -benchtime=1ns ./plugins/bench/ \
	  -args -perf-scheduling-label-filter=$(BENCH_LABELS) -data-items-dir=$(BENCH_DIR) $(BENCH_FLAGS) | grep -E '^(BENCH |--- FAIL|ok|FAIL|PASS)' || exit 1; \
	done
	@if [ $(BENCH_COUNT) -gt 1 ]; then \
	  BENCH_NODES=$(BENCH_NODES) BENCH_DATA_ITEMS="$$(ls -tr $$(find $(BENCH_DIR) -name 'BenchmarkPerfScheduling_benchmark_*.json' -newer $(BENCH_DIR)/.started))" \
	  $(GO) test -tags integration -count=1 -run '^TestPrintDataItems$$' -v ./plugins/bench/ | grep '^BENCH median'; fi

# The hub at 1000 FleetSets × 20 ManagedClusters (20,000 ManifestWorks), in
# BENCH_PAIRS pairs, each on fresh apiservers: first the machine's limit (the
# same works from a plain client with BENCH_LIMIT_PARALLELISM goroutines; a
# list tries each, 0 skips it), then the hub; it prints each pair's ratio and
# their median, and fails unless the hub's works are the limit's (but for
# the owner UID and the spec hash). About 12 minutes on a 2-core machine;
# BENCH_FLEETSETS=200 BENCH_CLUSTERS=10 BENCH_PAIRS=1 for a 2-minute run.
# BENCH_SUBSETS: subsets per FleetSet (default min(BENCH_CLUSTERS, 20), at
# most 32), spread over BENCH_CLUSTERS clusters (any number).
BENCH_FLEETSETS ?= 1000
BENCH_CLUSTERS ?= 20
BENCH_SUBSETS ?=
BENCH_STEADY_SECONDS ?= 60
BENCH_LIMIT_PARALLELISM ?= 32
BENCH_PAIRS ?= 3
.PHONY: bench-hub
bench-hub: test-binaries ## Hub: division+rendering per subset; FleetSets × ManagedClusters on a real apiserver, against a plain client's limit.
	$(GO) test -run '^$$' -bench . -benchmem ./federation/plan/
	BENCH_HUB=1 BENCH_FLEETSETS=$(BENCH_FLEETSETS) BENCH_CLUSTERS=$(BENCH_CLUSTERS) BENCH_STEADY_SECONDS=$(BENCH_STEADY_SECONDS) \
	BENCH_LIMIT_PARALLELISM=$(BENCH_LIMIT_PARALLELISM) BENCH_PAIRS=$(BENCH_PAIRS) $(if $(BENCH_SUBSETS),BENCH_SUBSETS=$(BENCH_SUBSETS)) \
	  $(GO) test -tags integration -count=1 -timeout 60m -run '^TestHubThroughput$$' -v ./federation/controller/ | grep -E '^(BENCH|---|ok|FAIL|PASS|    )'

# The hub at 100 simulated ManagedClusters: BENCH_100_FLEETSETS (default
# 200) FleetSets of 20 subsets each, FleetSet i over clusters i..i+19 (mod
# 100): 4000 ManifestWorks, 40 per cluster, against the plain client's limit,
# BENCH_100_PAIRS pairs (default 1). A few minutes on a 2-core machine. The
# same works over 20 clusters, for what the clusters cost:
# BENCH_CLUSTERS=20 BENCH_FLEETSETS=200 BENCH_PAIRS=1 make bench-hub.
.PHONY: bench-hub-100
bench-hub-100: ## Hub at 100 ManagedClusters (200 FleetSets × 20 subsets), against a plain client's limit.
	$(MAKE) bench-hub BENCH_CLUSTERS=100 BENCH_SUBSETS=20 BENCH_FLEETSETS=$(or $(BENCH_100_FLEETSETS),200) BENCH_PAIRS=$(or $(BENCH_100_PAIRS),1) BENCH_STEADY_SECONDS=30

# A relocation storm: BENCH_STORM_FLEETSETS Relocate FleetSets (default 200)
# on one cluster lost at once; time to all relocated against the fence
# deadline, apiserver requests per second, Lease GETs and 429s while held and
# while relocating. About 3 minutes on a 2-core machine.
# BENCH_STORM_BEAT_SECONDS: the members' heartbeat timeout (3 s beats time
# out on a loaded machine); BENCH_STORM_FENCE_SECONDS: fenceGraceSeconds.
BENCH_STORM_FLEETSETS ?= 200
BENCH_STORM_BEAT_SECONDS ?= 12
BENCH_STORM_FENCE_SECONDS ?= 10
.PHONY: bench-storm
bench-storm: test-binaries ## Hub: one cluster holding BENCH_STORM_FLEETSETS Relocate FleetSets lost at once.
	BENCH_STORM=1 $(if $(BENCH_HUB_PROFILE),BENCH_HUB_PROFILE=$(BENCH_HUB_PROFILE)) BENCH_STORM_FLEETSETS=$(BENCH_STORM_FLEETSETS) BENCH_STORM_BEAT_SECONDS=$(BENCH_STORM_BEAT_SECONDS) BENCH_STORM_FENCE_SECONDS=$(BENCH_STORM_FENCE_SECONDS) \
	  $(GO) test -tags integration -count=1 -timeout 30m -run '^TestRelocationStorm$$' -v ./federation/controller/ | grep -E '^(BENCH|---|ok|FAIL|PASS|    )'

# The hub's heap in use after settling, by FleetSets × clusters × subsets
# (BENCH_MEMORY_SIZES, F x C x S, comma-separated), each on a fresh apiserver.
.PHONY: bench-hub-memory
bench-hub-memory: test-binaries ## Hub: heap in use by FleetSets × clusters × subsets.
	BENCH_MEMORY=1 $(if $(BENCH_MEMORY_SIZES),BENCH_MEMORY_SIZES=$(BENCH_MEMORY_SIZES)) \
	  $(GO) test -tags integration -count=1 -timeout 60m -run '^TestHubMemory$$' -v ./federation/controller/ | grep -E '^(BENCH|---|ok|FAIL|PASS|    )'

# One FleetSet of 10,000 instances over 10 clusters on a real apiserver:
# every work within OCM's manifest limit (OCM's validator), time to deliver
# and to fold Ready, then shrunk to 2000. About a minute.
.PHONY: bench-large-fleet
bench-large-fleet: test-binaries ## Hub: one 10,000-instance FleetSet over 10 clusters; works, sizes, times.
	$(GO) test -tags integration -count=1 -timeout 10m -run '^TestLargeFleet$$' -v ./federation/controller/ | grep -E '^(BENCH|---|ok|FAIL|PASS|    )'

LATENCY_SCALES ?= 100
.PHONY: bench-latency
bench-latency: fleet-binaries ## Local fleet: kubectl-scale → member StatefulSet latency over LATENCY_SCALES scales, p50/p90/p99, split fleetset / OCM.
	e2e/fleet/fleet-up.sh
	@rc=0; $(FLEET_KUBECONFIGS) FLEETSET_E2E_LATENCY_SCALES=$(LATENCY_SCALES) $(GO) test -tags e2e -count=1 -timeout 30m -run '^TestScaleLatency$$' -v ./e2e/ | grep -E '^(BENCH|---|ok|FAIL|PASS)' || rc=$$?; \
	e2e/fleet/fleet-down.sh; exit $$rc

##@ Local fleet and e2e

KWOK_VERSION ?= v0.7.0
KIND_VERSION ?= v0.33.0
# OCM agents are built from the nested module e2e/tools (pins
# open-cluster-management.io/ocm) so the main go.mod stays free of OCM.
OCM_GOENV := GOFLAGS=-mod=mod GONOSUMDB=sigs.k8s.io/about-api
FLEET_DIR ?= $(CURDIR)/.fleet
FLEET_KUBECONFIGS = FLEETSET_HUB_KUBECONFIG=$(FLEET_DIR)/hub/kubeconfig \
	FLEETSET_MEMBER_KUBECONFIGS=east=$(FLEET_DIR)/east/kubeconfig,west=$(FLEET_DIR)/west/kubeconfig \
	FLEETSET_E2E_SPARE_MEMBERS=$$(test -f $(FLEET_DIR)/north/kubeconfig && echo north=$(FLEET_DIR)/north/kubeconfig) \
	FLEETSET_E2E_PROVIDER=local FLEET_DIR=$(FLEET_DIR)
E2E_TIMEOUT ?= 50m

$(LOCALBIN)/kwok:
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

$(LOCALBIN)/registration $(LOCALBIN)/work $(LOCALBIN)/addon $(LOCALBIN)/placement &:
	cd e2e/tools && $(OCM_GOENV) $(GO) build -o $(LOCALBIN)/ open-cluster-management.io/ocm/cmd/registration open-cluster-management.io/ocm/cmd/work open-cluster-management.io/ocm/cmd/addon open-cluster-management.io/ocm/cmd/placement

# The local fleet's cuttable member-to-hub links (e2e/fleet/netcut).
$(LOCALBIN)/netcut: .FORCE
	$(GO) build -o $@ ./e2e/fleet/netcut

# The test beds' volume provisioner and resizer (StorageClass fleetset-local),
# from its own module: sig-storage-lib-external-provisioner needs a newer
# client-go than fleetset's.
$(LOCALBIN)/fleetset-local-provisioner: .FORCE
	cd e2e/tools/provisioner && $(GO) build -o $@ .

# kubectl drives the fleet scripts; built from the pinned module when the
# machine has none.
.PHONY: kubectl
kubectl:
	@command -v kubectl >/dev/null || [ -x $(LOCALBIN)/kubectl ] || { cd e2e/tools && $(OCM_GOENV) $(GO) build -o $(LOCALBIN)/kubectl ./kubectl; }

.PHONY: fleet-binaries
fleet-binaries: kubectl $(LOCALBIN)/etcd $(LOCALBIN)/kube-apiserver $(LOCALBIN)/kube-controller-manager $(LOCALBIN)/kwok $(LOCALBIN)/registration $(LOCALBIN)/work $(LOCALBIN)/addon $(LOCALBIN)/placement $(LOCALBIN)/fleetset-scheduler $(LOCALBIN)/fleetset-hub $(LOCALBIN)/netcut $(LOCALBIN)/fleetset-local-provisioner $(LOCALBIN)/coredns ## Build every binary of the local fleet into bin/.

.PHONY: fleet-up
fleet-up: fleet-binaries ## Start the local fleet (hub + east + west on 127.0.0.1); kubeconfigs in .fleet/<cluster>/kubeconfig.
	e2e/fleet/fleet-up.sh

.PHONY: fleet-down
fleet-down: ## Stop the local fleet (logs stay in .fleet/<cluster>/logs).
	e2e/fleet/fleet-down.sh

.PHONY: demo
demo: fleet-up $(LOCALBIN)/kubectl-fleetset ## Fleet up, deploy the sample FleetSet, print where its instances run (kubectl fleetset status).
	e2e/fleet/demo.sh

.PHONY: e2e
# The e2e fleet has a third member, north, for the majority rule
# (TestMajorityLostRelocatesNothing); the rest of the suite uses east and west.
E2E_FLEET_MEMBERS ?= east west north

e2e: fleet-binaries ## e2e suite on the local fleet (started if not up, stopped after).
	FLEET_MEMBERS="$(E2E_FLEET_MEMBERS)" e2e/fleet/fleet-up.sh
	@rc=0; $(FLEET_KUBECONFIGS) $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ || rc=$$?; \
	e2e/fleet/fleet-down.sh; exit $$rc

# The long fencing runs (docs/failover.md): every fenceGraceSeconds/
# tolerationSeconds case of a real cut, fleetset-hub stopped 10 minutes, the
# hub's kube-apiserver stopped 3 minutes. About 30 minutes; `make e2e` runs
# one cut case and 45-second outages.
FENCING_E2E_ENV := FLEETSET_E2E_FENCE_CASES=0/0,0/20,30/0,30/20,90/0,90/20 FLEETSET_E2E_HUB_SILENCE=10m FLEETSET_E2E_HUB_OUTAGE=3m

.PHONY: e2e-fencing
e2e-fencing: fleet-binaries ## Long fencing e2e on the local fleet: six cut cases, hub controller down 10 min, hub apiserver down 3 min.
	e2e/fleet/fleet-up.sh
	@rc=0; $(FLEET_KUBECONFIGS) $(FENCING_E2E_ENV) $(GO) test -tags e2e -count=1 -timeout 60m -v \
	  -run 'TestFencedFailover|TestHubSilenceFencesNothing|TestHubOutageFencesNothing' ./e2e/ || rc=$$?; \
	e2e/fleet/fleet-down.sh; exit $$rc

# The chaos run (e2e/chaos, docs/development.md "Chaos"): faults and
# FleetSet operations drawn from CHAOS_SEED on a local fleet of three
# members, invariants checked over one-second samples; the report goes to
# bin/chaos/<seed>/. A failing seed replays with CHAOS_SEED=<seed>.
CHAOS_SEED ?= $(shell date +%s)
CHAOS_MINUTES ?= 20
CHAOS_MAX_FAULTS ?= 2
CHAOS_CONVERGE_BOUND ?= 5m
CHAOS_FLEET_MEMBERS ?= east west north
CHAOS_SHORT_SEED ?= 26
CHAOS_REPORT_DIR ?= $(LOCALBIN)/chaos
# chaos-unsafe's seed draws a 84-second cut of west 34 s in, alone among
# the member faults: long enough for a hub that does not wait for the fence
# to relocate web (toleration 20 s) while west still runs it (fenceGrace 40 s).
CHAOS_UNSAFE_SEED ?= 786
CHAOS_TIMEOUT ?= 120m
# CHAOS_LATE=0 draws none of the late fault kinds (claim-growth-cut,
# hub-stale-peers, hub-restore; their own stream): chaos-unsafe's seed was
# chosen for one cut, which a later hub outage would blunt.
CHAOS_LATE ?= 1

.PHONY: chaos
chaos: fleet-binaries ## Seeded fault injection on the local fleet (CHAOS_SEED, CHAOS_MINUTES=20, CHAOS_MAX_FAULTS=2); report in bin/chaos/<seed>/.
	FLEET_MEMBERS="$(CHAOS_FLEET_MEMBERS)" e2e/fleet/fleet-up.sh
	@rc=0; $(FLEET_KUBECONFIGS) CHAOS_REPORT_DIR=$(CHAOS_REPORT_DIR) \
	  CHAOS_EXPECT=$(CHAOS_EXPECT) CHAOS_LATE=$(CHAOS_LATE) CHAOS_SEED=$(CHAOS_SEED) CHAOS_MINUTES=$(CHAOS_MINUTES) CHAOS_MAX_FAULTS=$(CHAOS_MAX_FAULTS) CHAOS_CONVERGE_BOUND=$(CHAOS_CONVERGE_BOUND) \
	  $(GO) test -tags chaos -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' -v ./e2e/chaos/ || rc=$$?; \
	e2e/fleet/fleet-down.sh; exit $$rc

.PHONY: chaos-plan
chaos-plan: ## Print the schedule of CHAOS_SEED over CHAOS_MINUTES without a fleet (faults, operations, counts by kind).
	CHAOS_PLAN=1 CHAOS_LATE=$(CHAOS_LATE) CHAOS_SEED=$(CHAOS_SEED) CHAOS_MINUTES=$(CHAOS_MINUTES) CHAOS_MAX_FAULTS=$(CHAOS_MAX_FAULTS) CHAOS_FLEET_MEMBERS="$(CHAOS_FLEET_MEMBERS)" \
	  $(GO) test -count=1 -run '^TestPlan$$' -v ./e2e/chaos/ | grep -v -e '^=== RUN' -e '^--- PASS' -e '^PASS' -e '^ok '

.PHONY: chaos-short
chaos-short: ## The CI chaos run: 3 minutes, fixed seed (CHAOS_SHORT_SEED).
	$(MAKE) chaos CHAOS_SEED=$(CHAOS_SHORT_SEED) CHAOS_MINUTES=3

# The checkers checked end to end: the same run against a fleetset-hub
# built with -tags fleetset_unsafe_nofence (federation/failover: relocates
# once the toleration is over, without waiting for the member's fence) must
# report dual-running. The broken build goes to bin/unsafe/, never bin/.
.PHONY: chaos-unsafe
chaos-unsafe: ## Chaos against a hub broken on purpose (no fence wait): passes only if the run reports dual-running.
	$(GO) build -tags fleetset_unsafe_nofence -o $(LOCALBIN)/unsafe/fleetset-hub ./cmd/hub
	FLEET_HUB_BIN=$(LOCALBIN)/unsafe/fleetset-hub $(MAKE) chaos CHAOS_SEED=$(CHAOS_UNSAFE_SEED) CHAOS_MINUTES=3 CHAOS_LATE=0 \
	  CHAOS_EXPECT=dual-running CHAOS_REPORT_DIR=$(LOCALBIN)/chaos/unsafe

.PHONY: e2e-run
e2e-run: ## e2e suite against the running local fleet, which it leaves up (E2E_ARGS='-run TestX').
	$(FLEET_KUBECONFIGS) $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ $(E2E_ARGS)

##@ kind fleet (needs docker)

# The kind fleet: fleetset-hub, fleetset-east, fleetset-west, fleetset-north from
# kind-configs/, OCM installed by its operator, fleetset from manifests/ and
# the images of `make images`. On a host like the development VM (no
# registry, cgroup v1, no CAP_SYS_RESOURCE) run `make kind-host` (root) once
# per boot and build the node image offline with `make kind-node-image`; a
# normal Docker host skips both and sets KIND_NODE_IMAGE to a kindest/node
# image of the same Kubernetes release.
KIND ?= $(LOCALBIN)/kind
KIND_FLEET_DIR ?= $(FLEET_DIR)/kind
KIND_CACHE_DIR ?= $(CURDIR)/.cache/kind
KIND_ENV = KIND=$(KIND) KIND_FLEET_DIR=$(KIND_FLEET_DIR) KIND_CACHE_DIR=$(KIND_CACHE_DIR) LOCALBIN=$(LOCALBIN)

$(KIND):
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/kind@$(KIND_VERSION)

.PHONY: kind-host
kind-host: ## (root, once per boot; only hosts like the development VM) Docker engine, cgroup mounts, runc wrapper, no-pull proxy.
	e2e/kind/host.sh

.PHONY: kind-node-image
kind-node-image: $(KIND) ## Build the kind node image for the pinned Kubernetes release offline (cached).
	$(KIND_ENV) e2e/kind/node-image.sh

.PHONY: kind-up
# Every image is built before the first node starts (kind-up.sh builds
# OCM's): builds must not compete with running clusters on a small host.
kind-up: $(KIND) images kind-etcd-image kind-etcd-client-image kind-echo-image $(LOCALBIN)/fleetset-local-provisioner ## Create hub + east + west + north kind clusters, install OCM with its operator and fleetset from manifests/; prints the fleet's CPU at rest.
	$(KIND_ENV) FLEETSET_KIND_SKIP_IMAGES=1 e2e/kind/kind-up.sh

.PHONY: kind-idle
kind-idle: ## The kind fleet's CPU use per node container and in total, in cores over KIND_IDLE_SECONDS (default 60), from the containers' cgroups.
	e2e/kind/idle.sh "$(KIND_IDLE_LABEL)"

.PHONY: kind-idle-knobs
kind-idle-knobs: ## What each setting of the small kind bed saves: kind-idle with them turned back one at a time, then restored (about 12 minutes, fleet at rest).
	$(KIND_ENV) e2e/kind/idle-knobs.sh

.PHONY: kind-ocm-images
kind-ocm-images: ## OCM's images (open-cluster-management.io/ocm cmd/) for the kind fleet, without Docker (cached; kind-up builds them too).
	$(KIND_ENV) e2e/kind/ocm-images.sh

.PHONY: kind-down
kind-down: $(KIND) ## Delete the kind clusters and what kind-up made (KIND_HOST_STOP=1 also stops the dockerd of kind-host).
	$(KIND_ENV) e2e/kind/kind-down.sh

.PHONY: e2e-kind
e2e-kind: kind-up kind-echo-image ## The e2e suite on the kind fleet (left up; make kind-down removes it).
	FLEETSET_HUB_KUBECONFIG=$(KIND_FLEET_DIR)/hub/kubeconfig \
	FLEETSET_MEMBER_KUBECONFIGS=east=$(KIND_FLEET_DIR)/east/kubeconfig,west=$(KIND_FLEET_DIR)/west/kubeconfig \
	FLEETSET_E2E_SPARE_MEMBERS=north=$(KIND_FLEET_DIR)/north/kubeconfig \
	FLEETSET_E2E_PROVIDER=kind FLEETSET_E2E_ECHO_ARCHIVE=$(IMAGES_DIR)/e2e-echo.tar \
	FLEETSET_E2E_IMAGE=registry.k8s.io/pause:3.10.1 FLEETSET_E2E_TIMEOUT=6m FLEETSET_E2E_HOOK_TIMEOUT=6m $(KIND_ENV) \
	  $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ $(E2E_ARGS)

# The etcd acceptance run (docs/etcd.md) on the kind fleet, which must be up
# (make kind-up): the sample etcd over east, west and north, two clients,
# the faults of ETCD_STEPS one after the other, porcupine's check; it prints
# the ETCD summary line and keeps its logs in bin/etcd-e2e/<namespace>/.
# ETCD_ACTIONS=1: fleetset runs the sample's lifecycle actions; driver: the
# test runs memberJoin/memberLeave itself (a fleet whose fleetset predates
# the actions; no leader-last rollout); 0: none (no cut, no scale, no
# leader-last rollout). Not in CI: about 30 minutes on a 2-core machine.
ETCD_STEPS ?= switchover,cut,rollout-plain,rollout-leader-last,scale,kill-leader-node
ETCD_ACTIONS ?= 1
.PHONY: e2e-kind-etcd
e2e-kind-etcd: kind-etcd-image kind-etcd-client-image $(LOCALBIN)/etcd-check ## etcd on the kind fleet under cuts, rollouts, scaling and a node kill, checked with porcupine (ETCD_STEPS, ETCD_ACTIONS).
	FLEETSET_HUB_KUBECONFIG=$(KIND_FLEET_DIR)/hub/kubeconfig \
	FLEETSET_MEMBER_KUBECONFIGS=east=$(KIND_FLEET_DIR)/east/kubeconfig,west=$(KIND_FLEET_DIR)/west/kubeconfig \
	FLEETSET_E2E_SPARE_MEMBERS=north=$(KIND_FLEET_DIR)/north/kubeconfig \
	FLEETSET_E2E_PROVIDER=kind FLEETSET_E2E_ETCD=1 FLEETSET_E2E_ETCD_STEPS=$(ETCD_STEPS) FLEETSET_E2E_ETCD_ACTIONS=$(ETCD_ACTIONS) \
	FLEETSET_E2E_ETCD_IMAGE=fleetset-etcd:$(ETCD_VERSION) FLEETSET_E2E_TIMEOUT=6m FLEETSET_E2E_HOOK_TIMEOUT=6m $(KIND_ENV) \
	  $(GO) test -tags e2e -count=1 -timeout 100m -run '^TestEtcdOnTheFleet$$' -v ./e2e/
