# roce_warnings: the warning set every target of ours links against.
# Third-party headers come in as SYSTEM includes, so these flags apply to our code only.
add_library(roce_warnings INTERFACE)
# GCC 12's libstdc++ inlines std::string's copy into `"text" + std::string(...)` and into
# one-character assignments, and at -O3 (a plain Release build) reads it as a memcpy of 2^63
# bytes that may overlap itself (GCC bug 105329, fixed in GCC 13): a false positive on idiomatic
# string building all over the tree. -Wrestrict stays on for every other compiler.
set(roce_gcc12_string_false_positive
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
target_compile_options(roce_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough -Wmissing-declarations
  $<$<CXX_COMPILER_ID:GNU>:-Wmisleading-indentation -Wduplicated-cond -Wduplicated-branches -Wlogical-op>
  # rdma-core's verbs.h macros expand, with the caller's arguments, into what clang's -Wpedantic
  # flags: verbs_get_ctx_op is a GNU statement expression, and ibv_reg_mr ANDs its access flags
  # (enum ibv_access_flags) with IB_UVERBS_ACCESS_OPTIONAL_RANGE (another enum). GCC exempts
  # system macros, and still reports both in our own code, so clang loses nothing by not.
  $<$<CXX_COMPILER_ID:Clang>:-Wno-gnu-statement-expression -Wno-deprecated-enum-enum-conversion>
  ${roce_gcc12_string_false_positive}
  $<$<BOOL:${ROCE_WERROR}>:-Werror>)
# The same at link time: with LTO the optimiser that warns runs again when the .so is linked.
target_link_options(roce_warnings INTERFACE ${roce_gcc12_string_false_positive})
