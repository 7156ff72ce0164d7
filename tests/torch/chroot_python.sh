#!/usr/bin/env bash
# Runs Debian's python3 of a torch chroot (scripts/torch_chroots.sh) as if it
# were this host's interpreter, so that muster, torchrun and the tests can use
# it wherever they take a Python path (--python, MUSTER_PYTHON):
#
#   MUSTER_TORCH_CHROOT=/var/cache/muster/torch-chroots/sid chroot_python.sh SCRIPT ARGS...
#   MUSTER_TORCH_CHROOT=... chroot_python.sh -m torch.distributed.run ARGS...
#
# Paths mean the same inside and out: in a private mount namespace (unshare
# -m; the mounts vanish with the process, nothing to clean up) the source
# tree, /tmp, /dev and /proc are bind-mounted into the chroot at their own
# paths, /etc/hosts is the caller's, and the working directory is kept.
# Every step execs, so the PID muster or torchrun supervises is the Python
# process itself, and inherited file descriptors (the progress pipe) stay
# open.
#
# The interpreter runs tests/torch/no_libuv.py first: the one change made to
# Debian's torch 2.x (see that file). MUSTER_CHROOT_UNWRAPPED=1 runs the
# script as it is, with Debian's torch unchanged (muster's Python package
# needs no wrapper).
#
# Needs root (unshare -m, chroot).
set -euo pipefail
ROOT=${MUSTER_TORCH_CHROOT:?MUSTER_TORCH_CHROOT must name a chroot built by scripts/torch_chroots.sh}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE=$(cd "$HERE/../.." && pwd)

if [[ ! -x "$ROOT/usr/bin/python3" ]]; then
  echo "chroot_python.sh: MUSTER_TORCH_CHROOT='$ROOT' has no /usr/bin/python3 (run scripts/torch_chroots.sh)" >&2
  exit 127
fi

wrapper=("$SOURCE/tests/torch/no_libuv.py")
[[ ${MUSTER_CHROOT_UNWRAPPED:-0} == 1 ]] && wrapper=()

# Interpreter options (-u, -B, ...) go to python3 itself, before the wrapper.
opts=()
while (($# > 0)) && [[ $1 == -[A-Za-z]* && $1 != -m* && $1 != -c* ]]; do
  opts+=("$1")
  shift
done

# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private /bin/sh -c '
  root=$1 source=$2 cwd=$3
  shift 3
  mkdir -p "$root$source" "$root/tmp" "$root/dev" "$root/proc"
  mount --bind "$source" "$root$source"
  mount --bind /tmp "$root/tmp"
  mount --rbind /dev "$root/dev"
  mount -t proc proc "$root/proc"
  # /etc/hosts as the caller sees it (a private one of a test included):
  # torch resolves this host name, which the file of the chroot does not know.
  touch "$root/etc/hosts"
  mount --bind /etc/hosts "$root/etc/hosts"
  case $cwd in /tmp* | "$source"*) ;; *) cwd=/ ;; esac
  exec chroot "$root" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" \
    /usr/bin/python3 "$@"
' chroot_python "$ROOT" "$SOURCE" "$PWD" "${opts[@]}" "${wrapper[@]}" "$@"
