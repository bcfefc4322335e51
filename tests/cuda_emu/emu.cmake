# emu.cmake (included by tests/CMakeLists.txt): the CUDA kernels of
# runtime/cuda compiled with the host C++ compiler against tests/cuda_emu/emu.h,
# so they run on the CPU: the emulator's self-test (cuda_emu) and every kernel
# checked against the CPU backend (cuda_emu_kernels).  Needs only the CUDA
# headers (no nvcc, no GPU, no libcudart); without them both tests are skipped.

# THE list of kernel files the emulated build compiles: a new .cu file of
# runtime/cuda goes here (one line), or into WEFT_EMU_NOT_EMULATED with the
# reason; cuda_emu_kernels fails while a .cu file is in neither.
set(WEFT_EMU_KERNELS
  vision.cu
  elementwise.cu
  colsum.cu
  layernorm.cu
  linear.cu
  attention.cu
  attention_tc.cu
  xent.cu
  precision.cu
  optim.cu
  llama.cu
  convert.cu
  dp_comm.cu
  grad16.cu
)
set(WEFT_EMU_NOT_EMULATED
  gemm.cu      # cuBLASLt: replaced by cuda_emu/emu_gemm.cc (same functions, plain loops);
               # cuda_emu_gemm runs it over a fake cuBLASLt (emu_cublaslt.cc)
)

