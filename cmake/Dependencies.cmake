# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh).
find_package(Threads REQUIRED)

# spdlog and fmt strictly header-only: the plugin must not depend on libspdlog/libfmt at run time.
# Debian's spdlog::spdlog_header_only still links the compiled libfmt, so we define our own target.
find_path(ROCE_SPDLOG_INCLUDE_DIR spdlog/spdlog.h REQUIRED)
find_path(ROCE_FMT_INCLUDE_DIR fmt/format.h REQUIRED)
# nlohmann/json (header-only, Debian's nlohmann-json3-dev) for the plugin's statistics files.
find_path(ROCE_NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
add_library(roce_json INTERFACE)
target_include_directories(roce_json SYSTEM INTERFACE ${ROCE_NLOHMANN_JSON_INCLUDE_DIR})
# tl::expected (header-only, Debian's libexpected-dev) as the setup path's Result<T>
# (include/roce/result.h); nothing of it is linked, so the packages need no Depends for it.
find_package(tl-expected 1 REQUIRED CONFIG)

add_library(roce_spdlog INTERFACE)
target_include_directories(roce_spdlog SYSTEM INTERFACE ${ROCE_SPDLOG_INCLUDE_DIR} ${ROCE_FMT_INCLUDE_DIR})
target_compile_definitions(roce_spdlog INTERFACE SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY)
target_link_libraries(roce_spdlog INTERFACE Threads::Threads)

# Only the verbs *headers* are needed at build time; the plugin dlopens libibverbs at run time
# and vroce implements the library itself.
find_path(ROCE_VERBS_INCLUDE_DIR infiniband/verbs.h REQUIRED)
add_library(roce_verbs_headers INTERFACE)
target_include_directories(roce_verbs_headers SYSTEM INTERFACE ${ROCE_VERBS_INCLUDE_DIR})

if(ROCE_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
  include(TestSuites)
  include(CatchTests)
endif()

# The CUDA toolkit is optional: tools/gdr-check is built only when it is present.
find_package(CUDAToolkit QUIET)
