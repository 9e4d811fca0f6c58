# kraan-operator Makefile. `make help` lists the targets.
#
# Every tool is built from a pinned Go module under hack/tools into a cache
# outside the repository (TOOLS_DIR), once per version, so a fresh clone and CI
# reuse it. Nothing is installed by hand.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO ?= go
# Never download another Go: the project builds with the machine's Go 1.26.
export GOTOOLCHAIN := local

# Image of the operator, used by deploy, bundle, image and docker-build.
# IMAGE_REGISTRY=host/namespace makes `make image bundle-image catalog-image`
# push there, and names the images there (docs/olm.md).
VERSION ?= 0.2.0
IMAGE_REGISTRY ?=
IMAGE_REPO := $(if $(IMAGE_REGISTRY),$(IMAGE_REGISTRY),ghcr.io/kraan-io)
IMG ?= $(IMAGE_REPO)/kraan-operator:v$(VERSION)
# The image config/manager names: the released one, whatever IMAGE_REGISTRY says.
RELEASE_IMAGE_NAME := ghcr.io/kraan-io/kraan-operator

MODULE := github.com/kraan-io/kraan-operator

TOOLS_DIR ?= $(shell $(GO) env GOPATH)/kraan-tools

# sum-of TOOL: a short digest of hack/tools/TOOL/go.sum. The directories of
# the tools whose modules are kept at the versions they share (below) carry
# it, so a change of any version in them builds the tool again.
sum-of = $(shell sha256sum hack/tools/$(1)/go.sum | cut -c1-8)

K8S_VERSION := v1.37.2
# etcd and kwok are built into kubeplane from hack/tools/kube: their versions
# are the ones its go.mod requires.
ETCD_VERSION := $(shell sed -n 's#^\tgo.etcd.io/etcd/server/v3 \(v[^ ]*\)$$#\1#p' hack/tools/kube/go.mod)
KWOK_VERSION := $(shell sed -n 's#^\tsigs.k8s.io/kwok \(v[^ ]*\)$$#\1#p' hack/tools/kube/go.mod)
CONTROLLER_GEN_VERSION := v0.23.0
GOLANGCI_LINT_VERSION := v2.15.0

# The control plane's six commands are one binary, kubeplane
# (hack/tools/kube), linked under their names: their shared packages compile
# once and link once. The directory names every version in it.
KUBE_DIR := $(TOOLS_DIR)/kubeplane-$(K8S_VERSION)-etcd-$(ETCD_VERSION)-kwok-$(KWOK_VERSION)-$(call sum-of,kube)
KUBE_APISERVER := $(KUBE_DIR)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(KUBE_DIR)/kube-controller-manager
KUBE_SCHEDULER := $(KUBE_DIR)/kube-scheduler
KUBECTL := $(KUBE_DIR)/kubectl
ETCD := $(KUBE_DIR)/etcd
KWOK := $(KUBE_DIR)/kwok
KWOK_STAGES := $(KUBE_DIR)/kwok-stages.yaml
KUBE_COMMANDS := $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL) $(ETCD) $(KWOK)
CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen
# The Helm 4 CLI the operator embeds, built from the operator's own module
# (go.mod's tool directive): the break-glass tests run it. Built as the tests
# build (no -trimpath), the Helm and Kubernetes packages it shares with the
# operator compile once for both.
HELM_CLI_VERSION := $(shell sed -n 's#^\thelm.sh/helm/v4 \(v[^ ]*\)$$#\1#p' go.mod)
HELM_CLI := $(TOOLS_DIR)/helm-$(HELM_CLI_VERSION)/helm
export KRAAN_HELM_CLI := $(HELM_CLI)
GOLANGCI_LINT := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

# operator-sdk, scorecard-test, OLM and opm (built in the OLM section below).
# Defined here, before the OLM targets that list them as prerequisites: make
# expands a rule's prerequisites when it reads the rule, so a variable defined
# further down is empty there and a fresh machine would not build the tool.
OPERATOR_SDK_VERSION := v1.42.3
OLM_VERSION := v0.46.0
OPERATOR_SDK_DIR := $(TOOLS_DIR)/operator-sdk-$(OPERATOR_SDK_VERSION)
OPERATOR_SDK := $(OPERATOR_SDK_DIR)/operator-sdk
SCORECARD_TEST := $(OPERATOR_SDK_DIR)/scorecard-test
OLM_DIR := $(TOOLS_DIR)/olm-$(OLM_VERSION)
OLM := $(OLM_DIR)/olm
OLM_CATALOG := $(OLM_DIR)/catalog
OPM := $(OLM_DIR)/opm
export KRAAN_OPERATOR_SDK := $(OPERATOR_SDK)
export KRAAN_SCORECARD_TEST := $(SCORECARD_TEST)
export KRAAN_OLM := $(OLM)
export KRAAN_OLM_CATALOG := $(OLM_CATALOG)
export KRAAN_OPM := $(OPM)

# One directory holding every control-plane binary: envtest reads it from
# KUBEBUILDER_ASSETS and so does the local control plane (test/localplane).
ASSETS_DIR := $(TOOLS_DIR)/assets-k8s-$(K8S_VERSION)
ASSETS := $(ASSETS_DIR)/.complete

# Where `make cluster-up` keeps the local control plane's state.
LOCALPLANE_DIR ?= $(CURDIR)/.cache/localplane
export KUBEBUILDER_ASSETS := $(ASSETS_DIR)

# Stamp the Kubernetes version into the binaries: an unstamped server reports
# v0.0.0, which breaks k8sVersion prerequisites, Helm kubeVersion and OLM minKubeVersion.
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37

# -p 3: three test binaries at a time (go's default is one per core, 2 here).
# The end-to-end packages mostly wait on their own control planes; two at a
# time left most of a core idle (19.5 min of CPU in 23.5 on the clock).
GO_TEST_FLAGS ?= -count=1 -timeout 30m -p 3

