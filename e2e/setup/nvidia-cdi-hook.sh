#!/usr/bin/env bash
# Builds NVIDIA's nvidia-cdi-hook at a pinned version of the
# nvidia-container-toolkit module from the Go module proxy into
# $MIGPRO_E2E_CACHE/bin. The CDI specs migpro composes with the driver's
# edits name it in their createContainer hooks (create-symlinks,
# update-ldcache, disable-device-node-modification, ...), so podman,
# containerd and the kubelet really run those hooks in the e2e tests. The
# version is the one go.mod pins for pkg/nvcdi, so the hooks and the edits
# that call them come from the same release.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION="${NVIDIA_CTK_VERSION:-v1.20.1}"
MOD=github.com/NVIDIA/nvidia-container-toolkit
BIN="$E2E_BIN/nvidia-cdi-hook"

if [ -x "$BIN" ] && stamp_ok nvidia-cdi-hook "$VERSION" &&
	output_has "${VERSION#v}" "$BIN" --version; then
	log "nvidia-cdi-hook $VERSION already built in $E2E_BIN"
	exit 0
fi

log "building nvidia-cdi-hook $VERSION; ~1 min cold"
# go-nvml needs cgo; its headers warn about deprecated declarations.
GOBIN="$E2E_BIN" CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" GOFLAGS=-buildvcs=false go install -trimpath \
	-ldflags "-s -w -X $MOD/internal/info.version=${VERSION#v}" \
	"$MOD/cmd/nvidia-cdi-hook@$VERSION"
output_has "${VERSION#v}" "$BIN" --version ||
	die "built nvidia-cdi-hook reports '$("$BIN" --version 2>&1)', want $VERSION"
stamp_set nvidia-cdi-hook "$VERSION"
log "nvidia-cdi-hook $VERSION built"
