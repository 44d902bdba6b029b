# Link-time optimisation of the two shared libraries' data paths. An isend crosses three of the
# plugin's translation units (abi/data_adapters.cpp -> core/api.cpp -> core/datapath/
# send_comm.cpp) and test() as many; vroce's post and poll cross abi/, core/ and wire/. Each call
# between them costs a prologue, spilled registers and checks the callee repeats. With LTO the
# compiler inlines across them: scripts/bench-callgrind.sh counts 12-13% fewer plugin
# instructions and 25-30% fewer vroce instructions per 8-byte message (docs/benchmarks-log.md,
# "Link-time optimisation of the plugin" and "vroce with link-time optimisation").
#
# roce_enable_lto(<static library> <shared library>): the static library's objects carry both
# GIMPLE and machine code (-ffat-lto-objects), so the unit tests that link it link as before and
# only the shared library's link runs the optimiser. GCC only: clang's LTO needs lld or the gold
# plugin, which Debian's clang does not bring by default. Off in sanitizer builds, whose point is
# instrumenting what the tests run, not speed.
option(ROCE_LTO "Link the plugin and vroce with link-time optimisation (GCC, non-sanitizer builds)"
       ON)

function(roce_enable_lto static_target shared_target)
  if(NOT ROCE_LTO OR ROCE_SANITIZE OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
     OR CMAKE_BUILD_TYPE STREQUAL "Debug")
    return()
  endif()
  # -flto=auto: the link's optimiser runs as many jobs as make or ninja allow (jobserver), else
  # one per core.
  target_compile_options(${static_target} PRIVATE -flto=auto -ffat-lto-objects)
  target_compile_options(${shared_target} PRIVATE -flto=auto)
  target_link_options(${shared_target} PRIVATE -flto=auto)
endfunction()
