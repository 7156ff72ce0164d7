#!/usr/bin/env bash
# The .deb on a machine that has never seen muster: a fresh Debian bookworm
# chroot (`debootstrap --variant=minbase bookworm`, debootstrap's default
# mirror) where `apt-get install ./muster_*.deb` must find every dependency
# in Debian. Then, in the chroot:
#   - muster, musterd and muster-train --version print the package's version;
#   - installing pulled no -dev package, and /etc/muster/musterd.json is a
#     conffile (a local edit survives reinstalling);
#   - `muster --standalone --nproc-per-node 2 --no-python muster-train
#     --backend gloo --steps 20` trains;
#   - musterd runs as the musterd user from its installed config, and an
#     elastic job and `muster status` use it;
#   - systemd-analyze verifies musterd.service and rates its exposure;
#   - tests/packaging/consumer builds with find_package(muster) and with
#     pkg-config, every installed header compiles alone, two ranks allreduce;
#   - the muster Python package is installed where Debian's python3 finds it;
#   - purging removes the files and the conffile.
#
# Usage: tests/packaging/deb_in_bookworm.sh DEB
# Exit: 0 passed, 1 failed, 77 skipped (not root: debootstrap, chroot and
# namespaces need root; the reason is printed).
#
# The pristine base is built once and kept in
# ${MUSTER_BOOKWORM_BASE:-/var/cache/muster/bookworm-minbase} (never changed
# after); each run copies it into a new directory under /var/tmp, removed at
# exit, and downloaded packages are kept in $BASE.apt-archives. Everything
# runs in private mount and PID namespaces (nothing stays mounted, and every
# process dies with the namespace); the checks run without network, in a
# private network namespace, so ports cannot clash with the host's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SOURCE_DIR=$(cd "$HERE/../.." && pwd)
BASE=${MUSTER_BOOKWORM_BASE:-/var/cache/muster/bookworm-minbase}
ARCHIVES="$BASE.apt-archives"
MARKER=.muster-pristine
APT=(apt-get -q -y -o Acquire::Check-Valid-Until=false -o Dpkg::Use-Pty=0 --no-install-recommends)

# --- inside the namespaces -------------------------------------------------
# "inside PHASE ROOT": PHASE install (with network) or check (without).
if [[ "${1:-}" == "--inside" ]]; then
  phase=$2 root=$3
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --bind "$ARCHIVES" "$root/var/cache/apt/archives"
  if [[ $phase == check ]]; then ip link set lo up; fi
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive /bin/bash "/tmp/muster-pkg/phase-$phase.sh"
fi

