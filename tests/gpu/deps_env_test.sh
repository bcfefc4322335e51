#!/usr/bin/env bash
# tests/gpu/deps_env_test.sh: tests/gpu/deps_env.sh on this machine, with a
# made-up bundle (no network): a dependency the machine "lacks" (its
# pkg-config files hidden) is unpacked from the bundle's .deb into a private
# prefix and found there, relocated; one the bundle lacks too is reported
# MISSING and the script fails; the machine's own are used as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v dpkg-deb >/dev/null || { echo "skipped: no dpkg-deb"; exit 0; }
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-depstest.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# a bundle with one package: libcjson's pkg-config file and a library that
# names a soname no machine has (so the "lib" rule must unpack it)
pkg=$work/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/x86_64-linux-gnu/pkgconfig" "$pkg/usr/include/cjson"
printf 'Package: fake-cjson\nVersion: 1\nArchitecture: amd64\nMaintainer: weft\nDescription: test\n' >"$pkg/DEBIAN/control"
printf 'prefix=/usr\nlibdir=/usr/lib/x86_64-linux-gnu\nincludedir=${prefix}/include\n\nName: libcjson\nDescription: test\nVersion: 9.9\nLibs: -L${libdir} -lcjson\nCflags: -I${includedir}\n' \
  >"$pkg/usr/lib/x86_64-linux-gnu/pkgconfig/libcjson.pc"
echo '/* test */' >"$pkg/usr/include/cjson/cJSON.h"
ln -s /usr/include/cjson/cJSON.h "$pkg/usr/include/cjson/link.h"   # an absolute link
mkdir -p "$work/bundle"
dpkg-deb -b "$pkg" "$work/bundle/fake-cjson_1_amd64.deb" >/dev/null
echo "cjson top fake-cjson fake-cjson_1_amd64.deb" >"$work/bundle/manifest.txt"
echo "lua lib fake-lua fake-lua_1_amd64.deb libweft-nowhere.so.7" >>"$work/bundle/manifest.txt"

# the machine's pkg-config files hidden: lua5.4, openblas and libcjson are "missing"
log=$work/deps.txt
rc=0
(
  export PKG_CONFIG_LIBDIR=/nonexistent WEFT_DEPS=$work/prefix WEFT_DEPS_BUNDLE=$work/bundle DEPS_LOG=$log
  unset WEFT_DEPS_READY
  source tests/gpu/deps_env.sh >/dev/null || exit 3
) || rc=$?
passed=0 failed=0
check() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; cat "$log"; fi
}
check "a dependency missing everywhere fails the setup" test "$rc" = 3
check "libcjson comes from the bundle" grep -q "^libcjson: carried .debs -> fake-cjson, unpacked in $work/prefix" "$log"
check "its pkg-config file points into the prefix" \
  test "$(PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH=$work/prefix/usr/lib/x86_64-linux-gnu/pkgconfig \
          pkg-config --cflags libcjson | xargs)" = "-I$work/prefix/usr/include"
check "absolute links are repointed into the prefix" \
  test "$(readlink "$work/prefix/usr/include/cjson/link.h")" = "$work/prefix/usr/include/cjson/cJSON.h"
check "lua is missing: not in the machine, no .deb" grep -q "^lua5.4: MISSING" "$log"
check "the machine's compiler is used" grep -q "^cc: machine: " "$log"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
