#!/usr/bin/env bash
# Builds helm (v3, pinned) from the Go module proxy into $MIGPRO_E2E_CACHE/bin,
# with its version stamped in. The chart e2e (TestHelmInstall) and
# `make manifests` use it. A second run only checks the stamp and the binary.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION="${HELM_VERSION:-v3.19.0}"
MOD=helm.sh/helm/v3

if [ -x "$E2E_BIN/helm" ] && stamp_ok helm "$VERSION" &&
	output_has "$VERSION" "$E2E_BIN/helm" version --short; then
	log "helm $VERSION already built in $E2E_BIN"
	exit 0
fi

log "building helm $VERSION; a few minutes cold"
GOBIN="$E2E_BIN" CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
	-ldflags "-s -w -X $MOD/internal/version.version=$VERSION -X $MOD/internal/version.metadata=" \
	"$MOD/cmd/helm@$VERSION"
output_has "$VERSION" "$E2E_BIN/helm" version --short ||
	die "built helm reports '$("$E2E_BIN/helm" version --short)', want $VERSION"
stamp_set helm "$VERSION"
log "helm $VERSION built"