# --- outside -----------------------------------------------------------------
if (($# != 1)) || [[ ! -f "$1" ]]; then
  echo "usage: $0 DEB (got: ${*:-nothing})" >&2
  exit 2
fi
DEB=$(realpath "$1")
if [[ $(id -u) != 0 ]]; then
  echo "deb_in_bookworm.sh: SKIP: not root: debootstrap, chroot and namespaces need root"
  exit 77
fi
if ! command -v debootstrap >/dev/null; then
  echo "== installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
for tool in debootstrap unshare ip; do
  command -v "$tool" >/dev/null || { echo "deb_in_bookworm.sh: $tool is missing" >&2; exit 1; }
done

if [[ ! -f "$BASE/$MARKER" ]]; then
  echo "== debootstrap --variant=minbase bookworm $BASE (once; kept)"
  rm -rf --one-file-system "$BASE.partial"
  mkdir -p "$(dirname "$BASE")"
  # In a private mount namespace: whatever debootstrap mounts goes with it.
  unshare --mount --propagation private debootstrap --variant=minbase bookworm "$BASE.partial" \
    >"$BASE.log" 2>&1 || { tail -n 20 "$BASE.log" >&2; exit 1; }
  rm -f "$BASE.partial/var/cache/apt/archives/"*.deb
  touch "$BASE.partial/$MARKER"
  rm -rf --one-file-system "$BASE"
  mv "$BASE.partial" "$BASE"
fi
mkdir -p "$ARCHIVES/partial"

ROOT=$(mktemp -d /var/tmp/muster-deb-test.XXXXXX)
cleanup() { rm -rf --one-file-system "$ROOT"; }
trap cleanup EXIT
start=$SECONDS
cp -a "$BASE/." "$ROOT/"
rm "$ROOT/$MARKER"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mkdir -p "$ROOT/tmp/muster-pkg"
cp "$DEB" "$ROOT/tmp/muster-pkg/"
cp -r "$SOURCE_DIR/tests/packaging/consumer" "$ROOT/tmp/muster-pkg/consumer"
VERSION=$(dpkg-deb -f "$DEB" Version)
echo "$VERSION" >"$ROOT/tmp/muster-pkg/version"

# Phase 1, with network: the package alone, then the consumer's tools.
cat >"$ROOT/tmp/muster-pkg/phase-install.sh" <<EOF
set -euo pipefail
cd /tmp/muster-pkg
echo "== apt-get install ./$(basename "$DEB") in a fresh bookworm"
${APT[*]} update >/dev/null
${APT[*]} install ./$(basename "$DEB")
dpkg-query -W -f='\${binary:Package}\n' | grep -- '-dev\$' >dev-packages.txt || true
dpkg-query -W -f='\${Conffiles}\n' muster >conffiles.txt
echo "== apt-get install cmake g++ make pkgconf systemd (the consumer's tools, systemd-analyze)"
${APT[*]} install cmake g++ make pkgconf systemd >/dev/null
EOF

# Phase 2, without network: the checks.
cat >"$ROOT/tmp/muster-pkg/phase-check.sh" <<'EOF'
set -uo pipefail
cd /tmp/muster-pkg
VERSION=$(cat version)
failures=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
check() { local name=$1; shift; if "$@" >"log.$name" 2>&1; then pass "$name"; else fail "$name"; tail -n 30 "log.$name"; fi; }

versions() {
  for program in muster musterd muster-train; do
    out=$("$program" --version) || return 1
    [[ $out == "$program $VERSION" ]] || { echo "$program --version: '$out', want '$program $VERSION'"; return 1; }
  done
}
no_dev_packages() { [[ ! -s dev-packages.txt ]] || { cat dev-packages.txt; return 1; }; }
conffile_kept() {
  grep -q '^ /etc/muster/musterd.json ' conffiles.txt || { cat conffiles.txt; return 1; }
  echo '// a local edit' >>/etc/muster/musterd.json
  dpkg -i --force-confold ./muster_*.deb
  grep -q '^// a local edit$' /etc/muster/musterd.json
}
standalone_training() {
  muster --standalone --nproc-per-node 2 --no-python muster-train --backend gloo --steps 20
}
musterd_from_installed_config() {
  # As musterd.service runs it: the musterd user and group (setpriv execs, so $! is musterd).
  setpriv --reuid musterd --regid musterd --clear-groups musterd --config /etc/muster/musterd.json >musterd.out 2>musterd.err &
  local pid=$!
  for _ in $(seq 100); do grep -q "listening" musterd.out && break; sleep 0.05; done
  grep -q "^musterd listening on 0.0.0.0:29400$" musterd.out || { cat musterd.out musterd.err; kill $pid; return 1; }
  [[ $(stat -c %U /proc/$pid) == musterd ]] || { echo "musterd runs as $(stat -c %U /proc/$pid)"; kill $pid; return 1; }
  muster --nnodes 1 --nproc-per-node 2 --rdzv-backend muster --rdzv-endpoint 127.0.0.1 \
    --rdzv-id package-test --no-python muster-train --backend gloo --steps 10 || { kill $pid; return 1; }
  muster status --rdzv-endpoint 127.0.0.1:29400 || { kill $pid; return 1; }
  kill $pid
  wait $pid || true
}
service_unit() {
  SYSTEMD_LOG_LEVEL=err systemd-analyze verify --man=no /usr/lib/systemd/system/musterd.service || return 1
  # --threshold is in tenths: 20 fails above an exposure of 2.0 of 10 (the unit rates 1.4).
  systemd-analyze security --offline=yes --threshold=20 musterd.service | tail -n 1
}
cmake_consumer() {
  cmake -S consumer -B consumer-build && cmake --build consumer-build --parallel "$(nproc)" &&
    muster --standalone --nproc-per-node 2 --no-python ./consumer-build/consumer | tee consumer.out &&
    grep -q "consumer rank=1 world=2 sum=1 runtime=$VERSION" consumer.out
}
pkg_config_consumer() {
  g++ -std=c++20 -Wall -Werror consumer/main.cc $(pkg-config --cflags --libs muster-runtime) -o consumer-pc &&
    ./consumer-pc | grep -q "consumer rank=0 world=1 sum=0 runtime=$VERSION"
}
docs_installed() {
  for page in muster musterd muster-train; do
    gzip -t "/usr/share/man/man1/$page.1.gz" || return 1
  done
  bash -c 'source /usr/share/bash-completion/completions/muster && complete -p muster' &&
    bash -c 'source /usr/share/bash-completion/completions/musterd && complete -p musterd'
}
python_package() {
  # The package is pure Python; minbase has no python3, so the import is
  # checked with the chroot's python3 when there is one.
  [[ -f /usr/lib/python3/dist-packages/muster/in_place.py ]] || { echo "no muster Python package"; return 1; }
  if command -v python3 >/dev/null; then
    python3 -B -c 'import muster, muster.session; print(muster.__version__)' | grep -qx "$VERSION"
  fi
}
purge() {
  dpkg --purge muster || return 1
  for gone in /usr/bin/muster /usr/bin/musterd /etc/muster/musterd.json /usr/include/muster \
    /usr/lib/python3/dist-packages/muster; do
    [[ ! -e $gone ]] || { echo "$gone is left after purge"; return 1; }
  done
}

check versions versions
check no_dev_packages no_dev_packages
check conffile_kept conffile_kept
check standalone_training standalone_training
check musterd_from_installed_config musterd_from_installed_config
check service_unit service_unit && tail -n 1 log.service_unit
check cmake_consumer cmake_consumer
check pkg_config_consumer pkg_config_consumer
check docs_installed docs_installed
check python_package python_package
check purge purge
echo "$failures failed"
exit $((failures > 0))
EOF

run_phase() {
  local phase=$1; shift
  unshare --mount --propagation private --pid --fork "$@" "$0" --inside "$phase" "$ROOT"
}
if ! run_phase install >"$ROOT/install.log" 2>&1; then
  tail -n 40 "$ROOT/install.log"
  echo "deb_in_bookworm.sh: FAIL: installing the package failed"
  exit 1
fi
grep -E "^== |^Setting up muster" "$ROOT/install.log"
echo "== checks (no network)"
if run_phase check --net; then
  echo "deb_in_bookworm.sh: PASS ($((SECONDS - start)) s)"
else
  echo "deb_in_bookworm.sh: FAIL"
  exit 1
fi
