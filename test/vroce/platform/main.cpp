// Entry point of vroce_platform_tests. The in-process tests see exactly the devices below,
// whatever the caller's environment holds, so they never touch addresses outside this suite's
// block (127.0.2.0/24). veth_netns_test.py sets VROCE_PLATFORM_KEEP_ENV=1 to run the hidden
// [.netns] cases against the devices it configures.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char* argv[]) {
  if (std::getenv("VROCE_PLATFORM_KEEP_ENV") == nullptr) {
    setenv("VROCE_DEVICES", "vpt0=127.0.2.1,vpt1=127.0.2.2", 1);
    for (const char* name :
         {"VROCE_PORT_GBPS", "VROCE_TIME_SCALE", "VROCE_FAULTS", "VROCE_STATS_FILE",
          "VROCE_SYSFS_ROOT", "VROCE_TC_OVERRIDE", "SYSFS_PATH"}) {
      unsetenv(name);
    }
  }
  return Catch::Session().run(argc, argv);
}
