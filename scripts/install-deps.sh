#!/usr/bin/env bash
# Installs what building and testing the engine needs: DPDK (>= 22.11) dev
# package, pkg-config, clang/libclang (bindgen), iproute2 (veth/tbf), tshark
# (tests/capture.rs reads --capture files with scripts/wireshark/erpc.lua),
# valgrind (scripts/cost.sh counts the data path's instructions), binutils
# (scripts/cost-stages.sh maps them to source with addr2line), and the
# net_vhost, net_virtio and net_af_xdp drivers (docs/links.md).
# Non-interactive (runs as root in CI with no stdin). Idempotent; a fast no-op when everything is already there.
set -euo pipefail

need=()
pkg-config --exists 'libdpdk >= 22.11' 2>/dev/null || need+=(libdpdk-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v clang >/dev/null 2>&1 || need+=(clang)
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-*.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v addr2line >/dev/null 2>&1 || need+=(binutils)
# The virtio and af_xdp links' drivers (libdpdk-dev usually brings them).
pmd() { ls /usr/lib/*/dpdk/pmds-*/librte_net_"$1".so* >/dev/null 2>&1; }
pmd vhost || need+=(librte-net-vhost23)
pmd virtio || need+=(librte-net-virtio23)
pmd af_xdp || need+=(librte-net-af-xdp23)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

# Deduplicate the list.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
echo "install-deps: installing ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
if printf '%s\n' "${need[@]}" | grep -qx tshark; then
  # wireshark-common asks whether non-root users may capture; answer "no"
  # up front so the install never waits for a terminal.
  echo 'wireshark-common wireshark-common/install-setuid boolean false' |
    $SUDO debconf-set-selections
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  "${need[@]}" </dev/null >/dev/null
pkg-config --exists 'libdpdk >= 22.11' || {
  echo "install-deps: libdpdk >= 22.11 still not found after install" >&2
  exit 1
}
command -v tshark >/dev/null 2>&1 || {
  echo "install-deps: tshark still not found after install" >&2
  exit 1
}
echo "install-deps: done (DPDK $(pkg-config --modversion libdpdk))" >&2
