# The container images the Helm chart runs (see docs/images.md and
# internal/imagebuild): OCI archives under $(BIN)/images, tagged with the
# chart's appVersion (deploy/helm/migpro/Chart.yaml), never "latest", so a
# chart installed without image.tag pulls what `make image` built; the
# binaries in them report the same version (--version). No registry is
# needed to build them.
#
#   make image          build migpro-agent-<tag>.tar and migpro-admission-<tag>.tar
#   make -s image-tag   print <tag>

CHART_APP_VERSION := $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*$$/\1/p' deploy/helm/migpro/Chart.yaml)
IMAGE_TAG     ?= $(CHART_APP_VERSION)
IMAGE_REPO    ?= ghcr.io/migpro
IMAGE_BIN      = $(BIN)/image-bin
# A static busybox (Debian's busybox-static) gives the agent image the sh, cp
# and mv its init container uses.
IMAGE_BUSYBOX ?= /bin/busybox

.PHONY: image image-tag image-busybox
image: $(BIN)/libmigpro-shim.so simdriver image-busybox
	@[ -n "$(IMAGE_TAG)" ] || { echo "image: no tag (no appVersion in deploy/helm/migpro/Chart.yaml? set IMAGE_TAG)"; exit 1; }
	$(GO) build -trimpath -ldflags "-s -w -X github.com/migpro/migpro/internal/buildinfo.version=$(IMAGE_TAG)" -o $(IMAGE_BIN)/ ./cmd/...
	cp $(BIN)/libmigpro-shim.so $(IMAGE_BIN)/
	mkdir -p $(IMAGE_BIN)/simdriver && cp $(SIMDRIVER_OUT)/libcuda.so $(SIMDRIVER_OUT)/libnvidia-ml.so $(SIMDRIVER_OUT)/nvidia-smi $(IMAGE_BIN)/simdriver/
	$(GO) run ./internal/cmd/mkimage --bin $(IMAGE_BIN) --busybox $(IMAGE_BUSYBOX) \
		--out $(BIN)/images --repo $(IMAGE_REPO) --tag $(IMAGE_TAG)

image-tag:
	@echo $(IMAGE_TAG)

image-busybox:
	@if [ ! -x "$(IMAGE_BUSYBOX)" ]; then \
		echo "[image] installing busybox-static for $(IMAGE_BUSYBOX)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q busybox-static >/dev/null; \
	fi