# TOOLS_JOBS go builds of tools run at a time (make -j), beside go vet in
# `make test`. Default 1: with 4 at a time a fresh 2-core machine ran `make
# test` in 75 minutes (tools 48.6, 27 % of its CPU in the kernel; 2026-12-03),
# against 49 one at a time (2026-12-02); docs/development.md.
TOOLS_JOBS ?= 1
# The tools every test needs, the longest build first.
TEST_TOOLS = $(EARLY_TOOLS) $(LATE_TOOLS)
# make test builds EARLY_TOOLS first. Then two things run side by side, which
# together keep both cores busy (32 min of CPU in 16.5 on a fresh machine): the
# tests of every package but LATE_PACKAGES, and LATE_TOOLS followed at once by
# LATE_PACKAGES (LATE_TEST_P at a time), the only packages that run the late
# tools: Flux helm-controller (test/e2e/migration), OLM and opm (test/e2e/olm,
# the image round trip). A test reaching for a late tool too early fails
# naming it (TestLatePackages_RunTheLateTools keeps this list true).
EARLY_TOOLS = $(ASSETS) source-controller $(HELM_CONTROLLER_CRDS)/.complete $(CONTROLLER_GEN) $(HELM_CLI) $(FLUX_API_V17)/.complete
LATE_TOOLS = helm-controller olm-runtime
LATE_PACKAGES = ./test/e2e/migration ./test/e2e/olm ./hack/image/imagebuild
LATE_TEST_P ?= 2
# go test starts packages in the order it is given them: the packages taking
# a minute or more go first, longest first, so that none of them starts last
# and runs alone at the end (longest-first scheduling). The rest follow in
# go list's order. Times: docs/development.md.
LONG_PACKAGES = ./test/e2e/helmreleases ./test/e2e ./test/e2e/soak ./test/e2e/confinement ./test/e2e/crash \
	./test/demo ./test/e2e/pacing ./test/e2e/habitat ./internal/controller/addonslayer ./internal/helm
# `make test` writes how long each phase and each tool build took here and
# prints it at the end (hack/phase.sh).
PHASES_LOG := $(CURDIR)/.cache/phases.tsv
PHASE := $(CURDIR)/hack/phase.sh $(PHASES_LOG)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (config/crd/bases) and RBAC (config/rbac) from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./internal/..." paths="./cmd/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# `kubectl apply -k config/default` (or config/namespaced) deploys the
	@# released image of VERSION, not a placeholder; make deploy and bundle
	@# still put IMG in its place.
	@sed -i -e 's#^  newName: .*#  newName: $(RELEASE_IMAGE_NAME)#' -e 's#^  newTag: .*#  newTag: v$(VERSION)#' config/manager/kustomization.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: docs
docs: ## Regenerate docs/api-reference.md from the API's Go types, and the demo's graph in docs/kubectl-plugin.md.
	$(GO) run ./hack/apidocs -out docs/api-reference.md api/v1alpha1 api/habitat/v1alpha1
	$(GO) run ./hack/plugingraph -layers examples/layers/0.2.0 -out docs/images/demo-layers.svg

