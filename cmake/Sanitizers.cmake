# ROCE_SANITIZE applies one sanitizer set to every target of the build tree.
# The CMake presets asan-ubsan and tsan (clang) select it; scripts/test.sh builds both.
if(ROCE_SANITIZE)
  string(REPLACE ";" "," _roce_sanitizers "${ROCE_SANITIZE}")
  message(STATUS "Sanitizers: ${_roce_sanitizers}")
  add_compile_options(-fsanitize=${_roce_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_roce_sanitizers})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang links its sanitizer runtime statically into executables only and leaves a shared
    # library's calls into it undefined, which the plugin's and vroce's --no-undefined refuse.
    # Its shared runtime, the way GCC links libasan/libtsan, serves executables and libraries
    # alike; the runpath finds it in clang's resource folder.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE _roce_sanitizer_runtime_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    COMMAND_ERROR_IS_FATAL ANY)
    add_link_options(-shared-libsan -Wl,-rpath,${_roce_sanitizer_runtime_dir})
    # The code asks GCC's way whether it is sanitized (__SANITIZE_ADDRESS__, __SANITIZE_THREAD__:
    # the NIC-written CTS ring's readers, the tests that keep the plugin mapped for LeakSanitizer);
    # clang 14 answers only through __has_feature, so define them as GCC does (1: the same value
    # a clang that defines them itself gives, so the definition never conflicts).
    if("address" IN_LIST ROCE_SANITIZE)
      add_compile_definitions(__SANITIZE_ADDRESS__=1)
    endif()
    # clang's UBSan also checks each indirect call against the callee's type (GCC has no such
    # check). Calls through dlsym'd pointers here use our own declarations of foreign ABIs, the
    # same layout under other type names: the CUDA driver API (vroce/src/gpu/cuda_api.h) and
    # rdma-core's compat ibv_query_port, called with a full ibv_port_attr as NCCL does. The
    # check would report every such call from an instrumented caller into an instrumented callee.
    if("undefined" IN_LIST ROCE_SANITIZE)
      add_compile_options(-fno-sanitize=function)
    endif()
    if("thread" IN_LIST ROCE_SANITIZE)
      add_compile_definitions(__SANITIZE_THREAD__=1)
    endif()
  endif()
  set(ROCE_SANITIZED ON)
else()
  set(ROCE_SANITIZED OFF)
endif()
