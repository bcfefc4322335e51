#!/usr/bin/env bash
# bench/sanitize.sh [CTEST ARGS...]
#
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer.
# Configures build-san/ with -DWEFT_SANITIZE=address,undefined: the compiler,
# the runtime, the unit tests and (through the runtime's import file,
# weft-runtime.cmake) every stage program the e2e tests generate and build are
# compiled and linked with -fsanitize=address,undefined, and any report ends
# the process (-fno-sanitize-recover=all, halt_on_error=1) so the test fails.
# Then runs ctest there, passing CTEST ARGS on (e.g. -R '^e2e_resume$').
#
# Left out: fuzz_smoke (its harnesses are built with ASan already, by clang,
# in a project of their own).
#
# The CUDA emulator (tests/cuda_emu) is host C++: its kernels, its runtime
# and the generated programs it runs (cuda_emu*, e2e_cuda_emu,
# e2e_user_kernels_cuda, e2e_gpu_check_emu) are sanitized like the rest.
# WEFT_CUDA stays on where nvcc and NCCL are found (cmake/cuda.cmake), so
# that libweftrt_cuda is built too (e2e_cuda_build, e2e_gpu_check_emu need
# it); its nvcc code is not sanitized and never runs without a GPU.
# WEFT_SAN_CUDA=OFF leaves it out (a quicker build).
#
# The machine may be loaded: WEFT_SAN_TIMEOUT_SCALE (default 4) multiplies
# every test's TIMEOUT and, through WEFT_TIMEOUT_SCALE, the `timeout N` the
# test scripts put around each run; on a loaded machine give the emulator
# entries 12 (their ASan-built C++ kernels run many times slower).
#
# Leak detection is off: Open MPI's MPI_Init/MPI_Finalize keep allocations
# alive to the end of every rank (thousands of reports per run), which would
# drown Weft's own.  Weft's code is checked for every other class of error.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${WEFT_SAN_BUILD:-build-san}
jobs=${WEFT_SAN_JOBS:-2}

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZE=address,undefined \
  -DWEFT_CUDA="${WEFT_SAN_CUDA:-ON}" -DWEFT_SANITIZE_TIMEOUT_SCALE="${WEFT_SAN_TIMEOUT_SCALE:-4}" >/dev/null
nice cmake --build "$build" -j"$jobs" >"$build.build.log" 2>&1 || { tail -40 "$build.build.log"; exit 1; }

# allocator_may_return_null: a failed malloc returns NULL as glibc's does
# (Weft refuses huge requests itself, and its tests check those refusals);
# detect_leaks=0: see above.  Exit codes stay the default 1 (tests/cuda_emu
# expects a UBSan alignment report to exit 1).
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0:allocator_may_return_null=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$build"
nice ctest -j"$jobs" --output-on-failure -E '^fuzz_smoke$' "$@"
