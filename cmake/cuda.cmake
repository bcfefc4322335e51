# cuda.cmake: finds what the CUDA backend (runtime/cuda) needs, the CUDA
# compiler and toolkit (cuBLAS) and NCCL, and enables the CUDA language.
# Sets WEFT_HAVE_CUDA.  Without them the CPU build goes on unchanged: a fresh
# machine without CUDA never needs any of this.
option(WEFT_CUDA "build the CUDA runtime (libweftrt_cuda) when the toolkit is found" ON)
set(WEFT_HAVE_CUDA OFF)
if(WEFT_CUDA)
  include(CheckLanguage)
  # nvcc is often not on PATH: look in CUDA_HOME, then the toolkit's usual home
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(WEFT_NVCC nvcc HINTS ENV CUDA_HOME PATH_SUFFIXES bin
                 PATHS /usr/local/cuda/bin)
    if(WEFT_NVCC)
      set(CMAKE_CUDA_COMPILER ${WEFT_NVCC})
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    get_filename_component(WEFT_CUDA_BIN ${CMAKE_CUDA_COMPILER} DIRECTORY)
    # WEFT_NCCL_ROOT (variable or environment): an NCCL outside the toolkit,
    # e.g. a Python wheel's nvidia/nccl, which ships libnccl.so.2 alone
    find_library(WEFT_NCCL NAMES nccl libnccl.so.2
                 HINTS ${WEFT_CUDA_BIN}/../lib ${WEFT_CUDA_BIN}/../lib64 ENV CUDA_HOME
                       ${WEFT_NCCL_ROOT} ENV WEFT_NCCL_ROOT
                 PATH_SUFFIXES lib lib64)
    find_path(WEFT_NCCL_INCLUDE nccl.h HINTS ${WEFT_CUDA_BIN}/../include ENV CUDA_HOME
              ${WEFT_NCCL_ROOT} ENV WEFT_NCCL_ROOT
              PATH_SUFFIXES include)
  endif()
  if(CMAKE_CUDA_COMPILER AND WEFT_NCCL AND WEFT_NCCL_INCLUDE)
    # sm_90 (H100/H200) code plus PTX that newer GPUs compile at load time
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(WEFT_HAVE_CUDA ON)
    message(STATUS "weft: CUDA backend on (${CMAKE_CUDA_COMPILER}, NCCL ${WEFT_NCCL})")
  else()
    message(STATUS "weft: CUDA backend off (nvcc or NCCL not found); the CPU backend builds alone")
  endif()
endif()