.PHONY: fmt
fmt: ## Run gofmt on the operator's Go files.
	gofmt -l -w $$(git ls-files '*.go' | grep -v '^hack/tools/')

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (configuration in .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests docs bundle-check chart-check catalog-check ## Fail when generated files (CRDs, RBAC, API reference, bundle, chart, catalog) are stale or gofmt would change a file.
	@stale=$$(git status --porcelain -- api config/crd config/rbac docs/api-reference.md docs/images/demo-layers.svg); \
	if [ -n "$$stale" ]; then \
		echo "Generated files are out of date; run 'make generate manifests docs' and commit:"; \
		echo "$$stale"; git --no-pager diff --stat -- api config/crd config/rbac docs/api-reference.md docs/images/demo-layers.svg; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	@echo "verify: generated files and formatting are up to date"

.PHONY: test
test: ## Run every test: unit, envtest and the local control plane.
	@mkdir -p $(dir $(PHASES_LOG)) && rm -f $(PHASES_LOG)
	@$(PHASE) "tools, generate, vet" $(MAKE) --no-print-directory -j$(TOOLS_JOBS) $(EARLY_TOOLS) generated-and-vetted \
		|| { $(PHASE) --summary; exit 1; }
	@status=0; late_log=$(dir $(PHASES_LOG))late-tools.log; \
	{ $(PHASE) "late tools (beside tests)" $(MAKE) --no-print-directory $(LATE_TOOLS) >$$late_log 2>&1 \
		|| { cat $$late_log; echo "building $(LATE_TOOLS) failed (above): $(LATE_PACKAGES) not tested"; exit 1; }; \
	  $(PHASE) "go test (late packages, beside tests)" $(GO) test $(GO_TEST_FLAGS) -p $(LATE_TEST_P) $(LATE_PACKAGES); } & late=$$!; \
	$(PHASE) "go test" $(GO) test $(GO_TEST_FLAGS) $(LONG_PACKAGES) \
		$$($(GO) list ./... | grep -vxF $(foreach p,$(LATE_PACKAGES) $(LONG_PACKAGES),-e $(MODULE)/$(p:./%=%))) || status=1; \
	wait $$late || status=1; \
	$(PHASE) --summary; exit $$status

# generated-and-vetted: the generated code, then go vet, which compiles every
# package of the module (the tests reuse that compile), one after the other.
.PHONY: generated-and-vetted
generated-and-vetted: $(CONTROLLER_GEN)
	@$(PHASE) "generate" $(MAKE) --no-print-directory generate
	@$(PHASE) "manifests" $(MAKE) --no-print-directory manifests
	@$(PHASE) "go vet" $(GO) vet ./...

.PHONY: test-e2e
test-e2e: $(ASSETS) source-controller helm-controller olm-runtime ## Run the end-to-end tests on the local control plane.
	$(GO) test $(GO_TEST_FLAGS) -v ./test/...

.PHONY: bench
# `make bench` (docs/performance.md): for each KRAAN_BENCH_RELEASES size, on a
# fresh local plane, the raw limit, the operator binary and sequential Helm SDK
# installs side by side; then 4 chained layers × 10 releases. Results go to
# bin/bench/ (results.json, results-<n>.json, tables.md, bench.svg).
bench: $(ASSETS) source-controller ## Benchmark raw apply, the operator and sequential Helm SDK side by side (KRAAN_BENCH_RELEASES="100 1000").
	KRAAN_BENCH_RELEASES="$${KRAAN_BENCH_RELEASES:-100 1000}" $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 600m ./test/bench/

.PHONY: bench-fleet
bench-fleet: $(ASSETS) source-controller ## Benchmark a layer version rolled across 10 workload planes against applying it to each directly (part of `make bench`).
	$(GO) test -run '^$$' -bench '^BenchmarkFleet$$' -benchtime 1x -timeout 60m ./test/bench/

# The full soak (test/e2e/soak, docs/operations.md): `go test ./...` runs its
# short version. KRAAN_SOAK_SEED, KRAAN_SOAK_KILLS, KRAAN_SOAK_APISERVER_RESTARTS,
# KRAAN_SOAK_LAYER_RELEASES and KRAAN_SOAK_STANDALONE pass through.
.PHONY: soak
soak: $(ASSETS) source-controller ## Soak the operator binary: 4 layers × 10 HelmReleases under a mixed workload, 20 SIGKILLs, 2 apiserver restarts (about 8 minutes).
	KRAAN_SOAK_SIZE=$${KRAAN_SOAK_SIZE:-full} $(GO) test -count=1 -timeout 60m -v -run '^TestSoak$$' ./test/e2e/soak/

# Every native fuzz target, as package:Target; `go test -fuzz` takes one of each.
FUZZ_TARGETS := ./internal/source:FuzzExtract ./internal/source:FuzzCleanEntryName \
	./internal/manifest:FuzzReadFile ./internal/layer:FuzzParseDependency ./internal/layer:FuzzGraphCycles \
	./internal/helm:FuzzComposeValuesTargetPath ./internal/watches:FuzzLoad ./internal/watches:FuzzValues \
	./helm-charts:FuzzHabitatChart
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Fuzz every fuzz target in turn for FUZZTIME each (default 30s); crashers land in the package's testdata/fuzz.
	@failed=; for pt in $(FUZZ_TARGETS); do \
		echo ">> fuzzing $${pt#*:} in $${pt%%:*} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${pt#*:}\$$" -fuzztime $(FUZZTIME) "$${pt%%:*}" || failed="$$failed $${pt#*:}"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed"; exit 1; fi

##@ Build

.PHONY: build
build: manifests generate ## Build the operator binary into bin/kraan-operator.
	$(GO) build -o bin/kraan-operator ./cmd

.PHONY: plugin
plugin: ## Build the kubectl plugin, a static binary, into bin/kubectl-kraan (put it on PATH to use `kubectl kraan`).
	CGO_ENABLED=0 $(GO) build -ldflags "-s -w" -o bin/kubectl-kraan ./cmd/kubectl-kraan

PLUGIN_PLATFORMS ?= linux_amd64 linux_arm64 darwin_amd64 darwin_arm64

.PHONY: plugin-release
plugin-release: ## Build the plugin's release archives into bin/release and write their krew manifest (bin/release/kraan.yaml) with each archive's sha256.
	@rm -rf bin/release && mkdir -p bin/release
	@set -e; sed 's/@VERSION@/$(VERSION)/g' dist/krew/kraan.yaml.in > bin/release/kraan.yaml; \
	for p in $(PLUGIN_PLATFORMS); do \
		d=bin/release/$$p; mkdir -p $$d; \
		CGO_ENABLED=0 GOOS=$${p%_*} GOARCH=$${p#*_} $(GO) build -trimpath -buildvcs=false -ldflags "-s -w" -o $$d/kubectl-kraan ./cmd/kubectl-kraan; \
		cp LICENSE $$d/; \
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C $$d -cf - kubectl-kraan LICENSE | gzip -n > bin/release/kubectl-kraan_$$p.tar.gz; \
		sum=$$(sha256sum bin/release/kubectl-kraan_$$p.tar.gz | cut -d' ' -f1); \
		sed -i "s/@SHA256_$$p@/$$sum/" bin/release/kraan.yaml; \
		echo "kubectl-kraan_$$p.tar.gz $$sum"; \
	done
	@! grep -n '@' bin/release/kraan.yaml || { echo "dist/krew/kraan.yaml.in names a platform PLUGIN_PLATFORMS does not build"; exit 1; }

.PHONY: run
# The samples live in namespace default: the operator treats it as a platform
# namespace here, as a cluster admin writes the samples.
run: manifests generate cluster-up install ## Run the operator on this machine against the local control plane, with the samples.
	KUBECONFIG=$(LOCALPLANE_DIR)/kubeconfig $(KUBECTL) apply --server-side -k config/samples
	KUBECONFIG=$(LOCALPLANE_DIR)/kubeconfig $(GO) run ./cmd --log-format=console --health-probe-bind-address=127.0.0.1:8081 --metrics-bind-address=127.0.0.1:8080 --platform-namespaces=default

.PHONY: docker-build
docker-build: ## Build the operator image with docker (needs a container engine; `make image` does not).
	docker build -t $(IMG) .

# The images as OCI layouts under bin/images, built by hack/image with
# go-containerregistry: no container engine (docs/olm.md). The bundle and
# catalog images pin the operator (and bundle) image by digest; bundle/ and
# catalog/ keep the tags. IMAGE_REGISTRY=host/namespace pushes each image as
# it is built; a failed push stops make with one error.
IMAGES_DIR := bin/images
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_TOOL = $(GO) run ./hack/image
IMAGE_FLAGS = --version $(VERSION) $(if $(IMAGE_REGISTRY),--push)

.PHONY: image
image: ## Build the operator image (IMAGE_PLATFORMS, static binary, nonroot, SBOM) into bin/images/operator; IMAGE_REGISTRY= pushes.
	$(IMAGE_TOOL) operator --out $(IMAGES_DIR)/operator --image $(IMG) --platforms $(IMAGE_PLATFORMS) $(IMAGE_FLAGS)

##@ Deployment

# KUBECONFIG defaults to the local control plane's when it is running.
KUBECTL_ENV = $(if $(KUBECONFIG),,$(if $(wildcard $(LOCALPLANE_DIR)/kubeconfig),KUBECONFIG=$(LOCALPLANE_DIR)/kubeconfig))

.PHONY: install
install: manifests $(KUBECTL) ## Install the CRDs into the cluster of KUBECONFIG (or the local plane).
	$(KUBECTL_ENV) $(KUBECTL) apply --server-side -k config/crd

# uninstall and undeploy never delete a CRD under a running operator, which
# would run every finalizer and uninstall every release: `kubectl kraan
# uninstall` stops the operator, removes its finalizers and only then deletes
# it; every release and what layers applied stay
# (docs/operations.md#removing-the-operator). UNINSTALL_FLAGS adds flags:
# --dry-run to see the plan; --uninstall-releases is the explicit destructive path.
KRAAN_PLUGIN = $(GO) run ./cmd/kubectl-kraan

.PHONY: uninstall
uninstall: ## Remove the operator and its CRDs; every release and object stays (kubectl kraan uninstall --crds).
	$(KUBECTL_ENV) $(KRAAN_PLUGIN) uninstall --crds $(UNINSTALL_FLAGS)

.PHONY: deploy
deploy: manifests $(KUBECTL) ## Deploy the operator (image IMG) to the cluster.
	$(KUBECTL_ENV) $(KUBECTL) kustomize config/default | sed 's#$(RELEASE_IMAGE_NAME):v$(VERSION)#$(IMG)#' | $(KUBECTL_ENV) $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove the operator and its namespace; CRDs, releases and objects stay (kubectl kraan uninstall --delete-namespace).
	$(KUBECTL_ENV) $(KRAAN_PLUGIN) uninstall --delete-namespace $(UNINSTALL_FLAGS)

##@ OLM (docs/olm.md)

# The bundle is generated from config/manifests (CSV base, config/default,
# samples, scorecard) in a scratch directory, then moved into place; `make
# verify` generates it again and fails when bundle/ differs.
BUNDLE_PACKAGE := kraan-operator
# The API is kraan.io/v1alpha1: the channel says alpha. `stable`, the channel
# of 0.1.0, stays in the catalog with every bundle so its Subscriptions keep
# upgrading, marked deprecated (docs/olm.md, "Channels").
BUNDLE_CHANNELS ?= alpha
BUNDLE_DEFAULT_CHANNEL ?= alpha
CATALOG_CHANNELS := alpha stable
CATALOG_DEPRECATED_CHANNEL := stable=The stable channel is deprecated: the API is v1alpha1. Set spec.channel of the Subscription to alpha, which holds the same versions.
BUNDLE_IMG_REPO := $(IMAGE_REPO)/kraan-operator-bundle
BUNDLE_IMG ?= $(BUNDLE_IMG_REPO):v$(VERSION)
# Released bundles the catalog keeps beside bundle/, oldest first, as
# VERSION=COMMIT: bundle-history/VERSION is bundle/ of COMMIT, committed as it
# was released (`make bundle-history-check` compares them; never regenerate
# them). The bundle of VERSION replaces the last of them and skips every
# version below its own (spec.replaces and olm.skipRange, stamped by
# gen-bundle). Releasing: add VERSION=<commit> here, copy bundle/ of that
# commit to bundle-history/VERSION, write its checksums to
# bundle-history/VERSION.sha256 (the check's command), bump VERSION, `make bundle catalog`.
BUNDLE_HISTORY := 0.1.0=10cd4f858cdb419c59dd7407a4f6fe6a0c919193
BUNDLE_HISTORY_VERSIONS := $(foreach h,$(BUNDLE_HISTORY),$(firstword $(subst =, ,$(h))))
BUNDLE_PREVIOUS := $(lastword $(BUNDLE_HISTORY_VERSIONS))
CATALOG_IMG ?= $(IMAGE_REPO)/kraan-operator-catalog:v$(VERSION)
BUNDLE_GEN_DIR := $(CURDIR)/.cache/bundle-gen
# operator-sdk stamps the time into createdAt; keep the CSV base's value so the
# bundle is reproducible (update it in the base when releasing).
BUNDLE_CREATED_AT = $(shell sed -n 's/^    createdAt: //p' config/manifests/bases/$(BUNDLE_PACKAGE).clusterserviceversion.yaml)

# operator-sdk v1.42.3 cannot load our PROJECT file (it knows neither the
# hybrid Helm layout nor per-resource plugins) and loads ./PROJECT in every
# command, so it runs in a directory holding only PROJECT's Go layout.
SDK_WORKDIR := $(CURDIR)/.cache/operator-sdk
define sdk-project
	mkdir -p $(1) && awk '/^  plugins:$$/ {skip=1; next} skip && /^    / {next} \
		/^- hybrid\.helm\.sdk\.operatorframework\.io/ {skip=0; next} {skip=0; print}' PROJECT > $(1)/PROJECT
endef

# gen-bundle DIR: write DIR/bundle and DIR/bundle.Dockerfile from config/manifests.
define gen-bundle
	rm -rf $(1)
	$(call sdk-project,$(1))
	$(KUBECTL) kustomize config/manifests | sed -e 's#controller:latest#$(IMG)#g' -e 's#$(RELEASE_IMAGE_NAME):v$(VERSION)#$(IMG)#g' | \
		(cd $(1) && $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) \
		--package $(BUNDLE_PACKAGE) --channels $(BUNDLE_CHANNELS) --default-channel $(BUNDLE_DEFAULT_CHANNEL))
	sed -i -e 's/^    createdAt: .*/    createdAt: $(BUNDLE_CREATED_AT)/' \
		-e "s/^    olm.skipRange: .*/    olm.skipRange: '<$(VERSION)'/" \
		-e 's/^  replaces: .*/  replaces: $(BUNDLE_PACKAGE).v$(BUNDLE_PREVIOUS)/' \
		$(1)/bundle/manifests/$(BUNDLE_PACKAGE).clusterserviceversion.yaml
endef

.PHONY: bundle
bundle: manifests $(KUBECTL) $(OPERATOR_SDK) ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/manifests.
	$(call gen-bundle,$(BUNDLE_GEN_DIR))
	rm -rf bundle && mv $(BUNDLE_GEN_DIR)/bundle bundle && mv $(BUNDLE_GEN_DIR)/bundle.Dockerfile bundle.Dockerfile
	rm -rf $(BUNDLE_GEN_DIR)
	$(call sdk-project,$(SDK_WORKDIR))
	cd $(SDK_WORKDIR) && $(OPERATOR_SDK) bundle validate $(CURDIR)/bundle

.PHONY: bundle-check
bundle-check: $(KUBECTL) $(OPERATOR_SDK) ## Fail when bundle/ or bundle.Dockerfile is out of date with config/.
	$(call gen-bundle,$(BUNDLE_GEN_DIR))
	@if ! diff -r bundle $(BUNDLE_GEN_DIR)/bundle || ! diff bundle.Dockerfile $(BUNDLE_GEN_DIR)/bundle.Dockerfile; then \
		echo "The OLM bundle is out of date with config/; run 'make bundle' and commit."; rm -rf $(BUNDLE_GEN_DIR); exit 1; fi
	@rm -rf $(BUNDLE_GEN_DIR)

.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate the bundle with the OperatorHub suite; any warning fails.
	@$(call sdk-project,$(SDK_WORKDIR))
	@out=$$(cd $(SDK_WORKDIR) && $(OPERATOR_SDK) bundle validate $(CURDIR)/bundle --select-optional suite=operatorframework 2>&1) || { echo "$$out"; exit 1; }; \
	echo "$$out"; if echo "$$out" | grep -qiE 'level=(warn|error)|WARN|ERRO'; then echo "bundle-validate: warnings are errors"; exit 1; fi

# The scorecard test binaries read the bundle from the fixed path /bundle, as
# in the scorecard pod: hack/scorecardlocal copies it there (needs root) under
# a lock, runs each test of the configuration and judges the JSON results.
.PHONY: scorecard-local
scorecard-local: $(SCORECARD_TEST) ## Run every scorecard test (basic, olm, kraan) on bundle/ without a cluster; anything but pass fails.
	$(GO) build -o bin/kraan-scorecard ./test/scorecard
	$(GO) run ./hack/scorecardlocal --bundle bundle \
		--binary scorecard-test=$(SCORECARD_TEST) --binary kraan-scorecard=$(CURDIR)/bin/kraan-scorecard

SCORECARD_FLAGS ?= --wait-time 120s

.PHONY: scorecard
scorecard: $(OPERATOR_SDK) ## Run the scorecard against the cluster of KUBECONFIG (pods pull the scorecard images).
	$(call sdk-project,$(SDK_WORKDIR))
	cd $(SDK_WORKDIR) && $(KUBECTL_ENV) $(OPERATOR_SDK) scorecard $(CURDIR)/bundle $(SCORECARD_FLAGS)

# gen-chart DIR: copy the generated CRDs and manager rules into the chart in
# DIR and stamp VERSION into Chart.yaml.
define gen-chart
	rm -rf $(1)/crds $(1)/files && mkdir -p $(1)/crds $(1)/files
	cp config/crd/bases/*.yaml $(1)/crds/
	cp config/rbac/role.yaml $(1)/files/role.yaml
	sed -i -e 's/^version: .*/version: $(VERSION)/' -e 's/^appVersion: .*/appVersion: "$(VERSION)"/' $(1)/Chart.yaml
endef

.PHONY: chart
chart: manifests ## Copy the generated CRDs and RBAC rules into dist/chart.
	$(call gen-chart,dist/chart)

.PHONY: chart-check
chart-check: ## Fail when dist/chart's generated files are out of date with config/.
	@rm -rf .cache/chart-check && mkdir -p .cache && cp -r dist/chart .cache/chart-check
	@$(call gen-chart,.cache/chart-check)
	@diff -r dist/chart .cache/chart-check || { echo "dist/chart is out of date; run 'make chart' and commit."; exit 1; }
	@rm -rf .cache/chart-check

# gen-catalog DIR: write the file-based catalog into DIR and validate it: the
# released bundles of bundle-history/ and bundle/, each with its bundle image
# by tag, and the channels CATALOG_CHANNELS holding them all, whose entries
# hack/catalogchannels takes from the CSVs (replaces, olm.skipRange); it fails
# unless each bundle replaces the one before it.
CATALOG_BUNDLES = $(addprefix bundle-history/,$(BUNDLE_HISTORY_VERSIONS)) bundle
define gen-catalog
	rm -rf $(1) && mkdir -p $(1)/$(BUNDLE_PACKAGE)
	$(OPM) init $(BUNDLE_PACKAGE) --default-channel=$(BUNDLE_DEFAULT_CHANNEL) --icon=config/manifests/icon.svg \
		--description=config/manifests/catalog-description.md --output=yaml > $(1)/$(BUNDLE_PACKAGE)/index.yaml
	$(foreach v,$(BUNDLE_HISTORY_VERSIONS),$(OPM) render ./bundle-history/$(v) --output=yaml | \
		sed 's#^image: ""#image: $(BUNDLE_IMG_REPO):v$(v)#' >> $(1)/$(BUNDLE_PACKAGE)/index.yaml;)
	$(OPM) render ./bundle --output=yaml | sed 's#^image: ""#image: $(BUNDLE_IMG)#' >> $(1)/$(BUNDLE_PACKAGE)/index.yaml
	$(GO) run ./hack/catalogchannels --package $(BUNDLE_PACKAGE) $(addprefix --channel ,$(CATALOG_CHANNELS)) \
		--deprecated-channel '$(CATALOG_DEPRECATED_CHANNEL)' $(CATALOG_BUNDLES) >> $(1)/$(BUNDLE_PACKAGE)/index.yaml
	$(OPM) validate $(1)
endef

.PHONY: catalog
catalog: $(OPM) ## Write the file-based catalog (catalog/) from bundle-history/ and bundle/ (run `make bundle` first) and validate it.
	$(call gen-catalog,catalog)

.PHONY: catalog-check
catalog-check: $(OPM) bundle-history-check ## Fail when catalog/ is out of date with bundle-history/ and bundle/, or its channel has no upgrade path.
	@$(call gen-catalog,.cache/catalog-check)
	@diff -r catalog .cache/catalog-check || { echo "catalog/ is out of date with bundle/; run 'make catalog' and commit."; exit 1; }
	@rm -rf .cache/catalog-check

.PHONY: bundle-history-check
bundle-history-check: ## Fail when a released bundle of bundle-history/ was changed (bundle-history/VERSION.sha256, written at release).
	@for v in $(BUNDLE_HISTORY_VERSIONS); do \
		test -f bundle-history/$$v.sha256 || { echo "bundle-history/$$v.sha256 is missing: write it when releasing (see BUNDLE_HISTORY)"; exit 1; }; \
		(cd bundle-history/$$v && find . -type f | LC_ALL=C sort | xargs sha256sum | diff - ../$$v.sha256) || \
			{ echo "bundle-history/$$v differs from the bundle released as $$v; restore it with git archive <commit of BUNDLE_HISTORY> bundle"; exit 1; }; \
	done

.PHONY: bundle-image
bundle-image: image ## Build the bundle image (bundle/ with the operator image pinned by digest) into bin/images/bundle; IMAGE_REGISTRY= pushes.
	$(IMAGE_TOOL) bundle --out $(IMAGES_DIR)/bundle --image $(BUNDLE_IMG) --bundle-dir bundle \
		--operator-layout $(IMAGES_DIR)/operator --operator-image $(IMG) $(IMAGE_FLAGS)

.PHONY: catalog-image
catalog-image: bundle-image ## Build the catalog image (catalog/ with the bundle and operator images pinned) into bin/images/catalog; IMAGE_REGISTRY= pushes.
	$(IMAGE_TOOL) catalog --out $(IMAGES_DIR)/catalog --image $(CATALOG_IMG) --catalog-dir catalog --bundle-dir bundle \
		--bundle-layout $(IMAGES_DIR)/bundle --bundle-image $(BUNDLE_IMG) \
		--operator-layout $(IMAGES_DIR)/operator --operator-image $(IMG) $(IMAGE_FLAGS)

.PHONY: catalog-build
catalog-build: ## Build the bundle and catalog images with docker (needs a container engine; `make catalog-image` does not).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .
	docker build -f catalog.Dockerfile -t $(CATALOG_IMG) .

##@ Local control plane

.PHONY: cluster-up
cluster-up: $(ASSETS) ## Start the local control plane (etcd, apiserver, controller-manager, scheduler, kwok).
	$(GO) run ./hack/localplane up --dir $(LOCALPLANE_DIR)

.PHONY: cluster-down
cluster-down: ## Stop the local control plane.
	$(GO) run ./hack/localplane down --dir $(LOCALPLANE_DIR)

##@ Tools (built once into TOOLS_DIR)

.PHONY: tools
tools: ## Build every tool the project needs, TOOLS_JOBS at a time.
	@$(MAKE) --no-print-directory -j$(TOOLS_JOBS) $(TEST_TOOLS) olm-tools $(GOLANGCI_LINT)

# build-tools MODULE_DIR OUTPUT_DIR LDFLAGS ESTIMATE PACKAGES: one go build of
# every command of a pinned module that the project uses, into a temporary
# directory, then renamed, so an interrupted build never leaves a half-written
# tool in the cache. One build per module, not one per command: the commands
# share most of their packages, and builds running side by side (TOOLS_JOBS)
# would each compile the shared ones. Each build's time goes to PHASES_LOG.
# Tools are linked without symbol table and DWARF (-s -w): the linker writes
# less, and nobody debugs them (panics still print their stacks).
# OPERATOR_MODULE_TOOLS are tools of the operator's own module (go.mod's tool
# directives), built from the repository's root as the tests build (no
# -trimpath), so the packages they share with the operator compile once.
OPERATOR_MODULE_TOOLS := helm
tool-dir = $(if $(filter $(1),$(OPERATOR_MODULE_TOOLS)),.,hack/tools/$(1))
tool-trimpath = $(if $(filter $(1),$(OPERATOR_MODULE_TOOLS)),,-trimpath)
define build-tools
	@rm -rf $(2)/.tmp && mkdir -p $(2)/.tmp
	@echo ">> building $(notdir $(filter-out -%,$(5))) from $(call tool-dir,$(1)) into $(2) (once; $(4))"
	cd $(call tool-dir,$(1)) && $(PHASE) "tool $(1)" $(GO) build $(call tool-trimpath,$(1)) -ldflags "-s -w $(3)" -o $(2)/.tmp/ $(5)
	@mv $(2)/.tmp/* $(2)/ && rmdir $(2)/.tmp
endef

# The control plane is one multi-call binary (grouped target): kubeplane runs
# the command it is named as, and each name is a link to it.
$(KUBE_COMMANDS) &:
	$(call build-tools,kube,$(KUBE_DIR),$(KUBE_LDFLAGS),10 to 25 minutes on 2 cores,./kubeplane)
	@for c in $(notdir $(KUBE_COMMANDS)); do ln -sfn kubeplane $(KUBE_DIR)/$$c; done
$(CONTROLLER_GEN):
	$(call build-tools,controller-gen,$(dir $@),,about 1 minute,sigs.k8s.io/controller-tools/cmd/controller-gen)
$(GOLANGCI_LINT):
	$(call build-tools,golangci-lint,$(dir $@),,about 3 minutes,github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
$(HELM_CLI):
	$(call build-tools,helm,$(dir $@),-X helm.sh/helm/v4/internal/version.version=$(HELM_CLI_VERSION),seconds once the operator is compiled,helm.sh/helm/v4/cmd/helm)

# kwok refuses to start without stages: take the "fast" node and pod stages and
# the lease heartbeat shipped in kwok's own module.
$(KWOK_STAGES): $(KWOK)
	@dir=$$(cd hack/tools/kube && $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage; \
	for f in $$dir/node/fast/*.yaml $$dir/node/heartbeat-with-lease/*.yaml $$dir/pod/fast/*.yaml; do \
		case $$f in */kustomization.yaml) continue;; esac; echo "---"; cat $$f; done > $@.tmp
	@mv $@.tmp $@

