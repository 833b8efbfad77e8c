# The container images the Helm chart runs (see docs/images.md and
# internal/imagebuild): OCI archives under $(BIN)/images, tagged from
# git describe (the version the binaries report), never "latest". No registry is needed to build them.
#
#   make image          build migpro-agent-<tag>.tar and migpro-admission-<tag>.tar
#   make -s image-tag   print <tag>

IMAGE_TAG     ?= $(VERSION)
IMAGE_REPO    ?= ghcr.io/migpro
IMAGE_BIN      = $(BIN)/image-bin
# A static busybox (Debian's busybox-static) gives the agent image the sh, cp
# and mv its init container uses.
IMAGE_BUSYBOX ?= /bin/busybox

.PHONY: image image-tag image-busybox
image: $(BIN)/libmigpro-shim.so simdriver image-busybox
	@[ -n "$(IMAGE_TAG)" ] || { echo "image: no tag (not a git checkout? set IMAGE_TAG)"; exit 1; }
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
