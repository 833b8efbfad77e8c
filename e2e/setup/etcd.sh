#!/usr/bin/env bash
# Builds etcd v3.5.21 from the committed build module e2e/build/etcd into
# $MIGPRO_E2E_CACHE/bin/etcd (about 30 s cold). For the control-plane tests.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION=v3.5.21
MODDIR="$E2E_ROOT/e2e/build/etcd"
key="$VERSION $(cat "$MODDIR/go.mod" "$MODDIR/go.sum" "$MODDIR/main.go" | sha256sum | cut -c1-16)"
if [ -x "$E2E_BIN/etcd" ] && stamp_ok etcd "$key"; then
	log "etcd $VERSION already built in $E2E_BIN"
	exit 0
fi
log "building etcd $VERSION; ~30 s cold"
(cd "$MODDIR" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$E2E_BIN/etcd" .)
output_has "etcd Version: ${VERSION#v}" "$E2E_BIN/etcd" --version ||
	die "etcd reports '$("$E2E_BIN/etcd" --version | head -n 1)', want $VERSION"
stamp_set etcd "$key"
log "etcd $VERSION built"