$(ASSETS): $(KUBE_COMMANDS) $(KWOK_STAGES)
	@mkdir -p $(ASSETS_DIR)
	ln -sf $(KUBE_COMMANDS) $(ASSETS_DIR)/
	ln -sf $(KWOK_STAGES) $(ASSETS_DIR)/kwok-stages.yaml
	@touch $@

.PHONY: clean
clean: ## Remove build output (not the tool cache).
	rm -rf bin .cache

# --- source-controller (layers e2e) ---
# Flux source-controller serves Git artifacts to the AddonsLayer tests; its CRDs
# (GitRepository, OCIRepository, Bucket, …) come from its module in the module
# cache. Tests find both through the two exported variables and fail, naming
# `make test`, when they are unset.
SOURCE_CONTROLLER_VERSION := v1.9.6
SOURCE_CONTROLLER_DIR := $(TOOLS_DIR)/source-controller-$(SOURCE_CONTROLLER_VERSION)-$(call sum-of,source-controller)
SOURCE_CONTROLLER := $(SOURCE_CONTROLLER_DIR)/source-controller
SOURCE_CRDS := $(SOURCE_CONTROLLER_DIR)/crds
export KRAAN_SOURCE_CONTROLLER := $(SOURCE_CONTROLLER)
export KRAAN_SOURCE_CRDS := $(SOURCE_CRDS)

