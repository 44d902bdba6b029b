# Hardening and build-path hygiene of every target of ours. The plugin parses what arrives from
# the network (handshakes, listen handles, vroce's packets), so the shipped binaries carry
# Debian's hardening set (what dpkg-buildflags gives a package), and no absolute path of the build
# machine:
#   -fstack-protector-strong        stack canaries in every function with an array or an address
#                                   taken of a local (__stack_chk_fail in the binary);
#   -D_FORTIFY_SOURCE=2             glibc's checked variants (__memcpy_chk, __read_chk, ...) where
#                                   the compiler knows the buffer size; optimised, unsanitized
#                                   builds only (below);
#   -fcf-protection                 Intel CET: endbr64 landing pads and shadow-stack
#                                   compatibility, marked IBT/SHSTK in .note.gnu.property, where
#                                   the compiler has it (a linked binary keeps the mark only if
#                                   every input has it: not on Debian 12, whose crti.o lacks it);
#   -Wl,-z,relro,-z,now             full RELRO: every relocation resolved at load (BIND_NOW), then
#                                   the GOT made read-only (GNU_RELRO);
#   -pie                            position-independent executables (check_pie_supported);
#   -ffile-prefix-map=<source>/=    __FILE__ (the file of every WARN and INFO line the plugin
#                                   prints) and the debug info name source files relative to the
#                                   source root: plugin/core/api.cpp, not /home/me/src/... To
#                                   see sources in gdb from the build tree's unstripped copy, start
#                                   gdb in the source root (its source path includes $cwd).
# test/package checks each of these on the packaged binaries (deb_check.sh).
include(CheckCCompilerFlag)
include(CheckCXXCompilerFlag)
include(CheckPIESupported)

option(ROCE_HARDEN "Build with the hardening flags (stack protector, _FORTIFY_SOURCE, CET, full RELRO)" ON)

# The build paths, for every build: the binary folder first, the source folder last, as the
# compiler tries the last prefix map first, so a binary folder inside the source tree comes out
# as build/<preset>/... like any other source-relative path.
if(NOT PROJECT_BINARY_DIR STREQUAL PROJECT_SOURCE_DIR)
  add_compile_options(-ffile-prefix-map=${PROJECT_BINARY_DIR}/=)
endif()
add_compile_options(-ffile-prefix-map=${PROJECT_SOURCE_DIR}/=)

# What test/package/deb_check.sh then expects of the packaged binaries.
set(ROCE_HARDENING_CET OFF)
set(ROCE_HARDENING_FORTIFY OFF)
if(NOT ROCE_HARDEN)
  message(STATUS "Hardening: off (ROCE_HARDEN=OFF)")
  return()
endif()

check_pie_supported(LANGUAGES C CXX)
add_compile_options(-fstack-protector-strong)
check_c_compiler_flag(-fcf-protection ROCE_C_HAS_CF_PROTECTION)
check_cxx_compiler_flag(-fcf-protection ROCE_CXX_HAS_CF_PROTECTION)
set(_roce_hardening "stack protector, full RELRO")
if(ROCE_C_HAS_CF_PROTECTION AND ROCE_CXX_HAS_CF_PROTECTION)
  add_compile_options(-fcf-protection)
  set(ROCE_HARDENING_CET ON)
  string(APPEND _roce_hardening ", CET (-fcf-protection)")
endif()
add_link_options(LINKER:-z,relro,-z,now)

# _FORTIFY_SOURCE only where the code is optimised (glibc warns that it does nothing at -O0,
# which ROCE_WERROR makes an error) and not sanitized: the sanitizers intercept the plain libc
# functions, not glibc's _chk variants, and a tree with the libFuzzer targets (presets clang and
# asan-ubsan) builds them with ASan. -U first: a compiler that defines it already (Ubuntu's GCC
# defines _FORTIFY_SOURCE=3) would otherwise warn about the redefinition.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _roce_build_type)
set(_roce_opt_flags "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_roce_build_type}}")
if(_roce_opt_flags MATCHES "(^| )-O([1-3sz]|g|fast)?( |$)" AND NOT ROCE_SANITIZE AND NOT ROCE_FUZZ)
  add_compile_options(-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2)
  set(ROCE_HARDENING_FORTIFY ON)
  string(APPEND _roce_hardening ", _FORTIFY_SOURCE=2")
else()
  string(APPEND _roce_hardening " (no _FORTIFY_SOURCE: unoptimised, sanitized or fuzz build)")
endif()
message(STATUS "Hardening: ${_roce_hardening}")
