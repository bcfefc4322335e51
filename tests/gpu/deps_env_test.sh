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

# Open MPI from the bundle (the machine's hidden behind a stand-in mpirun in
# the prefix): PMIx's folders are exported only where the bundle's libpmix2 was
# unpacked, never pointing the machine's own libpmix.so.2 at empty ones.
# mpi_case NAME [pmix]: the PMIX_INSTALL_PREFIX it exported (none: empty)
mpi_case() {
  local dir=$work/$1 pkg=$work/$1/ompi
  mkdir -p "$dir/bundle" "$dir/prefix/bin" "$pkg/DEBIAN" "$pkg/usr/bin"
  printf 'Package: fake-ompi\nVersion: 1\nArchitecture: amd64\nMaintainer: weft\nDescription: test\n' >"$pkg/DEBIAN/control"
  printf '#!/bin/sh\necho "mpirun (Open MPI) 4.1.4"\n' >"$pkg/usr/bin/mpirun.openmpi"
  printf '#!/bin/sh\nexit 0\n' >"$pkg/usr/bin/mpicc.openmpi"
  cp "$pkg/usr/bin/mpirun.openmpi" "$pkg/usr/bin/orterun"
  cp "$pkg/usr/bin/mpirun.openmpi" "$dir/prefix/bin/mpirun"
  chmod +x "$pkg"/usr/bin/* "$dir/prefix/bin/mpirun"
  dpkg-deb -b "$pkg" "$dir/bundle/fake-ompi_1_amd64.deb" >/dev/null
  echo "mpi top fake-ompi fake-ompi_1_amd64.deb" >"$dir/bundle/manifest.txt"
  if [ "${2:-}" = pmix ]; then
    pkg=$dir/pmix
    mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"
    printf 'Package: fake-pmix\nVersion: 1\nArchitecture: amd64\nMaintainer: weft\nDescription: test\n' >"$pkg/DEBIAN/control"
    dpkg-deb -b "$pkg" "$dir/bundle/fake-pmix_1_amd64.deb" >/dev/null
    echo "mpi lib fake-pmix fake-pmix_1_amd64.deb libweft-nowhere-pmix.so.2" >>"$dir/bundle/manifest.txt"
  fi
  (
    export PATH=$dir/prefix/bin:$PATH WEFT_DEPS=$dir/prefix WEFT_DEPS_BUNDLE=$dir/bundle DEPS_LOG=$dir/deps.txt
    unset WEFT_DEPS_READY PMIX_INSTALL_PREFIX PMIX_PREFIX PMIX_PKGLIBDIR
    source tests/gpu/deps_env.sh >/dev/null 2>"$dir/stderr.txt" || true  # what else the machine lacks is not this test's
    echo "${PMIX_INSTALL_PREFIX:-}:${PMIX_PKGLIBDIR:-}"
  )
}
log=$work/no-pmix/deps.txt
check "no libpmix unpacked: PMIx's folders left to the machine's own" test "$(mpi_case no-pmix)" = ":"
check "the relocated Open MPI runs" grep -q "^mpi: relocated Open MPI: mpirun (Open MPI) 4.1.4" "$log"
check "no error from an absent PSM folder" eval '! grep -q libpsm "$work/no-pmix/stderr.txt"'
pmix=$work/pmix/prefix/usr/lib/x86_64-linux-gnu/pmix2
log=$work/pmix/deps.txt
check "libpmix unpacked: PMIx pointed at it" test "$(mpi_case pmix pmix)" = "$pmix:$pmix/lib/pmix"

# a toolkit whose cudart soname the loader does not know (the machine may know
# another CUDA's): its lib folder goes on LD_LIBRARY_PATH; a known one does not
# cudart_case SONAME: LD_LIBRARY_PATH as deps_env.sh left it
cudart_case() {
  local cuda=$work/cuda-$1
  mkdir -p "$cuda/bin" "$cuda/lib64"
  printf '#!/bin/sh\necho "Cuda compilation tools, release 13.0, V13.0.0"\n' >"$cuda/bin/nvcc"
  chmod +x "$cuda/bin/nvcc"
  : >"$cuda/lib64/$1"
  (
    export PATH=$cuda/bin:$PATH WEFT_DEPS=$work/cuda-prefix WEFT_DEPS_BUNDLE=$work/bundle DEPS_LOG=/dev/null
    unset WEFT_DEPS_READY
    source tests/gpu/deps_env.sh >/dev/null 2>&1 || true
    echo "${LD_LIBRARY_PATH:-}"
  )
}
check "an unknown cudart soname: the toolkit's lib folder on LD_LIBRARY_PATH" \
  grep -q "$work/cuda-libcudart.so.99/lib64" <<<"$(cudart_case libcudart.so.99)"
if ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*libcudart\.so\.13 "; then  # this machine's loader knows it
  check "a cudart soname the loader knows: LD_LIBRARY_PATH left alone" \
    eval '! grep -q "$work/cuda-libcudart.so.13/lib64" <<<"$(cudart_case libcudart.so.13)"'
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
