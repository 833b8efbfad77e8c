#!/usr/bin/env bash
# Builds the Kubernetes v1.37.2 binaries from the committed build module
# e2e/build/kubelet into $MIGPRO_E2E_CACHE/bin, in one `go build` so they
# share compiled packages: kubelet, kube-apiserver, kube-scheduler,
# kube-controller-manager and kubectl (about 6.5 min cold on 2 cores;
# kubelet alone about 5 min). E2E_KUBE_BINARIES="kubelet" builds only the
# kubelet. A second run only checks the stamp and the binaries.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VERSION=v1.37.2
BINS=(${E2E_KUBE_BINARIES:-kubelet kube-apiserver kube-scheduler kube-controller-manager kubectl})
MODDIR="$E2E_ROOT/e2e/build/kubelet"

# The stamp covers the version, the module files and the binary list, so
# an edit to any of them rebuilds.
key="$VERSION $(cat "$MODDIR/go.mod" "$MODDIR/go.sum" | sha256sum | cut -c1-16) ${BINS[*]}"
have=1
for b in "${BINS[@]}"; do [ -x "$E2E_BIN/$b" ] || have=0; done
if [ $have = 1 ] && stamp_ok kube "$key"; then
	log "kubernetes $VERSION (${BINS[*]}) already built in $E2E_BIN"
	exit 0
fi

log "building kubernetes $VERSION: ${BINS[*]}; ~5-7 min cold"
pkgs=()
for b in "${BINS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ld+=" -X $p.gitVersion=$VERSION -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
done
(cd "$MODDIR" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$E2E_BIN/" "${pkgs[@]}")
for b in "${BINS[@]}"; do
	[ -x "$E2E_BIN/$b" ] || die "$b not built"
done
output_has "Kubernetes $VERSION" "$E2E_BIN/kubelet" --version ||
	die "kubelet reports '$("$E2E_BIN/kubelet" --version)', want $VERSION"
stamp_set kube "$key"
log "kubernetes $VERSION built"
