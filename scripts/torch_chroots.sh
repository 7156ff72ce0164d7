#!/usr/bin/env bash
# Builds the Debian root filesystems whose real PyTorch 2.x the torch
# integration tests launch under muster (tests/integration/torch_versions.py):
#
#   trixie -> python3-torch 2.6      sid -> python3-torch 2.14
#
# Each one is `debootstrap --variant=minbase SUITE DIR` (debootstrap's default
# mirror) plus `apt-get install --no-install-recommends python3-torch` inside
# it (~1.9 GB each). The mirror's Release files are past their Valid-Until
# date, hence Acquire::Check-Valid-Until=false.
#
# sid also gets the framework trainers the tests run (python3-transformers,
# python3-accelerate: tests/integration/torch_frameworks_test.py), recorded
# in .muster-extras; a chroot built before they were asked for gets them
# on the next run (~15 s).
#
# Location: ${MUSTER_TORCH_CHROOTS:-/var/cache/muster/torch-chroots}/{trixie,sid}.
# A finished chroot holds .muster-torch-version (its torch version) and is
# kept: a second run only prints the versions. A chroot without that marker
# (an interrupted build) is removed and built again. Nothing is mounted.
# Both are built in parallel (measured faster than one after the other: the
# downloads overlap the unpacking).
#
# Needs root (debootstrap, chroot). Run as another user it says why and exits
# 0 without building; the torch 2.x tests then report Skipped.
#
# Usage: scripts/torch_chroots.sh [SUITE...]   (default: trixie sid)
set -euo pipefail

BASE=${MUSTER_TORCH_CHROOTS:-/var/cache/muster/torch-chroots}
MARKER=.muster-torch-version
EXTRAS_MARKER=.muster-extras
declare -A EXTRAS=([sid]="python3-transformers python3-accelerate")
APT=(apt-get -o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0 -q)
SUITES=("$@")
((${#SUITES[@]} > 0)) || SUITES=(trixie sid)

if [[ $(id -u) != 0 ]]; then
  echo "torch_chroots.sh: not root: debootstrap and chroot need root; the torch 2.x chroots" \
    "are not built and their tests will be skipped"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "== installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# Unmounts whatever is still mounted under $1 (debootstrap mounts /proc and
# /sys in its target while it runs; an interrupted run can leave them), deepest
# first, so that removing the directory never reaches into a mounted host tree.
unmount_under() {
  local dir mounts
  dir=$(realpath -m "$1")
  mapfile -t mounts < <(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  for m in "${mounts[@]}"; do
    umount -l "$m" || true
  done
}

# Installs the suite's extra packages into chroot $2 unless its marker lists
# them already (after `apt-get update` when $3 is "update").
install_extras() {
  local suite=$1 dir=$2 want=${EXTRAS[$1]:-}
  [[ -n $want ]] || return 0
  [[ $(cat "$dir/$EXTRAS_MARKER" 2>/dev/null) == "$want" ]] && return 0
  echo "== apt-get install $want ($suite)"
  if [[ ${3:-} == update ]]; then chroot "$dir" "${APT[@]}" update; fi
  # shellcheck disable=SC2086 # a list of package names
  DEBIAN_FRONTEND=noninteractive chroot "$dir" "${APT[@]}" install -y --no-install-recommends $want
  chroot "$dir" apt-get clean
  echo "$want" >"$dir/$EXTRAS_MARKER"
}

# Builds one suite into $BASE/$suite (through $BASE/$suite.partial, renamed
# once complete). Output goes to $BASE/$suite.log; the last lines are shown on failure.
build_suite() {
  local suite=$1 dir="$BASE/$1" work="$BASE/$1.partial" log="$BASE/$1.log"
  unmount_under "$work"
  rm -rf --one-file-system "$work"
  {
    echo "== debootstrap $suite"
    debootstrap --variant=minbase "$suite" "$work"
    echo "== apt-get install python3-torch ($suite)"
    chroot "$work" "${APT[@]}" update
    DEBIAN_FRONTEND=noninteractive chroot "$work" "${APT[@]}" install -y --no-install-recommends python3-torch
    chroot "$work" apt-get clean
    install_extras "$suite" "$work"
    chroot "$work" /usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null | tail -n 1 >"$work/$MARKER.tmp"
    mv "$work/$MARKER.tmp" "$work/$MARKER"
  } >"$log" 2>&1 || {
    unmount_under "$work"
    echo "$suite: build failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    return 1
  }
  unmount_under "$work"
  mv "$work" "$dir"
}

# The trap covers an interrupted run: no mount is left behind.
cleanup() {
  for suite in "${SUITES[@]}"; do unmount_under "$BASE/$suite.partial"; done
}
trap cleanup EXIT

mkdir -p "$BASE"
pids=()
todo=()
for suite in "${SUITES[@]}"; do
  if [[ -s "$BASE/$suite/$MARKER" ]]; then
    install_extras "$suite" "$BASE/$suite" update >>"$BASE/$suite.log" 2>&1 ||
      echo "$suite: installing ${EXTRAS[$suite]} failed (see $BASE/$suite.log)" >&2
    continue
  fi
  unmount_under "$BASE/$suite"
  rm -rf --one-file-system "$BASE/$suite"
  echo "== building $BASE/$suite (log: $BASE/$suite.log)"
  build_suite "$suite" &
  pids+=($!)
  todo+=("$suite")
done

start=$SECONDS
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; fi
done
((${#todo[@]} == 0)) || echo "== built ${todo[*]} in $((SECONDS - start)) s"

for suite in "${SUITES[@]}"; do
  if [[ -s "$BASE/$suite/$MARKER" ]]; then
    echo "$suite: torch $(cat "$BASE/$suite/$MARKER") in $BASE/$suite"
  else
    echo "$suite: missing (build failed)"
  fi
done
exit "$failed"
