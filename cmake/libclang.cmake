# libclang's C API (Debian's libclang-dev, scripts/deps.sh), which reads user
# kernels (compiler/user_kernel_check.c): CLANG_C_INCLUDE and CLANG_C_LIB.
find_path(CLANG_C_INCLUDE clang-c/Index.h
  PATHS /usr/lib/llvm-16/include /usr/lib/llvm-15/include /usr/lib/llvm-14/include REQUIRED)
find_library(CLANG_C_LIB NAMES clang clang-16 clang-15 clang-14
  PATHS /usr/lib/llvm-16/lib /usr/lib/llvm-15/lib /usr/lib/llvm-14/lib REQUIRED)
