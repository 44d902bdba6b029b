// Process set-up of vroce_platform_tests (runs before Catch2's session). The in-process tests see
// exactly the devices below, whatever the caller's environment holds, on the process's own loopback
// addresses (test_addresses.h). veth_netns_test.py sets VROCE_PLATFORM_KEEP_ENV=1 to
// run the hidden [.netns] cases against the devices it configures.
#include "test_environment.h"

#include <cstdlib>
#include <initializer_list>

#include "test_addresses.h"

void roce_test_environment() {
  if (std::getenv("VROCE_PLATFORM_KEEP_ENV") == nullptr) {
    setenv("VROCE_DEVICES", roce::test::vroce_device_list({"vpt0", "vpt1"}).c_str(), 1);
    for (const char* name :
         {"VROCE_PORT_GBPS", "VROCE_TIME_SCALE", "VROCE_FAULTS", "VROCE_STATS_FILE",
          "VROCE_SYSFS_ROOT", "VROCE_TC_OVERRIDE", "SYSFS_PATH"}) {
      unsetenv(name);
    }
  }
}
