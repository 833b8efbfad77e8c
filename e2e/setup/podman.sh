#!/usr/bin/env bash
# Installs podman, runc, conmon, static busybox and the CNI plugins from
# Debian, and writes the containers.conf the e2e tests pass through
# CONTAINERS_CONF (runc and explicit ulimits; see docs/e2e.md).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# With their recommends (netavark, catatonit, ...), as on the machines the
# notes in docs/e2e.md were measured on.
PKGS=(podman runc conmon busybox-static iptables containernetworking-plugins)

missing=()
for p in "${PKGS[@]}"; do
	if ! output_has 'install ok installed' dpkg-query -W -f='${Status}' "$p"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	log "debian packages already installed (${PKGS[*]})"
else
	export DEBIAN_FRONTEND=noninteractive
	# apt-get update only when the lists do not know a missing package.
	if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
		log "apt-get update"
		apt-get -o DPkg::Lock::Timeout=600 update -qq
	fi
	install() {
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
	}
	log "apt-get install ${missing[*]}"
	if ! install; then
		# Stale package lists give 404s: refresh once and retry.
		log "install failed; apt-get update and retry"
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		install
	fi
fi

for b in /usr/bin/podman /usr/sbin/runc /usr/bin/conmon /bin/busybox /usr/lib/cni/bridge; do
	[ -x "$b" ] || die "$b missing after install"
done

conf="$MIGPRO_E2E_CACHE/containers.conf"
want='# Written by e2e/setup/podman.sh. crun cannot run on these hybrid-cgroup
# machines and runc cannot raise RLIMIT_NOFILE without CAP_SYS_RESOURCE,
# so pin runc and explicit ulimits.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"'
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
	printf '%s\n' "$want" >"$conf.tmp" && mv "$conf.tmp" "$conf"
	log "wrote $conf"
fi
log "podman $(podman --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), ok"