include(CheckLanguage)
check_language(CXX)
find_path(WEFT_EMU_CUDA_INCLUDE cuda_runtime.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDA_HOME PATHS /usr/local/cuda PATH_SUFFIXES include)
if(CMAKE_CXX_COMPILER AND WEFT_EMU_CUDA_INCLUDE AND EXISTS ${WEFT_EMU_CUDA_INCLUDE}/cublas_v2.h)
  enable_language(CXX)
  set(emu_dir ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu)
  set(cuda_dir ${PROJECT_SOURCE_DIR}/runtime/cuda)

  # the emulator: every C++ file of a target that links it sees emu.h first
  add_library(weft_cuda_emu STATIC ${emu_dir}/emu.cc ${emu_dir}/fiber.cc)
  set_target_properties(weft_cuda_emu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(weft_cuda_emu PUBLIC ${emu_dir} ${WEFT_EMU_CUDA_INCLUDE})
  # -ffp-contract=off: no fused multiply-adds the CPU backend does not make
  # either; nvcc's `#pragma unroll` means nothing to g++
  target_compile_options(weft_cuda_emu PUBLIC "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${emu_dir}/emu.h>"
    "$<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off;-Wno-unknown-pragmas>")
  # A GPU faults on a misaligned vector access (a uint4 / float4 / bf16x2
  # load or store off its 16-, 16- or 4-byte boundary); the CPU does not.
  # UBSan's alignment check stops the emulated kernel there instead, naming
  # the line (the vector types carry their CUDA alignment on the host too).
  set(WEFT_EMU_ALIGN_CHECK -fsanitize=alignment -fno-sanitize-recover=alignment)
  target_compile_options(weft_cuda_emu PUBLIC "$<$<COMPILE_LANGUAGE:CXX>:${WEFT_EMU_ALIGN_CHECK}>")
  target_link_options(weft_cuda_emu PUBLIC -fsanitize=alignment)

  # the kernels: each .cu compiled as C++ through a one-line wrapper, and the
  # fake cuBLASLt; compiled once, for the kernel tests' library below and the
  # whole emulated runtime (emu_runtime.cmake)
  set(emu_kernel_sources ${emu_dir}/emu_gemm.cc)
  foreach(cu ${WEFT_EMU_KERNELS})
    get_filename_component(stem ${cu} NAME_WE)
    set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/${stem}_emu.cc)
    file(CONFIGURE OUTPUT ${wrapper} CONTENT "#include \"${cuda_dir}/${cu}\"\n")
    set_property(SOURCE ${wrapper} APPEND PROPERTY OBJECT_DEPENDS ${cuda_dir}/${cu})
    list(APPEND emu_kernel_sources ${wrapper})
  endforeach()
  add_library(weft_cuda_emu_kernels OBJECT ${emu_kernel_sources})
  set_target_properties(weft_cuda_emu_kernels PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(weft_cuda_emu_kernels PUBLIC ${PROJECT_SOURCE_DIR}/runtime/include
    PRIVATE ${cuda_dir} ${PROJECT_SOURCE_DIR}/runtime/cpu ${PROJECT_SOURCE_DIR}/runtime/common)
  target_link_libraries(weft_cuda_emu_kernels PUBLIC weft_cuda_emu)

  # the kernel tests' library: the kernels with emu_device.cc's stand-ins for
  # device.c / async.c and its fake plan contexts (wf_storage_ctx)
  add_library(weftrt_cuda_emu STATIC $<TARGET_OBJECTS:weft_cuda_emu_kernels> ${emu_dir}/emu_device.cc
      ${PROJECT_SOURCE_DIR}/runtime/common/precision_scalar.c   # rt.h's scalar conversions
      ${PROJECT_SOURCE_DIR}/runtime/common/opt_host.c           # the offloaded AdamW
      ${PROJECT_SOURCE_DIR}/runtime/common/convert16.c          # opt_host.c's bulk 16-bit conversions
      ${cuda_dir}/cast.c)                                        # the cast buffer (act16)
  set_target_properties(weftrt_cuda_emu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(weftrt_cuda_emu PUBLIC ${PROJECT_SOURCE_DIR}/runtime/include
    PRIVATE ${cuda_dir} ${PROJECT_SOURCE_DIR}/runtime/cpu ${PROJECT_SOURCE_DIR}/runtime/common)
  target_link_libraries(weftrt_cuda_emu PUBLIC weft_cuda_emu m)
  # emu_device.cc's contexts have no wf_ctx layout: cast.c treats every
  # request as a kernel test's (a buffer that grows)
  target_compile_definitions(weftrt_cuda_emu PRIVATE WF_CAST_NO_PLAN)
  # the kernel tests run opt_host.c's and convert16.c's host loops on one
  # thread (no OpenMP here; the real libweftrt_cuda links it)
  target_compile_options(weftrt_cuda_emu PRIVATE $<$<COMPILE_LANGUAGE:C>:-Wno-unknown-pragmas>)

  # the whole CUDA runtime on the emulator, for generated programs (e2e_cuda_emu)
  include(${emu_dir}/emu_runtime.cmake)

  add_executable(test_cuda_emu ${emu_dir}/test_emu.cc)
  set_target_properties(test_cuda_emu PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(test_cuda_emu PRIVATE ${cuda_dir})
  target_link_libraries(test_cuda_emu PRIVATE weft_cuda_emu m)
  add_test(NAME cuda_emu COMMAND test_cuda_emu)

  # gemm.cu itself, over the fake cuBLASLt of emu_cublaslt.cc (the kernel
  # library above has emu_gemm.cc in its place)
  set(gemm_wrapper ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/gemm_emu.cc)
  file(CONFIGURE OUTPUT ${gemm_wrapper} CONTENT "#include \"${cuda_dir}/gemm.cu\"\n")
  set_property(SOURCE ${gemm_wrapper} APPEND PROPERTY OBJECT_DEPENDS ${cuda_dir}/gemm.cu)
  add_executable(test_cuda_emu_gemm ${emu_dir}/test_gemm.cc ${emu_dir}/emu_cublaslt.cc ${gemm_wrapper}
    ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/convert_emu.cc ${emu_dir}/emu_device.cc ${cuda_dir}/cast.c)
  set_target_properties(test_cuda_emu_gemm PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  target_include_directories(test_cuda_emu_gemm PRIVATE ${PROJECT_SOURCE_DIR}/runtime/include ${cuda_dir}
    ${PROJECT_SOURCE_DIR}/runtime/cpu ${PROJECT_SOURCE_DIR}/runtime/common)
  target_compile_definitions(test_cuda_emu_gemm PRIVATE WF_CAST_NO_PLAN)
  target_link_libraries(test_cuda_emu_gemm PRIVATE weft_cuda_emu m)
  add_test(NAME cuda_emu_gemm COMMAND test_cuda_emu_gemm)

  add_executable(check_kernels_emu gpu/check_kernels.c)
  target_include_directories(check_kernels_emu PRIVATE ${PROJECT_SOURCE_DIR}/runtime/cpu
                                                       ${PROJECT_SOURCE_DIR}/runtime/common)
  target_link_libraries(check_kernels_emu PRIVATE weftrt_cuda_emu)
  target_compile_definitions(check_kernels_emu PRIVATE CHECK_ACT16_PACKED)  # check_act16.h
  set_target_properties(check_kernels_emu PROPERTIES LINKER_LANGUAGE CXX)
  add_test(NAME cuda_emu_kernels COMMAND bash ${emu_dir}/kernels.sh
           $<TARGET_FILE:check_kernels_cpu> $<TARGET_FILE:check_kernels_emu> ${cuda_dir}
           "${WEFT_EMU_KERNELS};${WEFT_EMU_NOT_EMULATED}")
  set_tests_properties(cuda_emu_kernels PROPERTIES TIMEOUT 600)  # four emulator runs; about 30 s on a quiet 2-core machine (36 s of CPU)
else()
  foreach(t cuda_emu cuda_emu_kernels cuda_emu_ctx e2e_cuda_emu)
    add_test(NAME ${t} COMMAND sh -c "echo 'skipped: no C++ compiler or no CUDA headers (cuda_runtime.h, cublas_v2.h)'; exit 77")
    set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