$(SOURCE_CONTROLLER):
	$(call build-tools,source-controller,$(dir $@),,about 3 minutes,github.com/fluxcd/source-controller)

$(SOURCE_CRDS)/.complete: $(SOURCE_CONTROLLER)
	@src=$$(cd hack/tools/source-controller && $(GO) list -m -f '{{.Dir}}' github.com/fluxcd/source-controller)/config/crd/bases; \
	rm -rf $(SOURCE_CRDS).tmp && mkdir -p $(SOURCE_CRDS).tmp && cp $$src/*.yaml $(SOURCE_CRDS).tmp/ && \
	chmod -R u+w $(SOURCE_CRDS).tmp && rm -rf $(SOURCE_CRDS) && mv $(SOURCE_CRDS).tmp $(SOURCE_CRDS)
	@touch $@

.PHONY: source-controller
source-controller: $(SOURCE_CONTROLLER) $(SOURCE_CRDS)/.complete ## Build Flux source-controller and collect its CRDs (layer tests).
# --- end source-controller ---

# --- helm-controller (migration e2e) ---
# Flux helm-controller is the peer test/e2e/migration installs releases with
# before kraan-operator adopts them. The Go module proxy serves its module zip
# but refuses its go.mod (403), so `go build module@version` and a module
# under hack/tools that requires it both fail. It is built as its own main
# module instead, from its source as the proxy serves it (hack/fetch-module.sh
# checks the zip against the SHA256 below), with its own go.mod and go.sum,
# which pin every dependency. Its go.mod replaces its api module with ./api, a
# nested module that module zips leave out: the build uses the published api
# module of the same version instead (go checks it against the checksum
# database), hence -mod=mod.
# Its CRDs (HelmRelease) come from config/crd/bases in the same source.
HELM_CONTROLLER_VERSION := v1.4.5
# SHA256 of https://proxy.golang.org/github.com/fluxcd/helm-controller/@v/v1.4.5.zip
# (h1:Dsh5Cc4TEzddoWB4dqgyEQo920aHKfNMZvb3dZwTgr0= as go records it).
HELM_CONTROLLER_ZIP_SHA256 := be6aa633b4360fabd9d0fba1a0ac27105d5be3566277ecf3f73730acd5303cab
HELM_CONTROLLER_DIR := $(TOOLS_DIR)/helm-controller-$(HELM_CONTROLLER_VERSION)
HELM_CONTROLLER := $(HELM_CONTROLLER_DIR)/helm-controller
HELM_CONTROLLER_CRDS := $(HELM_CONTROLLER_DIR)/crds
HELM_CONTROLLER_SRC := $(HELM_CONTROLLER_DIR)/src
export KRAAN_HELM_CONTROLLER := $(HELM_CONTROLLER)
export KRAAN_HELM_CONTROLLER_CRDS := $(HELM_CONTROLLER_CRDS)

# The API of Flux helm-controller v1.7.1 and the modules its types use, as
# source only: internal/manifest's field walk reads HelmReleaseSpec from it
# (issue #44). The module needs Go 1.27, so it is read, never built; each zip
# is pinned by SHA256 (hack/fetch-module.sh), as proxy.golang.org serves it.
FLUX_API_V17 := $(TOOLS_DIR)/flux-api-v1.7.1
export KRAAN_FLUX_API_V17 := $(FLUX_API_V17)
FLUX_API_V17_MODULES := \
	github.com/fluxcd/helm-controller/api@v1.7.1@81242ce198d3f9dac15dda55b663b6133572ea3c23586165e315a4e73bc0f651 \
	github.com/fluxcd/source-controller/api@v1.10.0@9a4fbc20c448430b003b68342c7d913780982e27e3b3e1d4d843c7fba2d9fde2 \
	github.com/fluxcd/pkg/apis/meta@v1.38.0@44df288a82659d401222df0bedff11f165932c0120026024d35e769538e18ca6 \
	github.com/fluxcd/pkg/apis/kustomize@v1.23.0@ec93d8dbbb5becad58ef5a5f7c3429b52d00bc5cf3bf3d6ff813a22d4c2cf8b2

$(FLUX_API_V17)/.complete:
	@for m in $(FLUX_API_V17_MODULES); do \
		mod=$${m%%@*}; rest=$${m#*@}; version=$${rest%%@*}; sum=$${rest#*@}; \
		GO=$(GO) hack/fetch-module.sh $$mod $$version $$sum $(FLUX_API_V17)/$$mod || exit 1; \
	done
	@touch $@

$(HELM_CONTROLLER_SRC)/.complete:
	GO=$(GO) hack/fetch-module.sh github.com/fluxcd/helm-controller $(HELM_CONTROLLER_VERSION) \
		$(HELM_CONTROLLER_ZIP_SHA256) $(HELM_CONTROLLER_SRC)
	cd $(HELM_CONTROLLER_SRC) && $(GO) mod edit \
		-replace github.com/fluxcd/helm-controller/api=github.com/fluxcd/helm-controller/api@$(HELM_CONTROLLER_VERSION)
	@touch $@

$(HELM_CONTROLLER): $(HELM_CONTROLLER_SRC)/.complete
	@echo ">> building helm-controller from its module source into $(dir $@) (once; about 16 minutes on 2 shared cores)"
	cd $(HELM_CONTROLLER_SRC) && GOFLAGS="-mod=mod -buildvcs=false" $(PHASE) "tool helm-controller" $(GO) build -trimpath -ldflags "-s -w" -o $@.tmp .
	@mv $@.tmp $@

$(HELM_CONTROLLER_CRDS)/.complete: $(HELM_CONTROLLER_SRC)/.complete
	@rm -rf $(HELM_CONTROLLER_CRDS).tmp && mkdir -p $(HELM_CONTROLLER_CRDS).tmp && \
	cp $(HELM_CONTROLLER_SRC)/config/crd/bases/*.yaml $(HELM_CONTROLLER_CRDS).tmp/ && \
	rm -rf $(HELM_CONTROLLER_CRDS) && mv $(HELM_CONTROLLER_CRDS).tmp $(HELM_CONTROLLER_CRDS)
	@touch $@

.PHONY: helm-controller
helm-controller: $(HELM_CONTROLLER) $(HELM_CONTROLLER_CRDS)/.complete ## Build Flux helm-controller and collect its CRDs (migration test).
# --- end helm-controller ---

# --- OLM ---
# operator-sdk (bundle generation and validation), the scorecard-test binary the
# scorecard image runs, OLM's olm and catalog operators and opm are built from
# pinned modules under hack/tools (their dependency graphs conflict with the
# operator's). Tests find them through the exported KRAAN_* variables and fail,
# naming the make target, when they are unset. Their paths are defined with the
# other tools at the top of this file.

SDK_PKG := github.com/operator-framework/operator-sdk
SDK_VERSION_PKG := $(SDK_PKG)/internal/version
OPERATOR_SDK_LDFLAGS := -X $(SDK_VERSION_PKG).Version=$(OPERATOR_SDK_VERSION) \
	-X $(SDK_VERSION_PKG).GitVersion=$(OPERATOR_SDK_VERSION) \
	-X $(SDK_VERSION_PKG).GitCommit=$(OPERATOR_SDK_VERSION)-module \
	-X $(SDK_VERSION_PKG).ImageVersion=$(OPERATOR_SDK_VERSION) \
	-X $(SDK_VERSION_PKG).KubernetesVersion=v1.33.1

$(OPERATOR_SDK) $(SCORECARD_TEST) $(OLM) $(OLM_CATALOG) $(OPM): export GOFLAGS := -mod=mod -buildvcs=false
# opm's sqlite needs cgo; olm and catalog share its packages and build with it.
$(OLM) $(OLM_CATALOG) $(OPM): export CGO_ENABLED := 1

# The version stamps only reach operator-sdk: scorecard-test links none of them.
$(OPERATOR_SDK) $(SCORECARD_TEST) &:
	$(call build-tools,operator-sdk,$(OPERATOR_SDK_DIR),$(OPERATOR_SDK_LDFLAGS),about 6 minutes,-tags=containers_image_openpgp \
		$(SDK_PKG)/cmd/operator-sdk $(SDK_PKG)/images/scorecard-test)
$(OLM) $(OLM_CATALOG) $(OPM) &:
	$(call build-tools,olm,$(OLM_DIR),,about 8 minutes,-tags=json1$(comma)containers_image_openpgp \
		github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
		github.com/operator-framework/operator-lifecycle-manager/cmd/catalog \
		github.com/operator-framework/operator-registry/cmd/opm)

comma := ,

# What the tests run: OLM's operators and opm (test/e2e/olm, the image round
# trip). operator-sdk and scorecard-test serve `make bundle`, `make
# bundle-validate` and `make scorecard-local`; the tests validate bundles
# in-process (hack/image/imagebuild/validate_test.go), so `make test` does not
# build them.
.PHONY: olm-runtime
olm-runtime: $(OLM) $(OLM_CATALOG) $(OPM) ## Build OLM's olm and catalog operators and opm (the tests' OLM).

.PHONY: olm-tools
olm-tools: $(OPERATOR_SDK) $(SCORECARD_TEST) olm-runtime ## Build operator-sdk, scorecard-test, OLM and opm.
# --- end OLM ---

# --- demo ---
# `make demo` builds the tools it needs (once), then hack/demo starts a local
# control plane, source-controller, a Git server, a Helm repository and the
# operator, deploys examples/layers and waits for Ctrl-C (docs/demo.md).
DEMO_FLAGS ?=

.PHONY: demo
demo: $(ASSETS) source-controller ## Deploy examples/layers on a local control plane with the operator, live (DEMO_FLAGS=--non-interactive to exit).
	@echo ">> compiling hack/demo (about a minute the first time)"
	$(GO) run ./hack/demo $(DEMO_FLAGS)
# --- end demo ---
