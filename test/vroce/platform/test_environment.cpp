// Process set-up of vroce_platform_tests (runs before Catch2's session). The in-process tests see
// exactly the devices below, whatever the caller's environment holds, so they never touch addresses
// outside this suite's block (127.0.2.0/24). veth_netns_test.py sets VROCE_PLATFORM_KEEP_ENV=1 to
// run the hidden [.netns] cases against the devices it configures.
#include "test_environment.h"

#include <cstdlib>
#include <initializer_list>

void roce_test_environment() {
  if (std::getenv("VROCE_PLATFORM_KEEP_ENV") == nullptr) {
    setenv("VROCE_DEVICES", "vpt0=127.0.2.1,vpt1=127.0.2.2", 1);
    for (const char* name :
         {"VROCE_PORT_GBPS", "VROCE_TIME_SCALE", "VROCE_FAULTS", "VROCE_STATS_FILE",
          "VROCE_SYSFS_ROOT", "VROCE_TC_OVERRIDE", "SYSFS_PATH"}) {
      unsetenv(name);
    }
  }
}
