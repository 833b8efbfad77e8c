# Shared helpers for the e2e set-up scripts. Source it; do not run it.
#
# MIGPRO_E2E_CACHE (default /var/cache/migpro-e2e) holds everything the
# scripts build or write, outside the work tree, so a second run is fast:
#   $MIGPRO_E2E_CACHE/bin/           containerd, ctr, shim, kubelet, ...
#   $MIGPRO_E2E_CACHE/containers.conf
#   $MIGPRO_E2E_CACHE/stamps/        version stamps of finished steps

MIGPRO_E2E_CACHE="${MIGPRO_E2E_CACHE:-/var/cache/migpro-e2e}"
E2E_BIN="$MIGPRO_E2E_CACHE/bin"
E2E_STAMPS="$MIGPRO_E2E_CACHE/stamps"
mkdir -p "$E2E_BIN" "$E2E_STAMPS"

# log prints a progress line with the script name and elapsed seconds.
log() { printf '[e2e-setup %s %3ds] %s\n' "$(basename "$0" .sh)" "$SECONDS" "$*"; }

die() { log "ERROR: $*"; exit 1; }

# stamp_ok NAME VALUE: true when step NAME last finished with VALUE.
stamp_ok() { [ -f "$E2E_STAMPS/$1" ] && [ "$(cat "$E2E_STAMPS/$1")" = "$2" ]; }

# stamp_set NAME VALUE records that step NAME finished with VALUE.
stamp_set() { printf '%s\n' "$2" >"$E2E_STAMPS/$1.tmp" && mv "$E2E_STAMPS/$1.tmp" "$E2E_STAMPS/$1"; }

# need_root stops unless the script runs as root (apt-get, mknod, cgroups).
need_root() { [ "$(id -u)" = 0 ] || die "must run as root"; }

# E2E_ROOT is the repository root (the script lives in e2e/setup).
E2E_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# output_has PATTERN CMD...: true when CMD's whole output contains PATTERN.
# The output is captured first and matched after. Piping CMD into a grep that
# quits at its first match is a race when the shell fails on a broken pipe: CMD may
# die of SIGPIPE and fail the step although the text was there.
output_has() {
	local want=$1 out
	shift
	out=$("$@" 2>&1) || return 1
	[[ $out == *"$want"* ]]
}
