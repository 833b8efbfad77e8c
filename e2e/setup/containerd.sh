#!/usr/bin/env bash
# Builds containerd, ctr and containerd-shim-runc-v2 at a pinned version
# from the Go module proxy into $MIGPRO_E2E_CACHE/bin. About 105 s cold on
# 2 cores; a second run only checks the stamp and the binaries.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION="${CONTAINERD_VERSION:-v2.4.2}"
MOD=github.com/containerd/containerd/v2
BINS=(containerd ctr containerd-shim-runc-v2)

have=1
for b in "${BINS[@]}"; do [ -x "$E2E_BIN/$b" ] || have=0; done
if [ $have = 1 ] && stamp_ok containerd "$VERSION" &&
	output_has " $VERSION " "$E2E_BIN/containerd" --version; then
	log "containerd $VERSION already built in $E2E_BIN"
	exit 0
fi

log "building containerd $VERSION (${BINS[*]}); ~2 min cold"
pkgs=()
for b in "${BINS[@]}"; do pkgs+=("$MOD/cmd/$b@$VERSION"); done
GOBIN="$E2E_BIN" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
	-ldflags "-s -w -X $MOD/version.Version=$VERSION -X $MOD/version.Revision=proxy" \
	"${pkgs[@]}"
output_has " $VERSION " "$E2E_BIN/containerd" --version ||
	die "built containerd reports '$("$E2E_BIN/containerd" --version)', want $VERSION"
stamp_set containerd "$VERSION"
log "containerd $VERSION built"
