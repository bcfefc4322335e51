# tests/gpu/deps_env.sh: sourced (bash) by tests/gpu/check.sh, bench/gpu_gpt2.sh
# and tests/gpu/bare_check.sh, from the repository root, on a machine that may
# lack weft's build and run dependencies (the bare GPU image: nothing can be
# installed there).  For each dependency it takes the machine's own when it
# has one, else unpacks the Debian packages that tests/gpu/bundle.sh put in
# .gpu-deps/ into a private prefix ($WEFT_DEPS, default /tmp/weft-deps; never
# /) and points the build and the runs at it: PATH, LD_LIBRARY_PATH,
# PKG_CONFIG_PATH, and Open MPI's OPAL_* folders (its packages were built for
# /usr and /etc/openmpi).  NCCL and CUPTI: next to nvcc or in the system, else
# the Python venv's nvidia/* wheels (WEFT_NCCL_ROOT, WEFT_CMAKE_ARGS).
# One line per dependency, "NAME: WHERE", goes to stdout and to $DEPS_LOG.
# Returns 1 (after logging) when something is missing that nothing here supplies.
# Sourcing it again in a child (gpu_gpt2.sh under check.sh) is a no-op.

if [ -z "${WEFT_DEPS_READY:-}" ]; then
WEFT_DEPS=${WEFT_DEPS:-/tmp/weft-deps}
WEFT_DEPS_BUNDLE=${WEFT_DEPS_BUNDLE:-$PWD/.gpu-deps}
DEPS_LOG=${DEPS_LOG:-/dev/null}
WEFT_CMAKE_ARGS=${WEFT_CMAKE_ARGS:-}
deps_missing=0
deps_note() { echo "$1: $2" | tee -a "$DEPS_LOG"; }
deps_arch=x86_64-linux-gnu

# does the machine's loader know this soname?
deps_host_has_lib() {
  local d
  if command -v ldconfig >/dev/null 2>&1 || [ -x /sbin/ldconfig ]; then
    { ldconfig -p 2>/dev/null || /sbin/ldconfig -p; } | grep -q "^[[:space:]]*$1 " && return 0
  fi
  for d in /lib/$deps_arch /usr/lib/$deps_arch /lib64 /usr/lib64 /usr/lib /usr/local/lib; do
    [ -e "$d/$1" ] && return 0
  done
  return 1
}

# one .deb into the prefix: dpkg -x where there is dpkg, else ar + tar
deps_unpack_deb() {
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$1" "$WEFT_DEPS"
  else
    local t
    t=$(mktemp -d "${TMPDIR:-/tmp}/weft-deb.XXXXXX")
    (cd "$t" && ar x "$1" && tar -xf data.tar.* -C "$WEFT_DEPS") || { rm -rf "$t"; return 1; }
    rm -rf "$t"
  fi
}

# deps_unpack GROUP: the group's top packages always, its libraries only where
# the machine lacks one of their sonames (the machine's own stay in charge)
deps_unpack() {
  local group=$1 g role pkg deb sonames s need used=""
  [ -f "$WEFT_DEPS_BUNDLE/manifest.txt" ] || return 1
  mkdir -p "$WEFT_DEPS"
  while read -r g role pkg deb sonames; do
    [ "$g" = "$group" ] || continue
    need=1
    if [ "$role" = lib ]; then
      need=""
      [ -z "$sonames" ] && need=1
      for s in $sonames; do deps_host_has_lib "$s" || need=1; done
    fi
    [ -n "$need" ] || continue
    [ -f "$WEFT_DEPS_BUNDLE/$deb" ] || return 1
    # a stamp per package: a second run (the benchmark alone) unpacks nothing
    if [ ! -f "$WEFT_DEPS/.unpacked/$deb" ]; then
      deps_unpack_deb "$WEFT_DEPS_BUNDLE/$deb" || return 1
      mkdir -p "$WEFT_DEPS/.unpacked" && : >"$WEFT_DEPS/.unpacked/$deb"
    fi
    used="$used $pkg"
  done <"$WEFT_DEPS_BUNDLE/manifest.txt"
  [ -n "$used" ] || return 1
  deps_fix_prefix
  echo "$used"
}

