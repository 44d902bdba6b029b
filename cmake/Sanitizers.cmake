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
  endif()
  set(ROCE_SANITIZED ON)
else()
  set(ROCE_SANITIZED OFF)
endif()
