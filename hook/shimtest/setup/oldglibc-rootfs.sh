#!/usr/bin/env bash
# Builds a minimal rootfs with the oldest glibc the reachable Debian archive
# offers (bullseye: glibc 2.31; older suites are no longer on deb.debian.org),
# plus its development files, so tests can build programs against that glibc
# (gcc --sysroot) and run them in it (chroot). Uses apt with a private
# sources list, lists and cache: the system's apt state is not touched.
#
#   hook/shimtest/setup/oldglibc-rootfs.sh DIR
#
# DIR/rootfs is the result; DIR/rootfs/.ready marks a finished build, so a
# second run does nothing.
set -euo pipefail
dir=${1:?usage: $0 DIR}
suite=${OLDGLIBC_SUITE:-bullseye}
root="$dir/rootfs"
if [ -f "$root/.ready" ]; then
	exit 0
fi
work="$dir/apt"
rm -rf "$root" "$work"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$root"
: >"$work/status"
cat >"$work/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$work/lists" -o "Dir::State::status=$work/status" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1"
	-o "APT::Architecture=amd64" -o "APT::Architectures::=amd64")
apt-get "${apt_opts[@]}" update >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }
# libc6 and its headers; libgcc-s1 for pthread_cancel's unwinder; the
# kernel headers libc6-dev's headers include.
(cd "$work/debs" && apt-get "${apt_opts[@]}" download libc6 libc6-dev libgcc-s1 linux-libc-dev libcrypt1 libcrypt-dev >"$work/download.log" 2>&1) ||
	{ cat "$work/download.log" >&2; exit 1; }
for deb in "$work"/debs/*.deb; do
	dpkg-deb -x "$deb" "$root"
done
# The packages' links are absolute (/lib/...): make them relative, so the
# rootfs also works as a sysroot from outside (gcc --sysroot).
find "$root" -type l | while read -r link; do
	target=$(readlink "$link")
	case $target in
	/*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$root$target")" "$link" ;;
	esac
done
mkdir -p "$root/tmp" "$root/dev" "$root/run"
ver=$(ls "$work"/debs/libc6_*.deb)
echo "glibc from ${ver##*/}" >"$root/.ready"