# the packages name /usr and /etc: pkg-config files and absolute links are
# pointed into the prefix
deps_fix_prefix() {
  local pc l t
  for pc in $(find "$WEFT_DEPS" -name '*.pc' -type f); do
    grep -q "$WEFT_DEPS/usr" "$pc" ||
      sed -i -e "s|=/usr\\b|=$WEFT_DEPS/usr|g" -e "s|\\([ =]\\)-\\([IL]\\)/usr\\b|\\1-\\2$WEFT_DEPS/usr|g" "$pc"
  done
  for pc in $(find "$WEFT_DEPS" -name '*mca-params.conf' -type f); do
    grep -q "$WEFT_DEPS/usr" "$pc" || sed -i -e "s|= */usr/|= $WEFT_DEPS/usr/|" "$pc"
  done
  find "$WEFT_DEPS" -type l | while read -r l; do
    t=$(readlink "$l")
    case $t in /*) case $t in "$WEFT_DEPS"/*) ;; *) ln -sfn "$WEFT_DEPS$t" "$l" ;; esac ;; esac
  done
}

# is this path in the prefix (unpacked by an earlier run, not the machine's own)?
deps_ours() { case $1 in "$WEFT_DEPS"/*) return 0 ;; esac; return 1; }

deps_any() {  # deps_any FILE...: true if one of them exists
  local f
  for f in "$@"; do [ -e "$f" ] && return 0; done
  return 1
}

deps_prepend() {  # deps_prepend VAR DIR: DIR first in the colon list VAR, once
  local cur=${!1:-}
  case ":$cur:" in *":$2:"*) return ;; esac
  export "$1=$2${cur:+:$cur}"
}

# the prefix's folders go in front once anything was unpacked there
deps_use_prefix() {
  local u=$WEFT_DEPS/usr
  mkdir -p "$WEFT_DEPS/bin"
  deps_prepend PATH "$u/bin"
  deps_prepend PATH "$WEFT_DEPS/bin"
  deps_prepend LD_LIBRARY_PATH "$WEFT_DEPS/lib/$deps_arch"
  deps_prepend LD_LIBRARY_PATH "$u/lib/$deps_arch/openblas-pthread"
  deps_prepend LD_LIBRARY_PATH "$u/lib/$deps_arch"
  deps_prepend PKG_CONFIG_PATH "$u/share/pkgconfig"
  deps_prepend PKG_CONFIG_PATH "$u/lib/$deps_arch/openblas-pthread/pkgconfig"
  deps_prepend PKG_CONFIG_PATH "$u/lib/$deps_arch/pkgconfig"
  # headers under the multiarch folder (cblas.h), where a non-Debian gcc does not look
  deps_prepend CPATH "$u/include/$deps_arch/openblas-pthread"
  deps_prepend CPATH "$u/include/$deps_arch"
  deps_prepend CPATH "$u/include"
  deps_prepend LIBRARY_PATH "$u/lib/$deps_arch"
  # CMake's find_* look under these too (FindMPI, FindOpenMP, find_library)
  deps_prepend CMAKE_PREFIX_PATH "$u"
}

deps_from_bundle() {  # deps_from_bundle NAME GROUP: unpack, or count it missing
  local used
  if used=$(deps_unpack "$2"); then
    deps_use_prefix
    deps_note "$1" "carried .debs ->$used, unpacked in $WEFT_DEPS"
  else
    deps_note "$1" "MISSING (not on this machine, not in $WEFT_DEPS_BUNDLE: run tests/gpu/bundle.sh first)"
    deps_missing=1
  fi
}

# ---- compilers and build tools: the image's own, nothing to carry -----------
for deps_f in cc c++ cmake ar; do
  if command -v $deps_f >/dev/null 2>&1; then deps_note "$deps_f" "machine: $(command -v $deps_f)"
  else deps_note "$deps_f" MISSING; deps_missing=1; fi
done
if command -v make >/dev/null 2>&1; then
  deps_note make "machine: $(command -v make)"
elif command -v ninja >/dev/null 2>&1; then
  export CMAKE_GENERATOR=Ninja   # every cmake below, generated programs' too
  deps_note make "none; CMAKE_GENERATOR=Ninja ($(command -v ninja))"
else
  deps_note make "MISSING (neither make nor ninja)"; deps_missing=1
fi
# OpenMP comes with the compiler (libgomp): it cannot be carried
deps_t=$(mktemp -d "${TMPDIR:-/tmp}/weft-deps-t.XXXXXX")
echo 'int main(void) { int n = 0;
#pragma omp parallel reduction(+:n)
n++; return n < 1; }' >"$deps_t/omp.c"
if cc -fopenmp "$deps_t/omp.c" -o "$deps_t/omp" 2>/dev/null && "$deps_t/omp"; then
  deps_note openmp "machine: cc -fopenmp"
else
  deps_note openmp "MISSING (cc -fopenmp fails; libgomp cannot be carried)"; deps_missing=1
fi
rm -rf "$deps_t"

# ---- pkg-config, then what the build looks up through it ---------------------
if command -v pkg-config >/dev/null 2>&1 && ! deps_ours "$(command -v pkg-config)"; then
  deps_note pkg-config "machine: $(command -v pkg-config)"
else
  deps_from_bundle pkg-config pkgconf
  [ -x "$WEFT_DEPS/usr/bin/pkgconf" ] && ln -sfn ../usr/bin/pkgconf "$WEFT_DEPS/bin/pkg-config"
fi
export PKG_CONFIG=$(command -v pkg-config || true)
# MODULE:GROUP (the pkg-config module, its group in the bundle's manifest)
for deps_f in lua5.4:lua openblas:openblas libcjson:cjson; do
  deps_m=${deps_f%%:*}
  if pkg-config --exists "$deps_m" 2>/dev/null && ! deps_ours "$(pkg-config --variable=libdir "$deps_m")"; then
    deps_note "$deps_m" "machine: $(pkg-config --variable=libdir "$deps_m")"
  else
    deps_from_bundle "$deps_m" "${deps_f#*:}"
    pkg-config --exists "$deps_m" 2>/dev/null ||
      { deps_note "$deps_m" "MISSING: pkg-config still does not find it"; deps_missing=1; }
  fi
done

# ---- MPI: mpicc (FindMPI) and mpirun (launch.sh) ------------------------------
# an Open MPI one: launch.sh passes mpirun Open MPI's options (MPICH's would refuse them)
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 &&
   ! deps_ours "$(command -v mpirun)" && mpirun --version 2>&1 | grep -q 'Open MPI\|Open RTE'; then
  deps_note mpi "machine: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1))"
else
  deps_from_bundle mpi mpi
  if [ -x "$WEFT_DEPS/usr/bin/orterun" ]; then
    # Debian names them through alternatives, which dpkg -x does not make
    for deps_f in mpirun mpiexec mpicc; do ln -sfn "../usr/bin/$deps_f.openmpi" "$WEFT_DEPS/bin/$deps_f"; done
    # Open MPI relocated: each folder it was built with (ompi_info --path all)
    u=$WEFT_DEPS/usr
    export OPAL_PREFIX=$u OPAL_EXEC_PREFIX=$u OPAL_BINDIR=$u/bin OPAL_SBINDIR=$u/sbin \
      OPAL_LIBDIR=$u/lib/$deps_arch/openmpi/lib OPAL_INCLUDEDIR=$u/lib/$deps_arch/openmpi/include \
      OPAL_PKGLIBDIR=$u/lib/$deps_arch/openmpi/lib/openmpi3 OPAL_LIBEXECDIR=$u/libexec \
      OPAL_DATAROOTDIR=$u/share OPAL_DATADIR=$u/share OPAL_PKGDATADIR=$u/share/openmpi \
      OPAL_SYSCONFDIR=$WEFT_DEPS/etc/openmpi OPAL_LOCALSTATEDIR=$WEFT_DEPS/var \
      OPAL_MANDIR=$u/share/man OPAL_INFODIR=$u/share/info
    # PMIx (libpmix2) has a prefix of its own, for its plugins, help files and
    # pmix-mca-params.conf (in share/; deps_fix_prefix repoints the plugin path in it).
    # Only where the bundle's libpmix2 was unpacked: a machine with its own
    # libpmix.so.2 keeps it (deps_unpack), and that one knows its folders; sent
    # to these empty ones it would find neither its plugins nor its parameters.
    # PMIx 4 (Debian 12's) reads the prefix as PMIX_INSTALL_PREFIX, 2 and 3 as PMIX_PREFIX
    p=$u/lib/$deps_arch/pmix2
    if [ -d "$p/lib" ]; then
      export PMIX_INSTALL_PREFIX=$p PMIX_PREFIX=$p PMIX_EXEC_PREFIX=$p PMIX_LIBDIR=$p/lib \
        PMIX_PKGLIBDIR=$p/lib/pmix PMIX_DATAROOTDIR=$p/share PMIX_DATADIR=$p/share \
        PMIX_PKGDATADIR=$p/share/pmix PMIX_SYSCONFDIR=$p/share
    fi
    # what dpkg -x leaves out: the soname link of PSM (ldconfig makes it; only
    # where the bundle's libpsm-infinipath1 was unpacked) and ssh (one node:
    # ORTE's isolated launcher starts the ranks itself)
    if [ -d "$u/lib/libpsm1" ] && [ ! -e "$u/lib/libpsm1/libpsm_infinipath.so.1" ]; then
      ln -sfn "$(cd "$u/lib/libpsm1" && ls libpsm_infinipath.so.1.* | head -1)" "$u/lib/libpsm1/libpsm_infinipath.so.1"
    fi
    deps_prepend LD_LIBRARY_PATH "$u/lib/libpsm1"
    deps_prepend LD_LIBRARY_PATH "$u/lib/$deps_arch/openmpi/lib"
    unset p
    unset u
    if mpicc -showme:version >/dev/null 2>&1 && mpirun --version >/dev/null 2>&1; then
      deps_note mpi "relocated Open MPI: $(mpirun --version 2>&1 | head -1)"
    else
      deps_note mpi "MISSING: the relocated mpicc/mpirun do not run: $(mpirun --version 2>&1 | head -3 | tr '\n' ' ')"
      deps_missing=1
    fi
  fi
fi
# root, a shared node, no ssh: what a one-node Open MPI run here needs.  Without
# ssh Open MPI 4's launcher refuses to start even on one node; its isolated
# launcher starts the ranks itself
if ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1 &&
   mpirun --version 2>&1 | grep -q 'Open MPI) [1-4]\.'; then
  export OMPI_MCA_plm=${OMPI_MCA_plm:-isolated}
  deps_note ssh "none: OMPI_MCA_plm=$OMPI_MCA_plm"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# shared memory without cross-process reads (CMA), which sandboxes may refuse:
# copies through the shared buffers (Open MPI 4's vader, 5's sm)
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_btl_sm_single_copy_mechanism=${OMPI_MCA_btl_sm_single_copy_mechanism:-none}

# ---- CUDA: nvcc, NCCL, CUPTI ------------------------------------------------------
deps_nvcc=$(command -v nvcc || true)
for deps_f in "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$deps_nvcc" ] && [ -x "$deps_f" ] && deps_nvcc=$deps_f
done
if [ -n "$deps_nvcc" ]; then
  deps_note nvcc "machine: $deps_nvcc ($("$deps_nvcc" --version | grep -o 'release [0-9.]*'))"
  deps_cuda=$(cd "$(dirname "$deps_nvcc")/.." && pwd)
  export CUDA_HOME=${CUDA_HOME:-$deps_cuda}
  deps_prepend PATH "$deps_cuda/bin"
  # programs link the toolkit's shared cudart/cuBLAS without an rpath (CMake
  # counts its folder as implicit): the loader must know that toolkit's soname
  # (a machine that knows only another CUDA's cudart would not run them)
  for deps_f in "$deps_cuda/lib64" "$deps_cuda/lib"; do
    deps_m=$(cd "$deps_f" 2>/dev/null && ls libcudart.so.* 2>/dev/null | grep -x 'libcudart\.so\.[0-9]*' | head -1 || true)
    [ -n "$deps_m" ] && break
  done
  if [ -n "$deps_m" ] && ! deps_host_has_lib "$deps_m"; then
    for deps_f in "$deps_cuda/lib64" "$deps_cuda/lib"; do
      if deps_any "$deps_f/$deps_m"; then
        deps_prepend LD_LIBRARY_PATH "$deps_f"
        deps_note cudart "$deps_m not known to the loader: LD_LIBRARY_PATH += $deps_f"
        break
      fi
    done
  fi
else
  deps_note nvcc "MISSING (no CUDA toolkit: the CUDA runtime will not build)"; deps_missing=1
  deps_cuda=/nonexistent
fi
# the venv's nvidia/* wheels (site-packages of the python3 that holds PyTorch)
deps_wheels() {
  local py sp
  for py in python3 /opt/torch/.venv/bin/python3; do
    command -v $py >/dev/null 2>&1 || continue
    for sp in $($py -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
      [ -d "$sp/nvidia" ] && echo "$sp/nvidia"
    done
  done | sort -u
}
deps_in_wheels() {  # deps_in_wheels NAME-GLOB: the first such file under nvidia/*
  local w
  for w in $(deps_wheels); do find "$w" -name "$1" \( -type f -o -type l \) 2>/dev/null; done | sort | head -1
}
if deps_any "$deps_cuda"/lib64/libnccl.so* "$deps_cuda"/lib/libnccl.so* &&
   [ -f "$deps_cuda/include/nccl.h" ]; then
  deps_note nccl "next to nvcc: $deps_cuda"
elif deps_host_has_lib libnccl.so.2 && [ -f /usr/include/nccl.h ]; then
  deps_note nccl "machine: system libnccl.so.2, /usr/include/nccl.h"
else
  deps_h=$(deps_in_wheels nccl.h); deps_l=$(deps_in_wheels 'libnccl.so*')
  if [ -n "$deps_h" ] && [ -n "$deps_l" ]; then
    # cmake/cuda.cmake takes WEFT_NCCL_ROOT (include/, lib/) and libnccl.so.2
    export WEFT_NCCL_ROOT=$(dirname "$(dirname "$deps_h")")
    deps_prepend LD_LIBRARY_PATH "$(dirname "$deps_l")"
    deps_note nccl "Python wheel: $WEFT_NCCL_ROOT ($(basename "$deps_l"))"
  else
    deps_note nccl "MISSING (not next to nvcc, not in the system, no nvidia/nccl wheel)"; deps_missing=1
  fi
fi
# CUPTI only serves the benchmark's kernel profile (libweft_kprof.so)
if deps_any "$deps_cuda"/extras/CUPTI/lib64/libcupti.so "$deps_cuda"/lib64/libcupti.so "$deps_cuda"/lib/libcupti.so; then
  deps_note cupti "next to nvcc: $deps_cuda"
else
  deps_h=$(deps_in_wheels cupti.h); deps_l=$(deps_in_wheels 'libcupti.so*')
  if [ -n "$deps_h" ] && [ -n "$deps_l" ]; then
    WEFT_CMAKE_ARGS="$WEFT_CMAKE_ARGS -DCUDA_cupti_LIBRARY=$deps_l -DCUDAToolkit_CUPTI_INCLUDE_DIR=$(dirname "$deps_h")"
    deps_prepend LD_LIBRARY_PATH "$(dirname "$deps_l")"
    deps_note cupti "Python wheel: $deps_l"
  else
    deps_note cupti "none (the benchmark runs without its kernel-class profile)"
  fi
fi
unset deps_h deps_l deps_m deps_nvcc deps_f
export WEFT_CMAKE_ARGS
export WEFT_DEPS_READY=1
[ "$deps_missing" = 0 ]
else
  true
fi
