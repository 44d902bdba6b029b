# roce_warnings: the warning set every target of ours links against.
# Third-party headers come in as SYSTEM includes, so these flags apply to our code only.
add_library(roce_warnings INTERFACE)
target_compile_options(roce_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough -Wmissing-declarations
  $<$<CXX_COMPILER_ID:GNU>:-Wmisleading-indentation -Wduplicated-cond -Wduplicated-branches -Wlogical-op>
  $<$<BOOL:${ROCE_WERROR}>:-Werror>)
