// Per-process set-up for tests over vroce: vroce reads VROCE_* once, when first loaded, so a
// test case sets its environment first and then loads the library the way the plugin does
// (NCCL_IBVERBS_LIB -> parse_config -> ibv::Library::open). Refuses to run when vroce is already
// loaded in the process: run one test case per process (ctest does).
#pragma once

#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ibv/library.h"
#include "result_checks.h"
#include "util/config.h"

namespace roce::test {

inline std::optional<std::string> env_lookup(std::string_view name, void*) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

// Sets an environment variable for this process (overwriting).
inline void set_env(const char* name, const std::string& value) {
  REQUIRE(setenv(name, value.c_str(), 1) == 0);
}

// The plugin configuration as the environment now says.
inline Config config_from_env() {
  auto config = parse_config(&env_lookup, nullptr);
  INFO((config ? std::string() : config.error()));
  REQUIRE(config.has_value());
  return *config;
}

// Points NCCL_IBVERBS_LIB at the vroce build, declares the devices, and loads the library.
inline std::shared_ptr<const ibv::Library> load_vroce(const std::string& devices) {
  if (void* already = dlopen(VROCE_LIBRARY_PATH, RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(already);
    FAIL("vroce is already loaded in this process: run each test case on its own (ctest does)");
  }
  set_env("VROCE_DEVICES", devices);
  set_env("NCCL_IBVERBS_LIB", VROCE_LIBRARY_PATH);
  const Config config = config_from_env();
  REQUIRE(config.ibverbs_lib == VROCE_LIBRARY_PATH);
  return value_of(ibv::Library::open(config.ibverbs_lib));
}

}  // namespace roce::test
