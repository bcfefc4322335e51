#!/usr/bin/env bash
# tests/gpu/bare_check.sh [ROOT]: tries tests/gpu/check.sh the way the bare GPU
# machine will run it, on a Debian 12 machine without a GPU.  Needs root and
# the network (debootstrap, apt-get download): not part of ctest.
#
#  1. bundles the dependencies (tests/gpu/bundle.sh) unless .gpu-deps exists;
#  2. makes a minimal Debian 12 chroot in ROOT (default /tmp/weft-bare) with
#     only gcc, g++, make and cmake, as the GPU image has (checks that it holds
#     none of weft's dependencies), and mounts the CUDA toolkit read-only in it;
#  3. copies the working tree and .gpu-deps in, runs check.sh there: it must
#     configure, build the CPU and CUDA runtimes and stop at its "no GPU" row;
#  4. runs check.sh again past its GPU line (a stand-in nvidia-smi): the CPU
#     halves train through the relocated MPI, the CUDA programs load their
#     libraries and stop at the driver, $OUT holds at most 8 files;
#  5. in the same environment (deps_env.sh), trains plans/tiny.lua for 3 steps
#     on 2 ranks (the relocated Open MPI, as root) and checks that the loss of
#     both ranks' run matches a 1-rank run's (tests/e2e/lib.sh's same_field);
#  6. NCCL from a Python wheel: a toolkit without NCCL (links to the real one),
#     nvidia/nccl in a venv: found, configured, linked into a CUDA program.
# Output: the chroot's check.sh results in ROOT/weft-out; exit 0 if all passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=${1:-/tmp/weft-bare}
CUDA=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
MIRROR=${MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "bare_check.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }

[ -f .gpu-deps/manifest.txt ] || bash tests/gpu/bundle.sh
if [ ! -x "$ROOT/usr/bin/cmake" ]; then
  command -v debootstrap >/dev/null || apt-get install -y debootstrap
  debootstrap --variant=minbase --include=gcc,g++,make,cmake bookworm "$ROOT" "$MIRROR"
fi
in_root() {  # a clean environment, like a fresh login on the GPU machine
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}
# the point: none of weft's dependencies in the chroot
if in_root 'command -v pkg-config || command -v mpirun || command -v mpicc ||
            ls /usr/include/lua5.4 /usr/include/cjson /usr/include/x86_64-linux-gnu/openblas* 2>/dev/null'; then
  echo "bare_check.sh: $ROOT is not bare (it has one of weft's dependencies)" >&2; exit 1
fi

mounted=()
cleanup() {
  local m
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
}
trap cleanup EXIT
mount_in() {  # mount_in SRC DEST [OPTIONS]
  mkdir -p "$ROOT$2"
  mount --bind "$1" "$ROOT$2"
  [ -z "${3:-}" ] || mount -o remount,bind,"$3" "$ROOT$2"
  mounted=("$ROOT$2" "${mounted[@]}")
}
mount_in /proc /proc
mount_in /sys /sys
mount_in /dev /dev
mount_in "$CUDA" /usr/local/cuda ro

# the working tree as the device tool sends it: tracked and untracked-not-ignored
# files, plus the carried folder
rm -rf "$ROOT/weft" "$ROOT"/weft-out* "$ROOT/tmp/weft-deps"
mkdir -p "$ROOT/weft"
{ git ls-files -z; git ls-files -z --others --exclude-standard; } |
  tar -cf - --null -T - .gpu-deps | tar -xf - -C "$ROOT/weft"

echo "== check.sh in the bare chroot $ROOT =="
rc=0
in_root 'cd /weft && OUT=/weft-out bash tests/gpu/check.sh' || rc=$?
grep -q '^GPU checks .*skipped: no GPU.* ok$' "$ROOT/weft-out/summary.txt" ||
  { echo "bare_check.sh: check.sh did not reach its 'no GPU' row"; rc=1; }

# past the GPU line, with a stand-in nvidia-smi: the CPU halves of two layouts
# train (10 steps each, through the relocated MPI), the CUDA programs load all
# their libraries and stop at the driver, and $OUT holds at most 8 files
echo "== check.sh past its GPU line (a stand-in nvidia-smi; LAYOUTS=\"one-rank dp2\") =="
printf '#!/bin/sh\necho "GPU 0: stand-in (bare_check.sh)"\n' >"$ROOT/usr/local/bin/nvidia-smi"
chmod +x "$ROOT/usr/local/bin/nvidia-smi"
in_root 'cd /weft && OUT=/weft-out-fake LAYOUTS="one-rank dp2" bash tests/gpu/check.sh >/weft-out-fake.log 2>&1' || true
rm -f "$ROOT/usr/local/bin/nvidia-smi"
in_root 'set -e; cd /weft-out-fake; ls; n=$(ls | wc -l); echo "$n files in \$OUT"; [ "$n" -le 8 ]
  rm -rf /tmp/fake-logs && mkdir /tmp/fake-logs && tar -xzf logs.tar.gz -C /tmp/fake-logs && cd /tmp/fake-logs
  for f in one-rank-cpu.jsonl dp2-cpu.jsonl; do echo "$f: $(wc -l <$f) steps"; [ "$(wc -l <$f)" = 10 ]; done
  ! grep -l "error while loading shared libraries" *.log
  grep -h -m1 -o "CUDA driver version is insufficient.*\|no CUDA-capable device.*" dp2-cuda.log' || rc=$?

echo "== 2 ranks on the relocated MPI: plans/tiny.lua, 3 steps, vs 1 rank =="
in_root 'cd /weft && source tests/gpu/deps_env.sh >/dev/null &&
  export WEFT=$PWD/build-gpu/compiler/weft WEFT_RUNTIME=$PWD/build-gpu/runtime &&
  source tests/e2e/lib.sh && data=$(make_data) &&
  echo "mpirun: $(command -v mpirun), $(mpirun --version 2>&1 | head -1)" &&
  build_plan one plans/tiny.lua --set mesh.dp=1 &&
  build_plan dp2 plans/tiny.lua --set mesh.dp=2 &&
  run_plan one --steps 3 --data "$data" --metrics $WORK/one.jsonl &&
  run_plan dp2 --steps 3 --data "$data" --metrics $WORK/dp2.jsonl &&
  same_field loss $WORK/one.jsonl $WORK/dp2.jsonl 1e-4 && echo &&
  ldd build-gpu/compiler/weft $WORK/dp2/build/stage0 | grep -E "not found|weft-deps" | sort -u' || rc=$?

# NCCL only in the venv (as the GPU image may have it): a toolkit made of links
# to the real one without NCCL's files, nvidia/nccl/{include,lib} in a venv's
# site-packages, and a stand-in python3 there that names it (the chroot has no
# Python); deps_env.sh must find it, cmake/cuda.cmake take it, and a generated
# CUDA program link it
echo "== NCCL from a Python wheel (a toolkit without NCCL) =="
in_root 'set -e
  real=/usr/local/cuda fake=/opt/cuda-nonccl t=targets/x86_64-linux
  rm -rf $fake /opt/torch && mkdir -p $fake/bin $fake/$t
  for e in $real/*; do case ${e##*/} in bin|targets|include|lib|lib64) ;; *) ln -s $e $fake/ ;; esac; done
  for e in $real/bin/*; do ln -s $e $fake/bin/; done
  for e in $real/$t/*; do
    case ${e##*/} in
      include|lib) mkdir $fake/$t/${e##*/}
        for f in $e/*; do case ${f##*/} in nccl*|libnccl*) ;; *) ln -s $f $fake/$t/${e##*/}/ ;; esac; done ;;
      *) ln -s $e $fake/$t/ ;;
    esac
  done
  ln -s $t/include $fake/include; ln -s $t/lib $fake/lib64; ln -s $t/lib $fake/lib
  sp=/opt/torch/.venv/lib/python3.12/site-packages
  mkdir -p $sp/nvidia/nccl/include $sp/nvidia/nccl/lib /opt/torch/.venv/bin
  cp $real/include/nccl.h $sp/nvidia/nccl/include/
  cp -L $real/lib64/libnccl.so.2 $sp/nvidia/nccl/lib/
  printf "#!/bin/sh\necho $sp\n" >/opt/torch/.venv/bin/python3 && chmod +x /opt/torch/.venv/bin/python3
  cd /weft && export PATH=$fake/bin:$PATH
  DEPS_LOG=/weft-out/deps-wheel.txt source tests/gpu/deps_env.sh >/dev/null
  grep "^nccl: Python wheel: $sp/nvidia/nccl" /weft-out/deps-wheel.txt
  cmake -S . -B build-wheel -DCMAKE_BUILD_TYPE=Release $WEFT_CMAKE_ARGS >/weft-out/wheel-configure.log
  grep -o "CUDA backend on.*" /weft-out/wheel-configure.log | grep "NCCL $sp/nvidia/nccl/lib/libnccl.so.2"
  cmake --build build-wheel -j2 --target weft weftrt_cuda >/weft-out/wheel-build.log
  build-wheel/compiler/weft compile plans/tiny.lua --backend cuda -o /tmp/tiny-cuda >/dev/null
  cmake -S /tmp/tiny-cuda -B /tmp/tiny-cuda/build >/dev/null && cmake --build /tmp/tiny-cuda/build -j2 >/dev/null
  ldd /tmp/tiny-cuda/build/stage0 | grep libnccl | grep "$sp"' || rc=$?
echo "bare_check.sh: $([ $rc = 0 ] && echo passed || echo FAILED) (check.sh results in $ROOT/weft-out)"
exit $rc
