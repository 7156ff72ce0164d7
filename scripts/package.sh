#!/usr/bin/env bash
# Builds muster's Debian package: a Release build (warnings are errors, as in
# CI), installed with prefix /usr and /etc into a staging tree, then
# dpkg-deb. The package holds muster, musterd, muster-train, libmuster_runtime
# with its headers, CMake package and pkg-config file, the man pages, bash
# completion, and musterd.service with its conffile /etc/muster/musterd.json.
# Its Depends are what dpkg-shlibdeps finds the binaries link (Debian runtime
# packages only), plus passwd for the postinst's useradd.
#
# CUDA is off: NCCL and the CUDA runtime are not Debian packages, so a
# package linked to them could not declare them. The launcher needs neither
# (it sets CUDA_VISIBLE_DEVICES; workers bring their own CUDA), and
# muster-train trains over Gloo. Build from source with CUDA for NCCL.
#
# Usage: scripts/package.sh [OUT_DIR]   (default build/package)
#        scripts/package.sh --build-only    the Release build alone, no package
#   MUSTER_PACKAGE_BUILD_DIR  the Release build tree (default build-release)
#   MUSTER_PACKAGE_MAINTAINER the control file's Maintainer field
# Prints the path of the .deb last. Idempotent: rebuilds what changed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_ONLY=0
if [[ ${1:-} == --build-only ]]; then
  BUILD_ONLY=1
  shift
fi
OUT_DIR=$(realpath -m "${1:-$ROOT/build/package}")
BUILD_DIR=$(realpath -m "${MUSTER_PACKAGE_BUILD_DIR:-$ROOT/build-release}")
MAINTAINER=${MUSTER_PACKAGE_MAINTAINER:-"muster developers <muster@localhost>"}

"$ROOT/scripts/install-deps.sh" --build-only
"$ROOT/scripts/build.sh" "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DMUSTER_CUDA=off \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc
((BUILD_ONLY == 0)) || exit 0

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD_DIR/CMakeCache.txt")
ARCH=$(dpkg --print-architecture)
# dpkg-shlibdeps' layout: debian/control beside the package's tree debian/muster.
WORK="$BUILD_DIR/package-stage"
STAGE="$WORK/debian/muster"
rm -rf "$WORK"
DESTDIR="$STAGE" cmake --install "$BUILD_DIR" --strip >/dev/null

# Debian's layout: man pages gzipped (-n: no timestamp, reproducible).
gzip -9n "$STAGE"/usr/share/man/man1/*.1

# Depends from what the ELF files link (dpkg-shlibdeps finds the package's
# tree by its DEBIAN folder).
mkdir -p "$STAGE/DEBIAN"
printf 'Source: muster\n\nPackage: muster\nArchitecture: any\n' >"$WORK/debian/control"
mapfile -t elf_files < <(find "$STAGE/usr" -type f -exec sh -c \
  'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
shlibs=$(cd "$WORK" && dpkg-shlibdeps -O "${elf_files[@]}")
DEPENDS="${shlibs#shlibs:Depends=}, passwd"

sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@MAINTAINER@/$MAINTAINER/" \
  -e "s/@INSTALLED_SIZE@/$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)/" \
  -e "s/@DEPENDS@/$DEPENDS/" "$ROOT/packaging/debian/control.in" >"$STAGE/DEBIAN/control"
install -m 0644 "$ROOT/packaging/debian/conffiles" "$STAGE/DEBIAN/conffiles"
install -m 0755 "$ROOT/packaging/debian/postinst" "$ROOT/packaging/debian/prerm" \
  "$ROOT/packaging/debian/postrm" "$STAGE/DEBIAN/"

mkdir -p "$OUT_DIR"
DEB="$OUT_DIR/muster_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
echo "package.sh: Depends: $DEPENDS"
echo "$DEB"
