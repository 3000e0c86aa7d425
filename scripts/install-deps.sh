#!/usr/bin/env bash
# Installs what building and testing the engine needs: DPDK (>= 22.11) dev
# package, pkg-config, clang/libclang (bindgen), iproute2 (veth/tbf).
# Idempotent; a fast no-op when everything is already there.
set -euo pipefail

need=()
pkg-config --exists 'libdpdk >= 22.11' 2>/dev/null || need+=(libdpdk-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v clang >/dev/null 2>&1 || need+=(clang)
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-*.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v cc >/dev/null 2>&1 || need+=(gcc)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

# Deduplicate the list.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
echo "install-deps: installing ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
pkg-config --exists 'libdpdk >= 22.11' || {
  echo "install-deps: libdpdk >= 22.11 still not found after install" >&2
  exit 1
}
echo "install-deps: done (DPDK $(pkg-config --modversion libdpdk))" >&2
