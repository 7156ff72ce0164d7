#!/usr/bin/env bash
# Installs the Debian packages muster needs to build and test, and only the
# ones that are missing. Safe to run any number of times.
#
# Usage: scripts/install-deps.sh [--build-only]
#   --build-only  skip packages needed only by the test suite (torch, SLURM).
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-all-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libssl-dev
  catch2 libgloo-dev clang-format ccache
)
# clang and libclang-rt-14-dev (libFuzzer, a Recommends only): the fuzz targets.
# etcd-server: a real etcd cluster for the replicated rendezvous tests; openssl:
# their throwaway CA for TLS to etcd. python3-tqdm: a real progress bar for the
# live console output tests. python3-prometheus-client: the real text-format parser
# that checks /metrics. python3-yaml: parses docs/kubernetes.md's manifests.
# chromium and chromium-driver: the status page's browser test.
TEST_PACKAGES=(git python3 python3-torch procps iproute2 util-linux time slurm-wlm munge nftables openssl
  etcd-server python3-tqdm python3-prometheus-client python3-yaml chromium chromium-driver
  clang libclang-rt-14-dev)

packages=("${BUILD_PACKAGES[@]}")
if [[ "${1:-}" != "--build-only" ]]; then
  packages+=("${TEST_PACKAGES[@]}")
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
